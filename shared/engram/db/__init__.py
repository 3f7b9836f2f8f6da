"""Database access: connections, tenant-scoped transactions and the migration runner."""

from engram.db.database import Database, TenantTx

__all__ = ["Database", "TenantTx"]
