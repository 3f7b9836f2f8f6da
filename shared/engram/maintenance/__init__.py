"""Maintenance across tenants: removing expired rows and old superseded versions."""
