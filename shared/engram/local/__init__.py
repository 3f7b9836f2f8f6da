"""The local stack: the same handlers behind a small HTTP front, on an embedded PostgreSQL."""
