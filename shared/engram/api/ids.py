"""Ids in paths: anything that is not a valid id is simply not found, exactly like an unknown id."""

from __future__ import annotations

from uuid import UUID

from engram.errors import NotFound


def memory_id(raw: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"memory {raw[:64]} not found") from None


def id_of(kind: str, raw: str) -> UUID:
    """The same rule for any id in a path: `kind` names it in the 404 ("session", "procedure")."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"{kind} {raw[:64]} not found") from None
