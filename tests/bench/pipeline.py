"""Pipeline throughput: a generated PDF sent to `POST /v1/documents`, then the real extract, chunk and
embed steps (engram.pipeline.run), each timed, on the bench's embedded PostgreSQL with the local model."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from engram import deps
from engram.documents.runs import DocumentRef
from engram.local.stack import LocalDatabase
from engram.pipeline import finish, run
from engram.providers.embeddings import Embedder
from engram.tenants import service as tenants
from tests.bench.harness import Handlers, check
from tests.bench.report import Figure
from tests.bench.sample_pdf import write_handbook
from tests.bench.writes import drop_tenant

TIMED_STEPS = ("extract", "chunk", "embed")


class RecordingStarter:
    """Takes the place of the local runner: the bench runs and times the steps itself."""

    def __init__(self) -> None:
        self.started: list[DocumentRef] = []

    def start(self, ref: DocumentRef, name: str) -> None:
        self.started.append(ref)


def pipeline_throughput(
    handlers: Handlers,
    local: LocalDatabase,
    embedder: Embedder,
    work_dir: Path,
    log: Callable[[str], None],
    pages: int,
) -> list[Figure]:
    """One document in a fresh tenant, deleted afterwards. The model is loaded before the clock starts:
    this is steady-state throughput (cold start has its own section)."""
    filename = f"handbook-{pages}-pages.pdf"
    data = write_handbook(work_dir / filename, pages)
    starter = RecordingStarter()
    deps.install(deps.Deps(settings=local.settings, database=local.app, embedder=embedder, starter=starter))
    embedder.embed_documents(["warm up the model"])
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-pipeline-{uuid.uuid4().hex[:8]}")
    seconds: dict[str, float] = {}
    try:
        body = {
            "file_base64": base64.b64encode(data).decode(),
            "filename": filename,
            "content_type": "application/pdf",
            "container": "bench.pipeline",
        }
        check(handlers.call("POST", "/v1/documents", tenant_id, body), 202)
        (ref,) = starter.started
        ctx = deps.pipeline_context()
        for step in TIMED_STEPS:
            started = time.perf_counter()
            run.STEP_FUNCTIONS[step](ctx, ref)
            seconds[step] = time.perf_counter() - started
        chunks = _embedded_chunks(local, ref, embedder.model_id)
        finish.mark_done(ctx, ref)
    finally:
        # The stored PDF and work files, then the rows (the tenant's delete cascades).
        deps.blob_store().delete_prefix(f"{local.settings.work_prefix}{tenant_id}/")
        drop_tenant(local, tenant_id)
    total = sum(seconds.values())
    log(f"  pipeline: {pages} pages, {len(data) / 1024:.0f} KB, {chunks} chunks in {total:.1f}s")
    return throughput_figures(pages, chunks, seconds)


def _embedded_chunks(local: LocalDatabase, ref: DocumentRef, model: str) -> int:
    """The chunk count, after checking that every chunk got its vector (or the figure would flatter)."""
    with local.app.tenant(ref.tenant_id) as cur:
        row = cur.execute(
            "SELECT count(*) AS chunks, count(embedding) FILTER (WHERE embedding_model = %s) AS embedded "
            "FROM chunks WHERE document_id = %s",
            (model, ref.document_id),
        ).fetchone()
    assert row is not None
    if row["chunks"] == 0 or row["embedded"] != row["chunks"]:
        raise RuntimeError(
            f"document {ref.document_id}: {row['embedded']} of {row['chunks']} chunks embedded"
        )
    return int(row["chunks"])


def throughput_figures(pages: int, chunks: int, seconds: dict[str, float]) -> list[Figure]:
    section = f"pipeline throughput (generated {pages}-page PDF, local model; no target in the issue)"
    figures = [
        Figure(
            key="pipeline.pages_per_s",
            section=section,
            name="pages/s through extract, chunk and embed",
            value=pages / sum(seconds.values()),
            unit="pages/s",
        )
    ]
    figures += [
        Figure(key=f"pipeline.{step}.seconds", section=section, name=f"{step} step", value=s, unit="s")
        for step, s in seconds.items()
    ]
    figures.append(
        Figure(key="pipeline.chunks", section=section, name="chunks embedded", value=chunks, unit="chunks")
    )
    return figures
