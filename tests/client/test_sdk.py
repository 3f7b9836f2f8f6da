"""engram-client against the local stack: typed models back, errors as exceptions with code, message
and field, pages followed by iterators, documents followed until done, configuration from the
environment, and the async client alike."""

from __future__ import annotations

import base64
from pathlib import Path
from uuid import UUID

import pytest

from engram.tenants.service import IssuedKey
from engram_client import (
    AsyncEngram,
    ConfigurationError,
    ConflictError,
    Engram,
    IngestionFailed,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    models,
)
from tests import ingest_files


def test_a_memory_is_stored_found_changed_and_deleted(engram: Engram) -> None:
    stored = engram.create_memory(content="Alice lives in Paris", container="crm.contacts", tags=["people"])

    found = engram.search(query="where does Alice live?", container="crm.*")
    patched = engram.update_memory(stored.id, tags=["family"])
    engram.delete_memory(stored.id)

    assert (
        isinstance(stored, models.CreatedMemory) and stored.superseded == [] and isinstance(stored.id, UUID)
    )
    assert isinstance(found, models.SearchResponse) and found.results[0].id == stored.id
    assert patched.tags == ["family"]
    with pytest.raises(NotFoundError) as missing:
        engram.get_memory(stored.id)
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_bad_input_is_an_exception_naming_the_field(engram: Engram) -> None:
    with pytest.raises(InvalidInputError) as raised:
        engram.search(query="x", limit=1000)

    assert raised.value.status == 422 and raised.value.code == "validation_error"
    assert raised.value.field == "limit" and "limit" in raised.value.message
    assert raised.value.errors and raised.value.errors[0]["field"] == "limit"


def test_a_version_conflict_carries_the_current_version(engram: Engram) -> None:
    first = engram.set_working("plan-1", "state", value={"step": 1})
    engram.set_working("plan-1", "state", value={"step": 2}, if_match=first.version)

    with pytest.raises(ConflictError) as raised:
        engram.set_working("plan-1", "state", value={"step": 3}, if_match=first.version)

    assert raised.value.code == "version_conflict" and raised.value.current_version == first.version + 1


def test_an_unknown_key_is_refused(live_url: str) -> None:
    with (
        Engram(base_url=live_url, api_key="engram_unknown") as stranger,
        pytest.raises(PermissionDeniedError),
    ):
        stranger.get_stats()


def test_configuration_comes_from_the_environment(
    live_url: str, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_URL", live_url)
    monkeypatch.setenv("ENGRAM_API_KEY", tenant.plaintext)
    with Engram() as client:
        assert client.get_stats().total == 0

    monkeypatch.delenv("ENGRAM_API_KEY")
    with pytest.raises(ConfigurationError, match="ENGRAM_API_KEY"):
        Engram()


def test_iterators_follow_every_page(engram: Engram) -> None:
    for n in range(5):
        engram.create_memory(content=f"fact number {n}", container="pages")
    for n in range(3):
        engram.set_working("scope-a", f"k{n}", value=n)

    memories = list(engram.iter_memories(container="pages", limit=2))
    keys = [item.key for item in engram.iter_working("scope-a", limit=2)]

    assert sorted(m.content for m in memories) == [f"fact number {n}" for n in range(5)]
    assert keys == ["k0", "k1", "k2"]


def test_a_document_is_followed_until_it_is_done(engram: Engram, tmp_path: Path) -> None:
    done = engram.create_document(
        content="# Runbook\n\nDeploys happen on Mondays.", filename="runbook.md", container="ops", wait=True
    )
    file = tmp_path / "people.csv"
    file.write_text("name,city\nAnn,Oslo\n")
    uploaded = engram.upload_document(file, container="crm", wait=True)

    assert isinstance(done, models.Document) and done.status == "done" and done.chunk_count >= 1
    assert uploaded.status == "done" and uploaded.filename == "people.csv"
    assert engram.search(query="when do deploys happen", container="ops").results


def test_an_uploaded_file_is_read_by_what_it_holds_not_by_its_name(engram: Engram, tmp_path: Path) -> None:
    renamed = tmp_path / "handbook.pdf"
    renamed.write_bytes(ingest_files.docx())

    uploaded = engram.upload_document(renamed, container="hr", wait=True)

    assert uploaded.status == "done" and uploaded.filename == "handbook.pdf"
    assert uploaded.content_type == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_a_failed_document_raises_with_its_error(engram: Engram) -> None:
    with pytest.raises(IngestionFailed) as raised:
        engram.create_document(
            file_base64=base64.b64encode(b"\xff\xfe not text").decode(), filename="notes.txt", wait=True
        )

    assert raised.value.code == "invalid_encoding" and raised.value.document.status == "failed"


def test_plans_and_task_context_from_the_client(engram: Engram) -> None:
    plan = engram.create_plan(plan_id="trip-5", goal_event="trip.requested", goal_data={"to": "Oslo"})
    engram.create_task_context(task_id="book-5", plan_id="trip-5", event_type="book", sub_tasks=["hotel-5"])

    running = engram.update_plan("trip-5", status="running", if_match=plan.version)
    parent = engram.find_task_context_by_subtask("hotel-5")

    assert running.status == "running" and running.version == 2
    assert parent.task_id == "book-5" and [p.plan_id for p in engram.iter_plans(status="running")] == [
        "trip-5"
    ]


@pytest.mark.anyio
async def test_the_async_client_does_the_same(async_engram: AsyncEngram) -> None:
    stored = await async_engram.create_memory(content="Bob plays the cello", container="music")
    for n in range(3):
        await async_engram.create_memory(content=f"song {n}", container="music")

    found = await async_engram.search(query="what does Bob play?", container="music")
    listed = [m.id async for m in async_engram.iter_memories(container="music", limit=2)]

    assert found.results[0].id == stored.id and len(listed) == 4
    with pytest.raises(NotFoundError):
        await async_engram.get_plan("nope")
