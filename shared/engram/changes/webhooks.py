"""Webhooks: a tenant's subscriptions to its change events, with the secret that signs each delivery, and
what became of the deliveries. No SQL here."""

from __future__ import annotations

import secrets
from uuid import UUID

from engram.changes import repo
from engram.changes.models import (
    DeliveryAttempt,
    DeliveryCounts,
    Webhook,
    WebhookCreate,
    WebhookCreated,
    WebhookDetail,
    WebhookList,
)
from engram.db.database import Database
from engram.errors import Conflict, NotFound, UnsupportedHere

MAX_WEBHOOKS_PER_TENANT = 20


class WebhookService:
    def __init__(self, db: Database, *, event_bus: str | None = None) -> None:
        self.db = db
        # In AWS change events go to this EventBridge bus (functions there cannot reach the internet).
        self.event_bus = event_bus

    def create(self, tenant_id: UUID, request: WebhookCreate) -> WebhookCreated:
        if self.event_bus:
            raise UnsupportedHere(
                f"this deployment sends change events to the EventBridge bus {self.event_bus}: add a rule "
                "there (an API destination delivers them to a URL, signed and retried by EventBridge)"
            )
        secret = "whsec_" + secrets.token_urlsafe(32)
        with self.db.tenant(tenant_id) as cur:
            if len(repo.list_webhooks(cur, tenant_id)) >= MAX_WEBHOOKS_PER_TENANT:
                raise Conflict(f"a tenant has at most {MAX_WEBHOOKS_PER_TENANT} webhooks: delete one first")
            row = repo.insert_webhook(
                cur, tenant_id, request.url, request.events, request.description, secret
            )
        return WebhookCreated(**row, secret=secret)

    def list(self, tenant_id: UUID) -> WebhookList:
        with self.db.tenant(tenant_id) as cur:
            rows = repo.list_webhooks(cur, tenant_id)
        return WebhookList(webhooks=[Webhook(**row) for row in rows])

    def get(self, tenant_id: UUID, webhook_id: UUID) -> WebhookDetail:
        with self.db.tenant(tenant_id) as cur:
            row = repo.get_webhook(cur, tenant_id, webhook_id)
            if row is None:
                raise _not_found(webhook_id)
            counts = repo.delivery_counts(cur, tenant_id, webhook_id)
            failures = repo.recent_failures(cur, tenant_id, webhook_id)
        return WebhookDetail(
            **row,
            deliveries=DeliveryCounts(**counts),
            recent_failures=[DeliveryAttempt(**f) for f in failures],
        )

    def delete(self, tenant_id: UUID, webhook_id: UUID) -> None:
        with self.db.tenant(tenant_id) as cur:
            if not repo.delete_webhook(cur, tenant_id, webhook_id):
                raise _not_found(webhook_id)


def _not_found(webhook_id: UUID) -> NotFound:
    return NotFound(f"webhook {webhook_id} not found")
