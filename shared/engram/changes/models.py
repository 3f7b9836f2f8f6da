"""Change events and webhooks: what the API takes and answers, and the event a receiver gets."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, StringConstraints, field_validator

from engram.fields import NoNul, Text
from engram.lazymodel import LazyModel

EventType = Literal[
    "memory.created",
    "memory.updated",
    "memory.superseded",
    "memory.deleted",
    "document.done",
    "document.failed",
    "session.summarized",
]
EVENT_TYPES: tuple[str, ...] = EventType.__args__  # type: ignore[attr-defined]
SIGNATURE_HEADER = "x-engram-signature"

WebhookUrl = Annotated[
    str, StringConstraints(min_length=8, max_length=2048, pattern=r"^https?://[^\s\x00]+$"), *NoNul
]


class WebhookCreate(LazyModel):
    model_config = ConfigDict(extra="forbid")

    url: WebhookUrl = Field(description="where each event is POSTed (http or https)")
    events: list[EventType] = Field(
        min_length=1, max_length=len(EVENT_TYPES), description="the event types to receive"
    )
    description: Annotated[Text, Field(max_length=500)] = ""

    @field_validator("events")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("name each event type once")
        return value


class Webhook(LazyModel):
    id: UUID
    url: str
    events: list[EventType]
    description: str
    created_at: datetime


class WebhookCreated(Webhook):
    secret: str = Field(
        description="signs every delivery: x-engram-signature: sha256=<hex HMAC-SHA256 of the body with "
        "this secret>. Shown once: store it now"
    )


class DeliveryCounts(LazyModel):
    delivered: int
    pending: int = Field(description="waiting for their first try, or for a retry")
    failed: int = Field(description="given up after every retry (kept 7 days)")


class DeliveryAttempt(LazyModel):
    event_id: UUID
    event_type: EventType
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_status: int | None = Field(description="the receiver's HTTP status, null when it was not reached")
    last_error: str | None
    next_attempt_at: datetime | None = Field(description="pending: when it is tried again")
    created_at: datetime


class WebhookDetail(Webhook):
    deliveries: DeliveryCounts
    recent_failures: list[DeliveryAttempt] = Field(
        description="the latest deliveries whose last try failed (pending retries and given up), newest first"
    )


class WebhookList(LazyModel):
    webhooks: list[Webhook]


class ChangeEvent(LazyModel):
    """What a receiver gets (and the `detail` of the EventBridge event in AWS): ids and times, no content."""

    id: UUID = Field(description="the event's id: a receiver seeing it twice (a retry) can drop it")
    type: EventType
    tenant_id: UUID
    time: datetime
    data: dict[str, Any] = Field(
        description='the ids: {"memory_id"}, {"memory_id", "superseded_by"}, {"document_id"}, '
        '{"session_id", "through_seq"}'
    )
