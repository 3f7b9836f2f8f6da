"""Export and import of a tenant as JSON Lines, without loss and idempotent by id."""
