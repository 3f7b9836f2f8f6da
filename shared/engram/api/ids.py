"""Ids in paths: anything that is not a valid id is simply not found, exactly like an unknown id."""

from __future__ import annotations

from uuid import UUID

from engram.errors import NotFound


def memory_id(raw: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"memory {raw[:64]} not found") from None


def path_id(raw: str, what: str) -> UUID:
    """`what` is the kind of thing, for the message: "entity", "relation", ..."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"{what} {raw[:64]} not found") from None
