"""Custom extraction instructions of a tenant and of its containers (see migrations/0008)."""
