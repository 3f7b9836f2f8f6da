"""Change events to an EventBridge bus (AWS): the relay takes a tenant's events off the outbox and puts
them on the bus in the same transaction, so they leave the outbox only once EventBridge has them. An
entry EventBridge refuses fails the batch, which stays for the next run: delivery is at least once (a
consumer drops an event id it has seen).

Each event: source "engram", detail-type the event type, detail the event (engram.changes.models.ChangeEvent).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from engram.changes import repo
from engram.changes.delivery import envelope
from engram.db.database import Database
from engram.errors import TransientError

SOURCE = "engram"
EVENTS_PER_PASS = 500
ENTRIES_PER_CALL = 10  # PutEvents' limit


class EventBridgePublisher:
    def __init__(self, db: Database, client: Any, bus_name: str) -> None:
        self.db = db
        self.client = client
        self.bus_name = bus_name

    def run_once(self) -> int:
        with self.db.transaction() as cur:
            tenants = repo.tenants_with_events(cur, 100)
        return sum(self.publish(tenant_id) for tenant_id in tenants)

    def publish(self, tenant_id: UUID) -> int:
        with self.db.tenant(tenant_id) as cur:
            events = repo.take_events(cur, tenant_id, EVENTS_PER_PASS)
            entries = [
                {
                    "Source": SOURCE,
                    "DetailType": event["event_type"],
                    "Detail": envelope(tenant_id, event),
                    "EventBusName": self.bus_name,
                    "Time": event["occurred_at"],
                }
                for event in events
            ]
            for start in range(0, len(entries), ENTRIES_PER_CALL):
                answer = self.client.put_events(Entries=entries[start : start + ENTRIES_PER_CALL])
                if answer.get("FailedEntryCount"):
                    failed = [e for e in answer.get("Entries", []) if e.get("ErrorCode")]
                    reason = failed[0].get("ErrorMessage") if failed else "unknown"
                    # Raising rolls the take back: the events stay in the outbox for the next run.
                    raise TransientError(f"EventBridge refused {len(failed)} event(s): {reason}")
        return len(entries)
