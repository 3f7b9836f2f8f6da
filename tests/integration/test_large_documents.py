"""Large documents: the embed step works a page of chunks at a time, and a document over the chunk
limit fails at once with a clear size error instead of embedding for longer than its step may run."""

from __future__ import annotations

import pytest

from engram import deps
from engram.local.stack import LocalDatabase
from engram.pipeline.stages import embed
from engram.tenants.service import IssuedKey
from tests.integration.pipeline_helpers import document, leftovers, with_settings
from tests.integration.pipeline_helpers import run as run_document

PARAGRAPHS = "\n\n".join(
    f"Section {i}. The team reviewed the rollout plan for region {i} and agreed on the next steps. " * 12
    for i in range(8)
).encode()


def test_every_chunk_is_embedded_when_the_embed_step_works_in_pages(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: pages of 3 chunks, and a document of more than 3 pages
    monkeypatch.setattr(embed, "EMBED_PAGE_CHUNKS", 3)
    monkeypatch.setattr(deps.current(), "pipeline", with_settings(chunk_tokens=60, chunk_overlap_tokens=0))

    # When
    ref, status = run_document(tenant.tenant_id, PARAGRAPHS, "plans.txt", "ops")

    # Then
    assert status == "done"
    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute(
            "SELECT count(*) AS chunks, count(embedding) AS embedded FROM chunks WHERE document_id = %s",
            (ref.document_id,),
        ).fetchone()
    assert rows is not None and rows["chunks"] > 9 and rows["embedded"] == rows["chunks"]


def test_a_document_over_the_chunk_limit_fails_as_too_large_before_embedding(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a limit of 5 chunks per document
    ctx = with_settings(chunk_tokens=60, chunk_overlap_tokens=0, max_chunks_per_document=5)
    monkeypatch.setattr(deps.current(), "pipeline", ctx)

    # When
    ref, status = run_document(tenant.tenant_id, PARAGRAPHS, "plans.txt", "ops")

    # Then
    row = document(local_db.app, ref)
    assert status == "failed" and row["error_code"] == "too_large"
    assert row["error"].startswith("chunk: the document makes ")
    assert "the limit is 5 (ENGRAM_MAX_CHUNKS_PER_DOCUMENT)" in row["error"]
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}
