"""Who a request acts for: what the API handlers need of tenants, without the database driver."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID


@dataclass(frozen=True)
class Principal:
    """Who a request acts for. Built only from a verified API key, never from a request body."""

    tenant_id: UUID
    tenant_name: str
    key_id: UUID
