"""Tenants and their API keys."""
