"""The local drop folder end to end: files in drop/<container>/ become documents that reach done or
failed; good ones are searchable; the same content dropped again adds nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from engram import deps
from engram.pipeline.watch import DropWatcher
from engram.tenants.service import IssuedKey
from tests import files
from tests.conftest import Api
from tests.integration.documents_helpers import wait_final


def _watcher(root: Path, tenant: IssuedKey, max_file_bytes: int = 50 * 1024 * 1024) -> DropWatcher:
    return DropWatcher(root, tenant.tenant_id, deps.document_service(), max_file_bytes=max_file_bytes)


def _drop(root: Path, container: str, name: str, data: bytes) -> Path:
    path = root / container / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_dropped_files_reach_a_final_state_and_good_ones_are_searchable(
    tmp_path: Path, api: Api, tenant: IssuedKey
) -> None:
    # Given a drop folder with good and bad files
    _drop(
        tmp_path,
        "kb",
        "handbook.pdf",
        files.pdf(["Expense reports are due on the fifth working day of the month."]),
    )
    _drop(
        tmp_path,
        "kb",
        "page.html",
        files.html(
            "Onboarding",
            "Onboarding",
            [
                "New engineers get their laptop from the IT desk on the second floor.",
                "Every new hire is paired with a buddy for the first three weeks.",
            ],
        ),
    )
    _drop(tmp_path, "kb", "people.csv", files.csv_people())
    _drop(tmp_path, "code", "billing.py", files.PYTHON_SOURCE.encode())
    _drop(tmp_path, "kb", "broken.pdf", b"%PDF-1.4\n%%EOF garbage")
    _drop(tmp_path, "kb", "empty.txt", b"")
    _drop(tmp_path, "kb", ".hidden.txt", b"Editors leave files like this around and they must be ignored.")

    # When the watcher takes them and the runner finishes
    registrations = _watcher(tmp_path, tenant).scan_once(settle=False)
    final = {r.document["filename"]: wait_final(api, str(r.document["id"])) for r in registrations}

    # Then every file ended done or failed with a reason
    assert sorted(final) == [
        "billing.py",
        "broken.pdf",
        "empty.txt",
        "handbook.pdf",
        "page.html",
        "people.csv",
    ]
    for name in ("billing.py", "handbook.pdf", "page.html", "people.csv"):
        assert final[name]["status"] == "done", (name, final[name]["error"])
        assert final[name]["memory_count"] >= 1, name
    assert final["broken.pdf"]["error"]["code"] == "corrupt"
    assert final["empty.txt"]["error"] == {
        "code": "empty_content",
        "message": "detect: the file is empty (0 bytes)",
    }
    assert final["billing.py"]["content_type"] == "text/x-python"

    # And their memories are found by search
    def top(query: str, container: str) -> str:
        results = api.post("/v1/search", {"query": query, "container": container, "scope": "memories"}).json
        return results["results"][0]["content"]

    assert "fifth working day" in top("when are expense reports due", "kb")
    assert "buddy" in top("who helps new hires in their first weeks", "kb")
    assert "Berlin" in top("which city is Bob Stone in", "kb")
    assert "add_tax" in top("function that adds VAT to an amount", "code")


def test_dropping_the_same_content_again_adds_nothing(tmp_path: Path, api: Api, tenant: IssuedKey) -> None:
    watcher = _watcher(tmp_path, tenant)
    data = files.csv_people()
    _drop(tmp_path, "kb", "people.csv", data)
    first = watcher.scan_once(settle=False)
    wait_final(api, str(first[0].document["id"]))

    _drop(tmp_path, "kb", "people-copy.csv", data)  # same bytes, another name
    again = watcher.scan_once(settle=False)
    unchanged = watcher.scan_once(settle=False)  # nothing new on disk: nothing taken
    listed = api.post("/v1/documents/list", {"container": "kb"}).json["documents"]

    assert [r.duplicate for r in again] == [True]
    assert again[0].document["id"] == first[0].document["id"]
    assert unchanged == []
    assert len(listed) == 1


def test_a_changed_file_is_a_new_document(tmp_path: Path, api: Api, tenant: IssuedKey) -> None:
    watcher = _watcher(tmp_path, tenant)
    path = _drop(
        tmp_path, "kb", "status.txt", b"The migration to the new billing system is planned for March."
    )
    first = watcher.scan_once(settle=False)[0]
    wait_final(api, str(first.document["id"]))

    path.write_bytes(b"The migration to the new billing system is planned for April.")
    second = watcher.scan_once(settle=False)[0]
    done = wait_final(api, str(second.document["id"]))

    assert second.duplicate is False
    assert second.document["id"] != first.document["id"]
    assert done["status"] == "done"


def test_a_file_is_taken_only_once_it_stopped_changing(tmp_path: Path, tenant: IssuedKey, api: Api) -> None:
    watcher = _watcher(tmp_path, tenant)
    _drop(tmp_path, "kb", "notes.txt", b"Half written")

    assert watcher.scan_once() == []  # first sight: maybe still being copied
    taken = watcher.scan_once()  # unchanged since the last scan: taken

    assert len(taken) == 1
    wait_final(api, str(taken[0].document["id"]))


def test_a_file_over_the_limit_is_failed_without_being_read(
    tmp_path: Path, tenant: IssuedKey, api: Api
) -> None:
    _drop(tmp_path, "kb", "big.txt", b"x" * 2048)

    registration = _watcher(tmp_path, tenant, max_file_bytes=1024).scan_once(settle=False)[0]
    body = api.get(f"/v1/documents/{registration.document['id']}").json

    assert body["status"] == "failed"
    assert body["error"] == {
        "code": "too_large",
        "message": "the file is 2048 bytes; the limit is 1024 bytes (ENGRAM_MAX_FILE_BYTES)",
    }


def test_a_restart_takes_only_the_files_added_or_changed_meanwhile(
    tmp_path: Path, tenant: IssuedKey, api: Api
) -> None:
    root, state = tmp_path / "drop", tmp_path / "drop-taken.json"
    _drop(root, "kb", "note.txt", b"The office moves to Lyon in May.")
    broken = _drop(root, "kb", "broken.pdf", b"%PDF-1.4\n%%EOF garbage")  # fails in the pipeline
    _drop(root, "kb", "big.txt", b"x" * 2048)  # refused before it is read
    first = DropWatcher(
        root, tenant.tenant_id, deps.document_service(), max_file_bytes=1024, state_file=state
    )
    taken = {
        r.document["source"]: wait_final(api, str(r.document["id"])) for r in first.scan_once(settle=False)
    }

    # engram local starts again: a new watcher over the same folder and state
    again = DropWatcher(
        root, tenant.tenant_id, deps.document_service(), max_file_bytes=1024, state_file=state
    )
    after_restart = again.scan_once(settle=False)
    os.utime(broken, ns=(time.time_ns(), time.time_ns() + 10**9))  # touched: sent again
    _drop(root, "kb", "added.txt", b"The board meets on Tuesdays.")
    later = again.scan_once(settle=False)
    for registration in later:
        wait_final(api, str(registration.document["id"]))

    assert [taken[name]["status"] for name in ("kb/note.txt", "kb/broken.pdf", "kb/big.txt")] == [
        "done",
        "failed",
        "failed",
    ]
    assert after_restart == []  # what failed is not run again at each start
    assert sorted(r.document["source"] for r in later) == ["kb/added.txt", "kb/broken.pdf"]
    retried = api.get(f"/v1/documents/{taken['kb/broken.pdf']['id']}").json
    assert (retried["status"], retried["revision"]) == ("failed", 2)  # once more, as it was sent again


def test_against_a_new_database_every_file_is_taken_again(
    tmp_path: Path, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    root, state = tmp_path / "drop", tmp_path / "drop-taken.json"
    _drop(root, "kb", "a.txt", b"x" * 2048)  # over the limit: failed at once, no run to wait for
    _drop(root, "kb", "b.txt", b"y" * 2048)
    DropWatcher(
        root, tenant.tenant_id, deps.document_service(), max_file_bytes=1024, state_file=state
    ).scan_once(settle=False)

    # the data directory's database was replaced: the dev tenant has another id
    elsewhere = DropWatcher(
        root, other_tenant.tenant_id, deps.document_service(), max_file_bytes=1024, state_file=state
    ).scan_once(settle=False)

    assert sorted(r.document["source"] for r in elsewhere) == ["kb/a.txt", "kb/b.txt"]
    assert all(r.document["tenant_id"] == other_tenant.tenant_id for r in elsewhere)
