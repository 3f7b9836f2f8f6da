"""Database access: connections, tenant-scoped transactions and the migration runner."""

from engram.db.database import EVERYONE, NOBODY, Database, Party, TenantTx

__all__ = ["EVERYONE", "NOBODY", "Database", "Party", "TenantTx"]
