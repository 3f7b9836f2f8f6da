"""Opaque keyset cursors: (created_at, id) of the last row of a page, newest first."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from uuid import UUID

from engram.errors import InvalidInput


def encode_cursor(created_at: datetime, row_id: UUID) -> str:
    raw = json.dumps([created_at.isoformat(), str(row_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *, field: str = "cursor") -> tuple[datetime, UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(created_at), UUID(row_id)
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{field} is not one this API returned", details={"field": field}) from exc
