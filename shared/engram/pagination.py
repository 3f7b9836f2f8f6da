"""Opaque page cursors: the JSON of the last row's sort key, base64url without padding. Keyset pages are
newest first by (created_at, id); other orders keep their own key (a name and a type, a depth and an
id)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from engram.errors import InvalidInput


def encode(*values: Any) -> str:
    raw = json.dumps([v.isoformat() if isinstance(v, datetime) else v for v in values]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str | None, size: int, field: str = "cursor") -> list[Any] | None:
    """The cursor's `size` values, None without one; InvalidInput (naming `field`) for an empty cursor or
    anything this API did not return."""
    if cursor is None:
        return None
    if not cursor:
        raise InvalidInput(f"{field} is empty: leave it out for the first page", details={"field": field})
    try:
        values = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, binascii.Error):
        values = None
    if not isinstance(values, list) or len(values) != size:
        raise not_ours(field)
    return values


def encode_cursor(created_at: datetime, row_id: UUID | str) -> str:
    return encode(created_at, str(row_id))


def decode_cursor(cursor: str | None, *, field: str = "cursor") -> tuple[datetime, UUID] | None:
    values = decode(cursor, 2, field)
    if values is None:
        return None
    created_at, row_id = values
    try:
        return datetime.fromisoformat(str(created_at)), UUID(str(row_id))
    except ValueError:
        raise not_ours(field) from None


def decode_key_cursor(cursor: str | None, *, field: str = "cursor") -> tuple[datetime, str] | None:
    """For rows keyed by a caller's text id (plans, task contexts)."""
    values = decode(cursor, 2, field)
    if values is None:
        return None
    created_at, row_id = values
    if not isinstance(row_id, str):
        raise not_ours(field)
    try:
        return datetime.fromisoformat(str(created_at)), row_id
    except ValueError:
        raise not_ours(field) from None


def not_ours(field: str) -> InvalidInput:
    return InvalidInput(f"{field} is not one this API returned", details={"field": field})
