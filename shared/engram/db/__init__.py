"""Database access: connections, tenant-scoped transactions (database.py), who a request is made for
(party.py, importable without the driver) and the migration runner."""
