"""Expiry: a memory past its expires_at is gone from every read at once. Cleanup: expired rows and
superseded versions past the retention period are deleted, for every tenant, as the app role."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engram.local.stack import LocalDatabase
from engram.maintenance.service import cleanup
from tests.conftest import REPO, Api


def _past() -> str:
    return (datetime.now(UTC) - timedelta(seconds=1)).isoformat()


def _expired() -> dict[str, str]:
    """A memory that began a day ago and has just expired (one that would expire before it begins is
    refused)."""
    return {"valid_from": (datetime.now(UTC) - timedelta(days=1)).isoformat(), "expires_at": _past()}


def _exists(local_db: LocalDatabase, table: str, column: str, value: Any) -> bool:
    with local_db.admin.transaction() as cur:
        row = cur.execute(f"SELECT count(*) AS n FROM {table} WHERE {column} = %s", (value,)).fetchone()  # noqa: S608
    return bool(row and row["n"])


def test_an_expired_memory_disappears_from_every_read_at_once(api: Api) -> None:
    text = "The temporary door code is 5521"
    memory = api.post("/v1/memories", {"content": text, "container": "site", "user_id": "ann"}).json
    api.post("/v1/memories", {"content": "The site opens at 8am", "container": "site", "user_id": "ann"})

    expired = api.patch(f"/v1/memories/{memory['id']}", {"expires_at": _past()})

    assert expired.status == 200
    assert api.get(f"/v1/memories/{memory['id']}").status == 404
    assert memory["id"] not in {m["id"] for m in api.post("/v1/memories/list", {}).json["memories"]}
    for mode in ("hybrid", "vector", "text"):
        found = api.post("/v1/search", {"query": "temporary door code", "mode": mode}).json["results"]
        assert memory["id"] not in {r["id"] for r in found}, mode
    profile = api.get("/v1/profile?user_id=ann&q=door%20code").json
    assert "5521" not in profile["context"]
    assert api.get("/v1/containers").json["containers"][0]["memory_count"] == 1
    assert api.get("/v1/stats").json["total"] == 1
    assert (
        api.post("/v1/memories/upsert", {"content": text, "container": "site", "user_id": "ann"}).json[
            "status"
        ]
        == "created"
    )


def test_a_memory_created_already_expired_is_never_visible(api: Api) -> None:
    memory = api.post("/v1/memories", {"content": "stale news", **_expired()}).json

    assert api.get(f"/v1/memories/{memory['id']}").status == 404
    assert api.post("/v1/search", {"query": "stale news"}).json["results"] == []


def _superseded(api: Api, local_db: LocalDatabase, text: str, days_ago: int) -> str:
    old = api.post("/v1/memories/upsert", {"content": text + "."}).json["id"]
    api.post("/v1/memories/upsert", {"content": text + "!", "dedupe_threshold": 0.8})
    with local_db.admin.transaction() as cur:
        cur.execute(
            "UPDATE memories SET valid_to = now() - make_interval(days => %s) WHERE id = %s", (days_ago, old)
        )
    return str(old)


def test_cleanup_deletes_expired_rows_and_old_superseded_versions_only(
    api: Api, other_api: Api, local_db: LocalDatabase
) -> None:
    live = api.post("/v1/memories", {"content": "keep me"}).json["id"]
    gone = api.post("/v1/memories", {"content": "expired", **_expired()}).json["id"]
    theirs = other_api.post("/v1/memories", {"content": "expired too", **_expired()}).json["id"]
    old = _superseded(api, local_db, "The printer is on floor three", days_ago=100)
    recent = _superseded(api, local_db, "The canteen closes at two", days_ago=5)
    api.put("/v1/working/plan/temp", {"value": 1, "ttl_seconds": 60})
    api.put("/v1/working/plan/kept", {"value": 2})
    with local_db.admin.transaction() as cur:
        cur.execute("UPDATE working_memory SET expires_at = now() - interval '1 s' WHERE key = 'temp'")

    report = cleanup(local_db.app, retention_days=30)

    assert report.tenants >= 2 and report.retention_days == 30
    assert (
        report.expired_memories >= 2 and report.superseded_memories >= 1 and report.expired_working_keys >= 1
    )
    assert not _exists(local_db, "memories", "id", gone)
    assert not _exists(local_db, "memories", "id", theirs)
    assert not _exists(local_db, "memories", "id", old)
    assert _exists(local_db, "memories", "id", recent)
    assert _exists(local_db, "memories", "id", live)
    assert not _exists(local_db, "working_memory", "key", "temp")
    assert api.get("/v1/working/plan/kept").status == 200


def test_cleanup_without_retention_keeps_superseded_versions(api: Api, local_db: LocalDatabase) -> None:
    old = _superseded(api, local_db, "The gym opens at six", days_ago=1000)

    cleanup(local_db.app, retention_days=None)

    assert _exists(local_db, "memories", "id", old)


def test_engram_cleanup_command(api: Api, local_db: LocalDatabase, tmp_path: Path) -> None:
    gone = api.post("/v1/memories", {"content": "expired via cli", **_expired()}).json["id"]
    env = {
        **os.environ,
        "DATABASE_URL": local_db.admin_conninfo,
        "ENGRAM_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO / "shared"),
    }

    done = subprocess.run(
        [sys.executable, "-m", "engram.cli", "cleanup", "--retention-days", "30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["expired_memories"] >= 1 and report["retention_days"] == 30
    assert not _exists(local_db, "memories", "id", gone)
