"""Page cursors: tied to the listing they page, stable for the same query, and garbage is still garbage."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest

from engram import pagination
from engram.errors import InvalidInput
from engram.memories.models import SearchFilters

WHEN = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def test_a_cursor_decodes_to_its_key_in_its_own_listing() -> None:
    # Given a cursor of one listing
    row_id = uuid4()
    pages = pagination.listing("memories", container="a", filters=SearchFilters(tags=["x"]))
    cursor = pagination.encode_cursor(pages, WHEN, row_id)

    # When the same listing, built again from equal values, reads it
    again = pagination.listing("memories", filters=SearchFilters(tags=["x"]), container="a")

    # Then it is the key it was made from
    assert pagination.decode_cursor(cursor, again) == (WHEN, row_id)


def test_the_same_instant_in_another_offset_is_the_same_listing() -> None:
    paris = WHEN.astimezone(timezone(timedelta(hours=1)))

    assert pagination.listing("graph", as_of=WHEN) == pagination.listing("graph", as_of=paris)


@pytest.mark.parametrize(
    "other",
    [
        pagination.listing("documents", container="a"),
        pagination.listing("memories", container="b"),
        pagination.listing("memories", container="a", user_id="u1"),
    ],
)
def test_another_listing_refuses_the_cursor_naming_the_field(other: pagination.Listing) -> None:
    # Given a cursor of the memories in container a
    cursor = pagination.encode_cursor(pagination.listing("memories", container="a"), WHEN, uuid4())

    # When another listing (another name, or other filters) reads it
    with pytest.raises(InvalidInput) as refused:
        pagination.decode_cursor(cursor, other, field="observations_cursor")

    # Then it is refused, naming the field, as another listing's
    assert refused.value.details == {"field": "observations_cursor"}
    assert "observations_cursor belongs to another listing" in refused.value.message


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        base64.urlsafe_b64encode(b"[]").decode(),
        # a key without its listing's fingerprint, as cursors were written before they carried one
        base64.urlsafe_b64encode(json.dumps([WHEN.isoformat(), str(uuid4())]).encode()).decode(),
    ],
)
def test_anything_else_is_not_one_this_api_returned(cursor: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        pagination.decode_cursor(cursor, pagination.listing("memories"))

    assert refused.value.message == "cursor is not one this API returned"
