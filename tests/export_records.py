"""Records of an engram export, as tests write a file by hand: one home for their fields, so that a change
to the format is made once. Each builder takes the fields a test cares about; the rest are the defaults of
a plain current fact."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

AT = "2026-01-01T00:00:00Z"


def header(*, version: int = 2, tenant: str = "seed", container: str | None = None) -> dict[str, Any]:
    return {
        "record": "header",
        "format": "engram-export",
        "version": version,
        "tenant": tenant,
        "container": container,
        "exported_at": AT,
    }


def container(name: str, *, parent: str | None = None, description: str = "") -> dict[str, Any]:
    return {
        "record": "container",
        "name": name,
        "parent": parent,
        "description": description,
        "created_at": AT,
    }


def memory(
    content: str = "x", *, container: str = "default", id: str | None = None, **fields: Any
) -> dict[str, Any]:
    """One exported memory (a new random id unless given); `fields` replace the defaults."""
    record: dict[str, Any] = {
        "record": "memory",
        "id": id or str(uuid.uuid4()),
        "container": container,
        "content": content,
        "memory_type": "fact",
        "tags": [],
        "metadata": {},
        "agent_id": None,
        "conversation_id": None,
        "user_id": None,
        "visibility": "tenant",
        "confidence": 1.0,
        "is_latest": True,
        "valid_from": AT,
        "valid_to": None,
        "expires_at": None,
        "embedding": None,
        "embedding_model": None,
        "created_at": AT,
        "updated_at": AT,
    }
    unknown = set(fields) - set(record)
    if unknown:
        raise TypeError(f"not a field of a memory record: {sorted(unknown)}")
    return {**record, **fields}


def memory_response(content: str = "x", **fields: Any) -> dict[str, Any]:
    """The same memory as the API answers it (GET /v1/memories/{id}): no record kind, no vector."""
    answered = {k: v for k, v in memory(content, **fields).items() if k not in ("record", "embedding")}
    return {**answered, "reverted_at": None}


def jsonl(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def entity(name: str, *, id: str | None = None, entity_type: str = "person", **fields: Any) -> dict[str, Any]:
    """One exported entity (a new random id unless given), as the current format writes it; `fields`
    replace the defaults. Its key is `name` in lowercase: give names that normalise so."""
    record: dict[str, Any] = {
        "record": "entity",
        "id": id or str(uuid.uuid4()),
        "name": name,
        "normalized_name": name.lower(),
        "entity_type": entity_type,
        "aliases": [],
        "curated": True,
        "created_at": AT,
        "updated_at": AT,
    }
    unknown = set(fields) - set(record)
    if unknown:
        raise TypeError(f"not a field of an entity record: {sorted(unknown)}")
    return {**record, **fields}
