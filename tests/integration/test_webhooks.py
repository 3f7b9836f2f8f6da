"""Change events and webhooks: one signed event per committed change, delivered by the relay to a receiver
on loopback; none for a write that failed; retries with backoff, and failures visible on the webhook."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from engram import deps
from engram.changes import repo
from engram.changes.delivery import WebhookDelivery
from engram.db.database import EVERYONE
from engram.local.stack import LocalDatabase
from engram.memories.new_memory import NewMemory
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid
from tests.integration.documents_helpers import ingest


class Receiver:
    """A webhook receiver on loopback: records each POST, answers the statuses it is told to."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []  # answered in turn; 204 once they run out
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def delivery(local_db: LocalDatabase) -> Iterator[WebhookDelivery]:
    with httpx.Client(timeout=5) as client:
        yield WebhookDelivery(
            local_db.app, client, retry_delays=(timedelta(0), timedelta(0)), immediate_wait=0.01
        )


def _relay(delivery: WebhookDelivery, tenant: IssuedKey) -> None:
    """One relay pass for this test's tenant only (other tests' events are theirs)."""
    delivery.fan_out(tenant.tenant_id)
    delivery.deliver_due(tenant.tenant_id)


def _subscribe(api: Api, receiver: Receiver, events: list[str]) -> dict[str, Any]:
    created = api.post("/v1/webhooks", {"url": receiver.url, "events": events})
    assert created.status == 201, created.json
    return created.json


ALL = [
    "memory.created",
    "memory.updated",
    "memory.superseded",
    "memory.deleted",
    "document.done",
    "document.failed",
    "session.summarized",
]


