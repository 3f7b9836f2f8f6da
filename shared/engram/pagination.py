"""Opaque page cursors: base64url without padding of the JSON of the listing's fingerprint and the last
row's sort key. Keyset pages are newest first by (created_at, id); other orders keep their own key (a name
and a type, a depth and an id).

A cursor pages only the listing it came from. The fingerprint covers the listing's name (its route and
kind of row) and whatever fixes its sequence (filters, order, whose rows), never the page size, which a
caller may change between pages: another listing's cursor is refused, not read as a place in this one."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from engram.errors import InvalidInput

# The longest cursor this API makes: an entity's name (200 characters, 3 bytes each in UTF-8) with its
# type and the fingerprint, in base64, stays well under it.
MAX_CURSOR_CHARS = 2048


@dataclass(frozen=True)
class Listing:
    """What a cursor pages, as `listing(...)` fingerprints it."""

    fingerprint: str


def listing(name: str, /, **sequence: Any) -> Listing:
    """The listing `name` with the values that fix its sequence: equal values, equal fingerprint (keys in
    any order; a timestamp in any offset; a model as its fields)."""
    raw = json.dumps([name, sequence], sort_keys=True, separators=(",", ":"), default=_plain)
    return Listing(_b64(hashlib.sha256(raw.encode()).digest()[:9]))


def encode(listing: Listing, *values: Any) -> str:
    key = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    return _b64(json.dumps([listing.fingerprint, *key], separators=(",", ":"), ensure_ascii=False).encode())


def decode(cursor: str | None, listing: Listing, size: int, field: str = "cursor") -> list[Any] | None:
    """The cursor's `size` values, None without one; InvalidInput (naming `field`) for an empty cursor,
    another listing's, or anything this API did not return."""
    if cursor is None:
        return None
    if not cursor:
        raise InvalidInput(f"{field} is empty: leave it out for the first page", details={"field": field})
    try:
        values = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, binascii.Error):
        values = None
    if not isinstance(values, list) or len(values) != size + 1 or not isinstance(values[0], str):
        raise not_ours(field)
    if values[0] != listing.fingerprint:
        raise InvalidInput(
            f"{field} belongs to another listing (other route or filters); start again without a cursor",
            details={"field": field},
        )
    return values[1:]


def encode_cursor(listing: Listing, created_at: datetime, row_id: UUID | str) -> str:
    return encode(listing, created_at, str(row_id))


def decode_cursor(
    cursor: str | None, listing: Listing, *, field: str = "cursor"
) -> tuple[datetime, UUID] | None:
    values = decode(cursor, listing, 2, field)
    if values is None:
        return None
    created_at, row_id = values
    try:
        return datetime.fromisoformat(str(created_at)), UUID(str(row_id))
    except ValueError:
        raise not_ours(field) from None


def decode_key_cursor(
    cursor: str | None, listing: Listing, *, field: str = "cursor"
) -> tuple[datetime, str] | None:
    """For rows keyed by a caller's text id (plans, task contexts)."""
    values = decode(cursor, listing, 2, field)
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


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _plain(value: Any) -> Any:
    """What json cannot write itself, always spelled the same way."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a listing's value")
