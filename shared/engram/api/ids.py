"""Ids in paths: anything that is not a valid id is simply not found, exactly like an unknown id."""

from __future__ import annotations

from uuid import UUID

from engram.errors import NotFound


def path_id(raw: str, what: str) -> UUID:
    """`what` is the kind of thing, for the message: "memory", "entity", "relation", ..."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"{what} {raw[:64]} not found") from None


def memory_id(raw: str) -> UUID:
    return path_id(raw, "memory")


def document_id(raw: str) -> UUID:
    return path_id(raw, "document")


def id_of(kind: str, raw: str) -> UUID:
    """The same rule for any id in a path: `kind` names it in the 404 ("session", "procedure")."""
    return path_id(raw, kind)