def test_each_change_arrives_once_signed_with_ids_and_no_content(
    api: Api, tenant: IssuedKey, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    # Given: a webhook for every event type
    hook = _subscribe(api, receiver, ALL)
    assert hook["secret"].startswith("whsec_") and hook["events"] == ALL

    # When: a memory is created, updated, superseded and deleted, and the relay runs
    first = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json["id"]
    api.patch(f"/v1/memories/{first}", {"tags": ["home"]})
    second = api.post("/v1/memories", {"content": "Alice lives in Berlin", "supersedes": first}).json["id"]
    api.delete(f"/v1/memories/{second}")
    _relay(delivery, tenant)

    # Then: one event per change, in order, each signed with the webhook's secret
    events = receiver.events()
    assert [(e["type"], e["data"]) for e in events] == [
        ("memory.created", {"memory_id": first}),
        ("memory.updated", {"memory_id": first}),
        ("memory.created", {"memory_id": second}),
        ("memory.superseded", {"memory_id": first, "superseded_by": second}),
        ("memory.updated", {"memory_id": first}),  # current again: what it superseded is deleted
        ("memory.deleted", {"memory_id": second}),
    ]
    for headers, body in receiver.received:
        expected = "sha256=" + hmac.new(hook["secret"].encode(), body, hashlib.sha256).hexdigest()
        assert headers["x-engram-signature"] == expected
        assert "Alice" not in body.decode()
    assert {e["tenant_id"] for e in events} == {str(tenant.tenant_id)}
    assert len({e["id"] for e in events}) == 6

    # And: a second pass delivers nothing again
    _relay(delivery, tenant)
    assert len(receiver.received) == 6


def test_a_failed_write_emits_nothing(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    _subscribe(api, receiver, ALL)
    # A write refused by the API
    refused = api.post("/v1/memories", {"content": "x", "supersedes": "00000000-0000-4000-8000-000000000000"})
    assert refused.status == 422
    # A write that got into the database and was rolled back
    writer = deps.memory_writer()
    with pytest.raises(RuntimeError), local_db.app.unit_of_work(tenant.tenant_id, EVERYONE) as uow:
        writer.create(uow, NewMemory(content="rolled back", container="default"))
        raise RuntimeError("the caller failed after the write")

    _relay(delivery, tenant)

    assert receiver.received == []
    assert api.post("/v1/memories/list", {}).json["memories"] == []


def test_only_subscribed_event_types_are_delivered(
    api: Api, tenant: IssuedKey, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    _subscribe(api, receiver, ["memory.deleted"])
    memory = api.post("/v1/memories", {"content": "temporary"}).json["id"]
    api.delete(f"/v1/memories/{memory}")

    _relay(delivery, tenant)

    assert [e["type"] for e in receiver.events()] == ["memory.deleted"]


def test_failures_are_retried_with_backoff_then_visible(
    api: Api, tenant: IssuedKey, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    # Given: a receiver that fails every try
    hook = _subscribe(api, receiver, ["memory.created"])
    receiver.statuses = [500] * 100
    api.post("/v1/memories", {"content": "one"})

    # When: the relay runs three times (a first try and the two retries configured)
    for _ in range(3):
        _relay(delivery, tenant)

    # Then: each pass tried three times at once (tenacity), and the delivery is given up, visibly
    assert len(receiver.received) == 9
    detail = api.get(f"/v1/webhooks/{hook['id']}").json
    assert detail["deliveries"] == {"delivered": 0, "pending": 0, "failed": 1}
    (failure,) = detail["recent_failures"]
    assert failure["status"] == "failed" and failure["attempts"] == 3 and failure["last_status"] == 500
    assert "500" in failure["last_error"] and failure["event_type"] == "memory.created"
    assert "secret" not in detail


def test_a_receiver_that_recovers_gets_the_event_on_a_later_pass(
    api: Api, tenant: IssuedKey, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    hook = _subscribe(api, receiver, ["memory.created"])
    receiver.statuses = [503, 503, 503]
    memory = api.post("/v1/memories", {"content": "eventually"}).json["id"]

    _relay(delivery, tenant)
    pending = api.get(f"/v1/webhooks/{hook['id']}").json
    _relay(delivery, tenant)

    assert pending["deliveries"]["pending"] == 1 and pending["recent_failures"][0]["last_status"] == 503
    assert receiver.events()[-1]["data"] == {"memory_id": memory}
    delivered = api.get(f"/v1/webhooks/{hook['id']}").json["deliveries"]
    assert delivered == {"delivered": 1, "pending": 0, "failed": 0}


def test_a_receiver_that_cannot_be_reached_is_an_error_on_the_webhook(
    api: Api, tenant: IssuedKey, delivery: WebhookDelivery
) -> None:
    hook = api.post("/v1/webhooks", {"url": "http://127.0.0.1:9/closed", "events": ["memory.created"]}).json
    api.post("/v1/memories", {"content": "nobody listens"})

    _relay(delivery, tenant)

    (failure,) = api.get(f"/v1/webhooks/{hook['id']}").json["recent_failures"]
    assert failure["last_status"] is None and "connect" in failure["last_error"]


def test_webhooks_are_listed_read_and_deleted_per_tenant(api: Api, other_api: Api) -> None:
    hook = api.post("/v1/webhooks", {"url": "https://example.com/h", "events": ["document.done"]}).json

    assert [w["id"] for w in api.get("/v1/webhooks").json["webhooks"]] == [hook["id"]]
    assert other_api.get("/v1/webhooks").json["webhooks"] == []
    assert other_api.get(f"/v1/webhooks/{hook['id']}").status == 404
    assert other_api.delete(f"/v1/webhooks/{hook['id']}").status == 404
    assert "secret" not in api.get("/v1/webhooks").json["webhooks"][0]
    assert api.delete(f"/v1/webhooks/{hook['id']}").status == 204
    assert api.get(f"/v1/webhooks/{hook['id']}").status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com", "events": ["memory.created"]}, "url"),
        ({"url": "https://example.com", "events": []}, "events"),
        ({"url": "https://example.com", "events": ["memory.eaten"]}, "events[0]"),
        ({"url": "https://example.com", "events": ["memory.created", "memory.created"]}, "events"),
        ({"url": "https://example.com", "events": ["memory.created"], "secret": "mine"}, "secret"),
    ],
)
def test_bad_webhooks_are_refused(api: Api, body: dict[str, Any], field: str) -> None:
    assert_invalid(api.post("/v1/webhooks", body), field)


def test_in_aws_webhooks_point_to_the_event_bus(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = deps.current().settings
    monkeypatch.setattr(settings, "event_bus_name", "engram-dev-events")

    refused = api.post("/v1/webhooks", {"url": "https://example.com/h", "events": ["memory.created"]})

    assert refused.status == 409 and refused.json["error"]["code"] == "unsupported_here"
    assert "engram-dev-events" in refused.json["error"]["message"]


def test_documents_that_finish_or_fail_send_their_outcome(
    api: Api, tenant: IssuedKey, receiver: Receiver, delivery: WebhookDelivery
) -> None:
    _subscribe(api, receiver, ["document.done", "document.failed"])
    done = ingest(api, {"content": "# Notes\n\nDeploys happen on Mondays.", "filename": "notes.md"})
    failed = ingest(api, {"content": " \n\t ", "filename": "blank.txt"})

    _relay(delivery, tenant)

    assert (done["status"], failed["status"]) == ("done", "failed")
    assert [(e["type"], e["data"]) for e in receiver.events()] == [
        ("document.done", {"document_id": done["id"]}),
        ("document.failed", {"document_id": failed["id"]}),
    ]


def test_the_outbox_hands_events_over_oldest_first(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    # Given: events on the tenant's outbox whose rows do not lie in id order on disk (here the oldest
    # one was rewritten into a later page, as reused space does in a busy table)
    with local_db.admin.transaction() as cur:
        cur.execute(
            "INSERT INTO change_events (tenant_id, event_type, subject) "
            "SELECT %s, 'memory.created', jsonb_build_object('memory_id', gen_random_uuid()) "
            "FROM generate_series(1, 300)",
            (tenant.tenant_id,),
        )
        cur.execute(
            "UPDATE change_events SET subject = subject || jsonb_build_object('pad', repeat('x', 1000)) "
            "WHERE id = (SELECT min(id) FROM change_events WHERE tenant_id = %s)",
            (tenant.tenant_id,),
        )

    # When: the relay takes them in one pass
    with local_db.app.tenant(tenant.tenant_id) as cur:
        taken = repo.take_events(cur, tenant.tenant_id, 500)

    # Then: in the order they were recorded
    assert len(taken) == 300
    assert [e["id"] for e in taken] == sorted(e["id"] for e in taken)
