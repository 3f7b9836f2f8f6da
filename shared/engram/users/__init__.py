"""A user's data in a tenant, as one thing: erasure (DELETE /v1/users/{user_id})."""
