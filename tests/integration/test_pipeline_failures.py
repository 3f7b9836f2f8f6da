"""A failure anywhere leaves the document failed with its reason and no partial rows; bad input of
every kind ends as failed with a clear error; transient errors are retried."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest

from engram import deps
from engram.documents.failures import TransientError
from engram.documents.runs import DocumentRef
from engram.local.stack import LocalDatabase
from engram.pipeline import finish, run
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import Services
from engram.pipeline.steps import STEPS
from engram.tenants.service import IssuedKey
from tests import files
from tests.integration.pipeline_helpers import document, leftovers, with_services, with_settings
from tests.integration.pipeline_helpers import run as run_document

GOOD = (
    b"# Runbook\n\nThe payments API is deployed to the eu-west cluster every Monday morning.\n\n"
    b"Rollbacks are done with the deploy tool and take about ten minutes to complete.\n"
)
OLD_FACT = b"The payments API is deployed to the eu-west cluster every Friday morning."


class Injected(Exception):
    """Not a TransientError: the runner must not retry it."""


def _after(
    real: Callable[[PipelineContext, DocumentRef], None], ran: list[str]
) -> Callable[[PipelineContext, DocumentRef], None]:
    def step(ctx: PipelineContext, ref: DocumentRef) -> None:
        real(ctx, ref)  # the step's writes are committed ...
        ran.append(str(ref.document_id))
        raise Injected("injected failure after the step committed")  # ... and then it dies

    return step


@pytest.mark.parametrize("step", [s.name for s in STEPS])
def test_a_failure_after_any_step_leaves_a_failed_document_and_no_partial_rows(
    step: str, tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an older memory the new document would supersede (so graph-link has something to undo)
    _, status = run_document(tenant.tenant_id, OLD_FACT, "old.txt", "ops")
    assert status == "done"
    with local_db.app.tenant(tenant.tenant_id) as cur:
        before = cur.execute("SELECT id, is_latest, valid_to FROM memories ORDER BY id").fetchall()
    ran: list[str] = []
    monkeypatch.setitem(run.STEP_FUNCTIONS, step, _after(run.STEP_FUNCTIONS[step], ran))

    # When
    ref, status = run_document(tenant.tenant_id, GOOD, "runbook.md", "ops")

    # Then
    row = document(local_db.app, ref)
    assert ran == [str(ref.document_id)]  # the step really ran (and committed) before failing
    assert status == "failed"
    assert row["status"] == "failed"
    assert row["error_code"] == "internal_error"
    assert row["error"].startswith(f"{step}: an unexpected error occurred (Injected)")
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}
    with local_db.app.tenant(tenant.tenant_id) as cur:
        after = cur.execute("SELECT id, is_latest, valid_to FROM memories ORDER BY id").fetchall()
        links = cur.execute("SELECT count(*) AS n FROM memory_relationships").fetchone()
    assert after == before  # the superseded memory is the latest again
    assert links is not None and links["n"] == 0


def test_a_failure_in_mark_done_also_leaves_nothing(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ctx: PipelineContext, ref: DocumentRef) -> bool:
        raise Injected("mark-done broke")

    monkeypatch.setattr(finish, "mark_done", broken)

    ref, status = run_document(tenant.tenant_id, GOOD, "runbook.md")

    assert status == "failed"
    assert document(local_db.app, ref)["error"].startswith("mark-done: an unexpected error occurred")
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}


def test_transient_errors_are_retried_with_the_same_policy(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run.STEP_FUNCTIONS["embed"]
    calls: list[int] = []

    def flaky(ctx: PipelineContext, ref: DocumentRef) -> None:
        calls.append(1)
        if len(calls) < 3:
            raise TransientError("throttled")
        real(ctx, ref)

    monkeypatch.setitem(run.STEP_FUNCTIONS, "embed", flaky)

    ref, status = run_document(tenant.tenant_id, GOOD, "runbook.md")

    assert status == "done"
    assert len(calls) == 3
    assert leftovers(local_db.app, ref)["chunks"] > 0


def test_transient_errors_that_never_clear_fail_the_document(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    def always(ctx: PipelineContext, ref: DocumentRef) -> None:
        raise TransientError("provider still throttling")

    monkeypatch.setitem(run.STEP_FUNCTIONS, "llm-extract", always)

    ref, status = run_document(tenant.tenant_id, GOOD, "runbook.md")

    row = document(local_db.app, ref)
    assert status == "failed"
    assert row["error_code"] == "unavailable"
    assert (
        row["error"] == "llm-extract: still failing after retries (TransientError: provider still throttling)"
    )
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}


def _bomb() -> bytes:
    return gzip.compress(b"A" * (3 * 1024 * 1024), compresslevel=9)


BAD_INPUTS: list[tuple[str, Callable[[], bytes], str, str]] = [
    ("empty.txt", lambda: b"", "empty_content", "the file is empty (0 bytes)"),
    ("blank.md", lambda: b"  \n\n\t \n", "empty_content", "no readable text"),
    ("latin1.txt", lambda: "caf\u00e9 cr\u00e8me".encode("latin-1"), "invalid_encoding", "not valid UTF-8"),
    ("blob.bin", lambda: bytes(range(256)) * 4, "unsupported_type", "unknown file type"),
    ("broken.pdf", lambda: b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage", "corrupt", "PDF"),
    (
        "secret.pdf",
        lambda: files.pdf(["Top secret plans."], password="hunter2"),
        "encrypted",
        "password-protected",
    ),
    (
        "archive.zip",
        lambda: b"PK\x03\x04" + b"\x00" * 64,
        "unsupported_type",
        "ZIP archives are not supported",
    ),
    ("bomb.txt.gz", _bomb, "decompression_bomb", "decompression bomb"),
    ("photo.png", lambda: b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "ocr_unavailable", "images are read by OCR"),
    ("bad.jsonl", lambda: b'{"a": 1}\n{"a": \n', "corrupt", "line 2 is not valid JSON"),
    ("header.csv", lambda: b"name,city\n", "empty_content", "header but no rows"),
    ("control.txt", lambda: b"\x01\x02\x03\x1b\x7f\x0b\x0c" * 2000, "empty_content", "no readable text"),
    ("format.md", lambda: "\u200b\u200e\ufeff \u2028\n".encode() * 500, "empty_content", "no readable text"),
]


@pytest.mark.parametrize(("filename", "make", "code", "phrase"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_fails_with_a_clear_error(
    filename: str,
    make: Callable[[], bytes],
    code: str,
    phrase: str,
    tenant: IssuedKey,
    local_db: LocalDatabase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The limits are small here so the bomb stays small; no OCR is configured.
    ctx = with_settings(max_file_bytes=1024 * 1024)
    monkeypatch.setattr(deps.current(), "pipeline", _no_ocr(ctx))

    ref, status = run_document(tenant.tenant_id, make(), filename)

    row = document(local_db.app, ref)
    assert status == "failed"
    assert row["status"] == "failed"
    assert row["error_code"] == code, row["error"]
    # detect refuses what it cannot even type (empty, too large, a bomb); extract the rest
    assert row["error"].startswith(("detect: ", "extract: "))
    assert phrase in row["error"]
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}


def test_a_pdf_over_the_page_limit_fails(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deps.current(), "pipeline", with_settings(max_pdf_pages=2))

    ref, status = run_document(tenant.tenant_id, files.pdf(["one", "two", "three"]), "long.pdf")

    assert status == "failed"
    assert document(local_db.app, ref)["error"] == "extract: the PDF has 3 pages; the limit is 2"


def _no_ocr(ctx: Any) -> Any:
    return with_services(ctx, Services(ocr=None, transcriber=None))
