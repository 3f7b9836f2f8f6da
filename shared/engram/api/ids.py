"""Ids in paths: anything that is not a valid id is simply not found, exactly like an unknown id."""

from __future__ import annotations

from uuid import UUID

from engram.errors import NotFound


def path_id(raw: str, kind: str) -> UUID:
    """`kind` names the thing in the 404: "memory", "entity", "session", ..."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"{kind} {raw[:64]} not found") from None
