"""Request and response models of the working-memory API."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, JsonValue, StringConstraints

from engram.fields import Integer, JsonDocument
from engram.lazymodel import LazyModel
from engram.memories.models import Identifier

SCOPE_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
KEY_PATTERN = r"^[A-Za-z0-9_.:-]{1,256}$"
MAX_VALUE_BYTES = 256 * 1024
MAX_TTL_SECONDS = 366 * 24 * 3600

ScopeName = Annotated[str, StringConstraints(pattern=SCOPE_PATTERN)]
KeyName = Annotated[str, StringConstraints(pattern=KEY_PATTERN)]


def _value_fits(value: JsonValue) -> JsonValue:
    encoded = json.dumps(value, ensure_ascii=False)
    if len(encoded.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValueError(f"is larger than {MAX_VALUE_BYTES} bytes of JSON")
    return value


class WorkingPut(LazyModel):
    model_config = ConfigDict(extra="forbid")

    value: Annotated[JsonDocument, AfterValidator(_value_fits)] = Field(
        description="any JSON value, null included"
    )
    ttl_seconds: Integer | None = Field(
        default=None,
        ge=1,
        le=MAX_TTL_SECONDS,
        description="the key expires this long after the write. Left out, an existing key keeps its "
        "expiry; null: it never expires",
    )
    user_id: Identifier | None = Field(
        default=None,
        description="the user this state belongs to: erased with them (DELETE /v1/users/{user_id}). A write "
        "for a user never takes a key of another user (409 on user_id); one of no user becomes theirs. Left "
        "out, an existing key keeps its user; null: none",
    )


class WorkingItem(LazyModel):
    scope: str
    key: str
    value: Any
    version: int = Field(description="send it back in If-Match to write only if nobody wrote in between")
    expires_at: datetime | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime


class WorkingScope(LazyModel):
    scope: str
    items: list[WorkingItem]
    next_after: str | None = Field(description="pass as ?after= for the next page; null on the last page")


class ScopeCleared(LazyModel):
    scope: str
    deleted: int
