"""Ids on import: kept as they are, or (new_ids) replaced, each by a UUID derived from the target tenant
and the old id, so that every reference to a row follows it, a file imported twice maps to the same new
ids (the second import changes nothing), and a file imported in parts stays consistent across them.

References inside JSON are followed where Engram writes them: `document_id`, `chunk_id`, `session_id`
and `message_id` in a memory's or relationship's metadata (a memory's provenance), and a memory's
`conversation_id` when it names a session of the tenant."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

# Fixed forever: changing it would give a file imported again with new_ids other ids than the first time.
NAMESPACE = UUID("5d8e0c4e-2f0a-5b7e-9a61-6b1f0e1c9a42")
METADATA_REFERENCES = ("document_id", "chunk_id", "session_id", "message_id")

# record kind -> its fields that hold ids (its own, and the rows it points at)
ID_FIELDS: dict[str, tuple[str, ...]] = {
    "document": ("id",),
    "document_file": ("document_id",),
    "chunk": ("id", "document_id"),
    "session": ("id",),
    "message": ("id", "session_id"),
    "summary": ("session_id",),
    "memory": ("id",),
    "memory_source": ("memory_id", "document_id", "chunk_id"),
    "relationship": ("id", "source_id", "target_id"),
    "entity": ("id",),
    "entity_key": ("entity_id",),
    "mention": ("entity_id", "memory_id"),
    "relation": ("id", "source_entity", "target_entity", "source_memory_id"),
    "procedure": ("id",),
}
METADATA_OF = frozenset({"memory", "relationship"})


class IdMap:
    def __init__(self, tenant_id: UUID, new_ids: bool) -> None:
        self.namespace = uuid5(NAMESPACE, str(tenant_id)) if new_ids else None
        # Rows that joined one already there (an entity of the same name and type): old id -> its id.
        self.merged: dict[UUID, UUID] = {}

    def __call__(self, old: UUID) -> UUID:
        if old in self.merged:
            return self.merged[old]
        return old if self.namespace is None else uuid5(self.namespace, str(old))

    @property
    def renews(self) -> bool:
        return self.namespace is not None

    def row(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """The record's fields with its ids (and its metadata's references) mapped."""
        out = dict(fields)
        for name in ID_FIELDS.get(kind, ()):
            if out.get(name) is not None:
                out[name] = self(out[name])
        if self.renews and kind in METADATA_OF:
            out["metadata"] = self.metadata(out["metadata"])
        return out

    def metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        out = dict(metadata)
        for key in METADATA_REFERENCES:
            old = as_uuid(out.get(key))
            if old is not None:
                out[key] = str(self(old))
        return out


def as_uuid(value: Any) -> UUID | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = UUID(value)
    except ValueError:
        return None
    return parsed if str(parsed) == value else None  # only ids Engram wrote, in their canonical form
