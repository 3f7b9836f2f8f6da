"""Delivering change events to webhooks (locally; in AWS they go to EventBridge: engram.changes.eventbridge).

Two passes, each inside one tenant's transactions:
1. fan out: the outbox's events become one delivery per subscribed webhook (the exact body that is signed
   and sent), and leave the outbox; an event nobody subscribed to just leaves it.
2. deliver: due deliveries are leased, POSTed outside any transaction, and their outcome recorded. A
   connection error, a timeout, a 429 or a 5xx is retried at once with exponential backoff and jitter
   (tenacity); a delivery still failing is due again later (RETRY_DELAYS), then given up (`failed`),
   and stays visible in GET /v1/webhooks/{id} with its last error. While a receiver fails, its other
   deliveries wait too, so events keep their order and a dead receiver costs one try per pass.

Each delivery is signed: x-engram-signature: sha256=<hex HMAC-SHA256 of the body, keyed by the secret>.
Delivery is at least once: a receiver drops an event id it has seen.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from engram.changes import repo
from engram.changes.models import SIGNATURE_HEADER
from engram.db.database import Database
from engram.fields import utc_text

EVENTS_PER_PASS = 500
DELIVERIES_PER_PASS = 100
LEASE_SECONDS = 120.0
# After the first try (and its immediate retries), tried again after these delays, then given up.
RETRY_DELAYS = tuple(timedelta(seconds=s) for s in (30, 60, 120, 300, 900, 1800, 3600))
IMMEDIATE_TRIES = 3
USER_AGENT = "engram-webhooks/1"


def envelope(tenant_id: UUID, event: dict[str, Any]) -> str:
    """The body a receiver gets: compact JSON, the same bytes that are signed."""
    body = {
        "id": str(event["event_id"]),
        "type": event["event_type"],
        "tenant_id": str(tenant_id),
        "time": utc_text(event["occurred_at"]),
        "data": event["subject"],
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True)


def signature(secret: str, body: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()


class _Transient(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"the receiver answered {status}")
        self.status = status


class WebhookDelivery:
    def __init__(
        self,
        db: Database,
        client: httpx.Client,
        *,
        retry_delays: tuple[timedelta, ...] = RETRY_DELAYS,
        immediate_wait: float = 0.5,
    ) -> None:
        self.db = db
        self.client = client
        self.retry_delays = retry_delays
        self.immediate_wait = immediate_wait

    def run_once(self) -> int:
        """One pass over every tenant with work; returns the deliveries attempted."""
        with self.db.transaction() as cur:
            fan_out = repo.tenants_with_events(cur, 100)
        for tenant_id in fan_out:
            self.fan_out(tenant_id)
        with self.db.transaction() as cur:
            due = repo.tenants_with_due_deliveries(cur, 100)
        return sum(self.deliver_due(tenant_id) for tenant_id in due)

    def fan_out(self, tenant_id: UUID) -> int:
        with self.db.tenant(tenant_id) as cur:
            events = repo.take_events(cur, tenant_id, EVENTS_PER_PASS)
            hooks = repo.subscriptions(cur, tenant_id)
            deliveries = [
                (hook["id"], event["event_id"], event["event_type"], envelope(tenant_id, event))
                for event in events
                for hook in hooks
                if event["event_type"] in hook["events"]
            ]
            repo.add_deliveries(cur, tenant_id, deliveries)
            repo.prune(cur, tenant_id)
        return len(deliveries)

    def deliver_due(self, tenant_id: UUID) -> int:
        with self.db.tenant(tenant_id) as cur:
            due = repo.claim_due(cur, tenant_id, DELIVERIES_PER_PASS, LEASE_SECONDS)
        failing: dict[UUID, datetime] = {}  # webhook -> when its deliveries are due again
        for delivery in sorted(due, key=lambda d: d["id"]):
            if delivery["webhook_id"] in failing:
                with self.db.tenant(tenant_id) as cur:  # untried: due with the one that failed
                    repo.release(cur, tenant_id, delivery["id"], failing[delivery["webhook_id"]])
                continue
            status, error = self._send(delivery)
            with self.db.tenant(tenant_id) as cur:
                if error is None:
                    repo.record_delivered(cur, tenant_id, delivery["id"], status or 200)
                    continue
                retry_at = self._retry_at(delivery["attempts"] + 1)
                repo.record_failure(
                    cur, tenant_id, delivery["id"], status=status, error=error, retry_at=retry_at
                )
                failing[delivery["webhook_id"]] = retry_at or datetime.now(UTC) + self.retry_delays[0]
                repo.postpone(cur, tenant_id, delivery["webhook_id"], failing[delivery["webhook_id"]])
        return len(due)

    def _retry_at(self, attempts: int) -> datetime | None:
        if attempts > len(self.retry_delays):
            return None
        return datetime.now(UTC) + self.retry_delays[attempts - 1]

    def _send(self, delivery: dict[str, Any]) -> tuple[int | None, str | None]:
        """(status, None) when delivered; (status or None, why) when not."""
        body: str = delivery["body"]
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            SIGNATURE_HEADER: signature(delivery["secret"], body),
            "x-engram-event": delivery["event_type"],
            "x-engram-event-id": str(delivery["event_id"]),
        }
        retrying = Retrying(
            stop=stop_after_attempt(IMMEDIATE_TRIES),
            wait=wait_random_exponential(multiplier=self.immediate_wait, max=4 * self.immediate_wait),
            retry=retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._post(delivery["url"], body, headers), None
        except _Transient as exc:
            return exc.status, str(exc)
        except _Refused as exc:
            return exc.status, str(exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, url: str, body: str, headers: dict[str, str]) -> int:
        try:
            response = self.client.post(url, content=body.encode(), headers=headers)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out: {exc}") from exc
        except httpx.HTTPError as exc:
            raise _Transient(f"could not connect: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Transient(f"the receiver answered {response.status_code}", response.status_code)
        if not 200 <= response.status_code < 300:
            raise _Refused(response.status_code)
        return response.status_code
