"""Export a tenant to JSON Lines and import it into a fresh embedded PostgreSQL (a second server
in its own directory): the re-export compares equal, a second import changes nothing, and ids of
another tenant are refused. Also the API (local stream, and S3 with a presigned URL) and the CLI."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from engram import deps
from engram.db.database import Database
from engram.db.embedded import EmbeddedPostgres, start_embedded
from engram.db.migrate import migrate
from engram.errors import Conflict, InvalidInput
from engram.export.service import ExportService
from engram.local.stack import LocalDatabase
from engram.settings import Settings
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import REPO, Api, assert_invalid


class FreshDatabase:
    def __init__(self, embedded: EmbeddedPostgres, migrations: Path) -> None:
        self.embedded = embedded
        migrate(embedded.admin_conninfo, migrations)
        self.app = Database(embedded.app_conninfo("engram_app"), max_size=2)
        self.admin = Database(embedded.admin_conninfo, max_size=2)

    def close(self) -> None:
        self.app.close()
        self.admin.close()
        self.embedded.stop()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Iterator[FreshDatabase]:
    """A second, empty embedded server with the migrations applied, in another directory."""
    db = FreshDatabase(
        start_embedded(tmp_path_factory.mktemp("fresh") / "pg", cleanup_mode="delete"),
        settings.migrations_dir,
    )
    yield db
    db.close()


def _seed(api: Api) -> None:
    """One of everything the export must carry."""
    api.post("/v1/containers", {"name": "crm", "description": "customers"})
    api.post(
        "/v1/memories",
        {
            "content": "Alice is the account owner",
            "container": "crm.accounts",
            "tags": ["people"],
            "metadata": {"tier": "gold", "n": [1, 2.5]},
            "agent_id": "sales",
            "conversation_id": "c-1",
            "confidence": 0.8,
            "valid_from": "2026-01-02T03:04:05.123456+00:00",
        },
    )
    api.post(
        "/v1/memories",
        {
            "content": "Alice likes green tea",
            "user_id": "alice",
            "visibility": "private",
            "memory_type": "preference",
            "container": "crm.accounts",
            "expires_at": (datetime.now(UTC) + timedelta(days=30)).isoformat(),
        },
    )
    api.post(
        "/v1/memories",
        {
            "content": "vector of my own model",
            "embedding": [0.125, -0.5, 0.3333333],
            "embedding_model": "my-model-3d",
        },
    )
    api.post("/v1/memories", {"content": "already expired", "expires_at": "2020-01-01T00:00:00+00:00"})
    api.post("/v1/memories/upsert", {"content": "The SLA is 99.9 percent."})
    api.post("/v1/memories/upsert", {"content": "The SLA is 99.9 percent!", "dedupe_threshold": 0.8})
    session = api.post(
        "/v1/sessions", {"user_id": "alice", "agent_id": "concierge", "metadata": {"ch": "web"}}
    )
    api.post(
        f"/v1/sessions/{session.json['id']}/messages?user_id=alice&agent_id=concierge",
        {
            "messages": [
                {"role": "user", "content": "I live in Lisbon.", "metadata": {"lang": "en"}},
                {"role": "assistant", "content": "Noted!"},
            ],
            "extract": True,
        },
    )
    crawler = api.post("/v1/sessions", {"agent_id": "crawler"}).json["id"]
    api.post(
        f"/v1/sessions/{crawler}/messages?agent_id=crawler", {"messages": [{"role": "tool", "content": "ok"}]}
    )
    api.put("/v1/working/plan-1/state", {"value": {"step": 2, "done": [1]}})
    api.put("/v1/working/plan-1/state", {"value": {"step": 3, "done": [1, 2]}, "ttl_seconds": 3600})
    api.put("/v1/working/agent-x/null-value", {"value": None})
    api.post(
        "/v1/procedures", {"trigger": "a refund is requested", "content": "check the date", "tags": ["s"]}
    )
    api.post(
        "/v1/procedures",
        {
            "kind": "example",
            "trigger": "sql per day",
            "content": "Q/A",
            "agent_id": "analyst",
            "visibility": "private",
        },
    )
    api.post("/v1/plans", {"plan_id": "trip-1", "goal_event": "trip.requested", "goal_data": {"to": "Oslo"}})
    api.put("/v1/plans/trip-1", {"status": "running", "state": ["booked"]})
    api.post(
        "/v1/task-context",
        {
            "task_id": "book-1",
            "plan_id": "trip-1",
            "event_type": "booking",
            "sub_tasks": ["flight-1", "hotel-1"],
        },
    )


def _export(db: Database, tenant_id: Any, name: str, container: str | None = None) -> list[dict[str, Any]]:
    out = io.StringIO()
    ExportService(db).write_jsonl(tenant_id, name, container, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _body(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["record"] != "header"]


def _kinds(records: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in _body(records):
        counts[r["record"]] = counts.get(r["record"], 0) + 1
    return counts


def test_round_trip_into_a_fresh_database_compares_equal(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    # Given: a tenant with memories, versions, relationships, conversations, state and procedures
    _seed(api)
    exported = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    lines = [json.dumps(r) for r in exported]

    # When: it is imported into a fresh server, then exported from there
    new_id = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    report = ExportService(fresh.app).import_jsonl(new_id, tenant.tenant_name, lines)
    again = _export(fresh.app, new_id, tenant.tenant_name)

    # Then: nothing is lost and nothing changes
    assert _body(again) == _body(exported)
    assert report.inserted == _kinds(exported) and report.skipped == {}
    kinds = _kinds(exported)
    assert kinds["memory"] == 6 and kinds["relationship"] == 1 and kinds["session"] == 2
    assert kinds["message"] == 3 and kinds["working"] == 2 and kinds["procedure"] == 2
    assert kinds["container"] == 3
    memories = {r["content"]: r for r in _body(exported) if r["record"] == "memory"}
    assert "already expired" not in memories
    own = memories["vector of my own model"]
    assert own["embedding_model"] == "my-model-3d" and own["embedding"] == [0.125, -0.5, 0.3333333]
    assert len(memories["Alice is the account owner"]["embedding"]) == 384
    assert memories["Alice likes green tea"]["visibility"] == "private"
    assert memories["The SLA is 99.9 percent."]["is_latest"] is False
    working = {r["key"]: r for r in _body(exported) if r["record"] == "working"}
    assert working["state"]["version"] == 2 and working["null-value"]["value"] is None
    (plan,) = [r for r in _body(exported) if r["record"] == "plan"]
    assert (plan["status"], plan["state"], plan["version"]) == ("running", ["booked"], 2)
    (task,) = [r for r in _body(exported) if r["record"] == "task_context"]
    assert task["sub_tasks"] == ["flight-1", "hotel-1"] and task["plan_id"] == "trip-1"


def test_importing_twice_changes_nothing(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api)
    lines = [json.dumps(r) for r in _export(local_db.app, tenant.tenant_id, tenant.tenant_name)]
    new_id = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    first = ExportService(fresh.app).import_jsonl(new_id, tenant.tenant_name, lines)
    before = _export(fresh.app, new_id, tenant.tenant_name)

    second = ExportService(fresh.app).import_jsonl(new_id, tenant.tenant_name, lines)

    assert second.inserted == {} and second.skipped == first.inserted
    assert _body(_export(fresh.app, new_id, tenant.tenant_name)) == _body(before)


def test_ids_of_another_tenant_are_refused_and_nothing_is_imported(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api)
    lines = [json.dumps(r) for r in _export(local_db.app, tenant.tenant_id, tenant.tenant_name)]
    owner = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    ExportService(fresh.app).import_jsonl(owner, tenant.tenant_name, lines)
    intruder = tenants.ensure_tenant(fresh.admin, tenant.tenant_name + "-copy")

    with pytest.raises(Conflict, match="already exists in another tenant"):
        ExportService(fresh.app).import_jsonl(intruder, "copy", lines)

    assert _body(_export(fresh.app, intruder, "copy")) == []


def test_export_of_one_container_imports_on_its_own(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api)
    part = _export(local_db.app, tenant.tenant_id, tenant.tenant_name, "crm.*")
    new_id = tenants.ensure_tenant(fresh.admin, "crm-only-" + tenant.tenant_name[-12:])

    ExportService(fresh.app).import_jsonl(new_id, "x", [json.dumps(r) for r in part])

    assert _kinds(part) == {"container": 2, "memory": 2}
    assert part[0]["container"] == "crm.*"
    assert _body(_export(fresh.app, new_id, "x")) == _body(part)


def test_import_errors_name_the_line(fresh: FreshDatabase) -> None:
    tenant_id = tenants.ensure_tenant(fresh.admin, "errors")
    header = json.dumps(
        {
            "record": "header",
            "format": "engram-export",
            "version": 1,
            "tenant": "errors",
            "container": None,
            "exported_at": "2026-01-01T00:00:00Z",
        }
    )
    service = ExportService(fresh.app)

    with pytest.raises(Exception, match="line 1"):
        service.import_jsonl(tenant_id, "errors", ['{"record": "memory"}'])
    with pytest.raises(Exception, match="line 2"):
        service.import_jsonl(tenant_id, "errors", [header, '{"record": "memory", "id": "nope"}'])
    working = {
        "record": "working",
        "scope": "s",
        "key": "k",
        "value": 1,
        "version": 1,
        "expires_at": None,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    container = {
        "record": "container",
        "name": "a",
        "parent": None,
        "description": "",
        "created_at": "2026-01-01T00:00:00Z",
    }
    with pytest.raises(Exception, match="line 3: a container record after working records"):
        service.import_jsonl(tenant_id, "errors", [header, json.dumps(working), json.dumps(container)])
    with pytest.raises(Exception, match=r"line 2: .*colour"):
        service.import_jsonl(tenant_id, "errors", [header, json.dumps({**container, "colour": "red"})])
    dangling = {
        "record": "memory",
        "id": "6f1c1f4e-0000-4000-8000-000000000001",
        "container": "nowhere",
        "content": "x",
        "memory_type": "fact",
        "tags": [],
        "metadata": {},
        "agent_id": None,
        "conversation_id": None,
        "user_id": None,
        "visibility": "tenant",
        "confidence": 1.0,
        "is_latest": True,
        "valid_from": "2026-01-01T00:00:00Z",
        "valid_to": None,
        "expires_at": None,
        "embedding": None,
        "embedding_model": None,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    with pytest.raises(InvalidInput, match="line 2: the database refused the memory"):
        service.import_jsonl(tenant_id, "errors", [header, json.dumps(dangling)])
    with pytest.raises(InvalidInput, match="line 3: the database refused the memory"):
        service.import_jsonl(
            tenant_id,
            "errors",
            [
                header,
                json.dumps(container),
                json.dumps({**dangling, "container": "a", "memory_type": "gossip"}),
            ],
        )
    assert _body(_export(fresh.app, tenant_id, "errors")) == []


def test_post_export_streams_the_jsonl_locally(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_api: Api
) -> None:
    _seed(api)

    response = api.post("/v1/export")
    scoped = api.post("/v1/export", {"container": "crm.accounts"})
    theirs = other_api.post("/v1/export")

    assert response.status == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    records = [json.loads(line) for line in response.raw.decode().splitlines()]
    assert records[0]["record"] == "header" and records[0]["tenant"] == tenant.tenant_name
    assert _body(records) == _body(_export(local_db.app, tenant.tenant_id, tenant.tenant_name))
    assert {r["record"] for r in _body([json.loads(x) for x in scoped.raw.decode().splitlines()])} == {
        "container",
        "memory",
    }
    assert _body([json.loads(x) for x in theirs.raw.decode().splitlines()]) == []
    assert_invalid(api.post("/v1/export", {"container": "bad name"}), "container")


def test_post_export_in_aws_is_a_job_that_the_worker_writes_to_s3(
    api: Api, tenant: IssuedKey, other_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(api)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="engram-exports")
        monkeypatch.setattr(deps.current().settings, "export_bucket", "engram-exports")
        monkeypatch.setattr(deps.current().settings, "aws_region", "us-east-1")

        # When the API is asked for an export, it answers at once with a job that is running
        accepted = api.post("/v1/export")
        job_id = accepted.json["id"]
        running = api.get(f"/v1/export/{job_id}")
        # Then the worker (EventBridge hands it the request object) writes the file and a status
        jobs = deps.export_jobs()
        assert jobs is not None
        jobs.run(deps.export_service(), f"exports/{tenant.tenant_id}/{job_id}.request.json")
        done = api.get(f"/v1/export/{job_id}")
        stored = s3.get_object(Bucket="engram-exports", Key=f"exports/{tenant.tenant_id}/{job_id}.jsonl")
        theirs = other_api.get(f"/v1/export/{job_id}")
        malformed = api.get("/v1/export/not-a-job")

    assert accepted.status == 202 and accepted.json["status"] == "running"
    assert accepted.headers["Location"] == accepted.json["status_url"] == f"/v1/export/{job_id}"
    assert running.status == 200 and running.json["status"] == "running" and "url" not in running.json
    assert done.status == 200 and done.json["status"] == "done" and done.json["expires_in"] == 3600
    assert "Signature=" in done.json["url"] and f"{tenant.tenant_id}/{job_id}.jsonl" in done.json["url"]
    body = stored["Body"].read().decode().splitlines()
    assert json.loads(body[0])["tenant"] == tenant.tenant_name
    assert len(body) - 1 == sum(done.json["counts"].values())
    assert theirs.status == 404, "a job id is looked up under the caller's own tenant only"
    assert malformed.status == 422


def test_an_export_job_that_fails_says_why_and_one_that_never_ran_turns_failed(
    api: Api, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="engram-exports")
        monkeypatch.setattr(deps.current().settings, "export_bucket", "engram-exports")
        monkeypatch.setattr(deps.current(), "s3", s3)
        jobs = deps.export_jobs()
        assert jobs is not None
        broken = jobs.request(tenant.tenant_id, tenant.tenant_name, None)

        class LostDatabase(ExportService):
            def write_jsonl(self, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("the database connection was lost")

        with pytest.raises(RuntimeError):  # raised again, so Lambda retries and then keeps the event
            jobs.run(LostDatabase(deps.database()), f"exports/{tenant.tenant_id}/{broken.id}.request.json")
        failed = api.get(f"/v1/export/{broken.id}")
        stale = jobs.request(tenant.tenant_id, tenant.tenant_name, None)
        key = f"exports/{tenant.tenant_id}/{stale.id}.request.json"
        old = json.loads(s3.get_object(Bucket="engram-exports", Key=key)["Body"].read())
        old["requested_at"] = "2020-01-01T00:00:00+00:00"
        s3.put_object(Bucket="engram-exports", Key=key, Body=json.dumps(old).encode())
        never_ran = api.get(f"/v1/export/{stale.id}")

    assert failed.json["status"] == "failed" and "connection was lost" in failed.json["error"]
    assert never_ran.json["status"] == "failed" and "async-failures queue" in never_ran.json["error"]


def test_cli_export_then_import_into_a_fresh_database(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase, tmp_path: Path
) -> None:
    _seed(api)
    file = tmp_path / "tenant.jsonl"

    def engram(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "ENGRAM_DATA_DIR": str(tmp_path),
            "PYTHONPATH": str(REPO / "shared"),
        }
        return subprocess.run(
            [sys.executable, "-m", "engram.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )

    exported = engram("export", "--tenant", tenant.tenant_name, database_url=local_db.admin_conninfo)
    file.write_text(exported.stdout)
    imported = engram("import", str(file), "--tenant", "cli-copy", database_url=fresh.embedded.admin_conninfo)

    assert exported.returncode == 0, exported.stderr
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout.splitlines()[-1])["inserted"]["memory"] == 6
    copy_id = tenants.ensure_existing_tenant(fresh.admin, "cli-copy")
    original = [json.loads(line) for line in exported.stdout.splitlines()]
    assert _body(_export(fresh.app, copy_id, "cli-copy")) == _body(original)
