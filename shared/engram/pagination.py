"""Opaque keyset cursors: (created_at, id) of the last row of a page, newest first."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from engram.errors import InvalidInput


def encode_cursor(created_at: datetime, row_id: UUID | str) -> str:
    raw = json.dumps([created_at.isoformat(), str(row_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *, field: str = "cursor") -> tuple[datetime, UUID]:
    created_at, row_id = _decode(cursor, field)
    try:
        return created_at, UUID(row_id)
    except ValueError as exc:
        raise _not_ours(field) from exc


def decode_key_cursor(cursor: str, *, field: str = "cursor") -> tuple[datetime, str]:
    """For rows keyed by a caller's text id (plans, task contexts)."""
    return _decode(cursor, field)


def _decode(cursor: str, field: str) -> tuple[datetime, Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(row_id, str):
            raise TypeError("the id of a cursor is a string")
        return datetime.fromisoformat(created_at), row_id
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise _not_ours(field) from exc


def _not_ours(field: str) -> InvalidInput:
    return InvalidInput(f"{field} is not one this API returned", details={"field": field})
