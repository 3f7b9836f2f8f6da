"""Extract time per type of file: a generated file of each family (Word, Excel, PowerPoint, TypeScript,
Go, a scanned PDF page, a PNG) sent to `POST /v1/documents`, then the real detect and extract steps
(engram.pipeline.run), the extract timed (median of 3). OCR runs only where tesseract is installed."""

from __future__ import annotations

import base64
import io
import shutil
import statistics
import time
import uuid
from collections.abc import Callable

from engram import deps
from engram.local.stack import LocalDatabase
from engram.pipeline import run
from engram.providers.embeddings import Embedder
from engram.tenants import service as tenants
from tests import ingest_files as files
from tests.bench.harness import Handlers, check
from tests.bench.pipeline import RecordingStarter
from tests.bench.report import Figure
from tests.bench.writes import drop_tenant

RUNS = 3


def _docx(paragraphs: int, rows: int) -> bytes:
    import docx

    document = docx.Document()
    for index in range(paragraphs):
        if index % 20 == 0:
            document.add_heading(f"Section {index // 20 + 1}", 1)
        document.add_paragraph(
            f"Paragraph {index} explains how service {index % 17} is deployed and rolled back."
        )
    table = document.add_table(rows=rows + 1, cols=3)
    for r in range(rows + 1):
        for c, value in enumerate(
            ("Service", "Owner", "Tier") if r == 0 else (f"svc-{r}", f"team {r % 9}", "1")
        ):
            table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xlsx(rows: int) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    for name in ("Orders", "Customers"):
        sheet = workbook.create_sheet(name)
        sheet.append(["Id", "Name", "Amount", "Region"])
        for r in range(rows):
            sheet.append([r, f"{name[:-1]} {r}", r * 1.5, ("EU", "US", "APAC")[r % 3]])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def _pptx(slides: int) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for index in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = f"Slide {index}: quarterly review"
        slide.placeholders[1].text = "\n".join(f"Point {p} of slide {index}" for p in range(5))
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for slide {index}."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def samples() -> dict[str, tuple[str, bytes]]:
    """type -> (file name, bytes). The code files are the tests' samples repeated to ~2000 lines."""
    ts = "\n".join(
        files.TYPESCRIPT.replace("Cart", f"Cart{i}").replace("checkout", f"checkout{i}") for i in range(80)
    )
    go = files.GO + "\n".join(
        files.GO.split("\n", 3)[3].replace("Invoice", f"Invoice{i}") for i in range(100)
    )
    found = {
        "docx": ("handbook.docx", _docx(400, 100)),
        "xlsx": ("orders.xlsx", _xlsx(1000)),
        "pptx": ("review.pptx", _pptx(30)),
        "typescript": ("cart.ts", ts.encode()),
        "go": ("billing.go", go.encode()),
    }
    if shutil.which("tesseract"):
        found["scanned_pdf"] = ("scan.pdf", files.scanned_pdf(scanned_pages=1))
        found["png"] = ("invoice.png", files.text_image(files.SCANNED_LINES))
    return found


def extract_by_type(
    handlers: Handlers, local: LocalDatabase, embedder: Embedder, log: Callable[[str], None]
) -> list[Figure]:
    starter = RecordingStarter()
    deps.install(deps.Deps(settings=local.settings, database=local.app, embedder=embedder, starter=starter))
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-types-{uuid.uuid4().hex[:8]}")
    section = "extract per type (generated files, median of 3; no target in the issue)"
    figures: list[Figure] = []
    try:
        ctx = deps.pipeline_context()
        for kind, (filename, data) in samples().items():
            body = {
                "file_base64": base64.b64encode(data).decode(),
                "filename": filename,
                "container": "bench",
            }
            check(handlers.call("POST", "/v1/documents", tenant_id, body), 202)
            ref = starter.started[-1]
            family = (run.STEP_FUNCTIONS["detect"](ctx, ref) or {})["family"]
            seconds = []
            for _ in range(RUNS):
                started = time.perf_counter()
                run.STEP_FUNCTIONS["extract"](ctx, ref)
                seconds.append(time.perf_counter() - started)
            ms = statistics.median(seconds) * 1000
            log(f"  extract {kind}: {len(data) / 1024:.0f} KB ({family}) in {ms:.0f} ms")
            figures.append(
                Figure(
                    key=f"pipeline.extract.{kind}.ms",
                    section=section,
                    name=f"{kind} ({filename}, {len(data) / 1024:.0f} KB, {family} function)",
                    value=ms,
                    unit="ms",
                )
            )
        if not shutil.which("tesseract"):
            log("  extract scanned_pdf, png: skipped (tesseract is not installed)")
    finally:
        deps.blob_store().delete_prefix(f"{local.settings.work_prefix}{tenant_id}/")
        drop_tenant(local, tenant_id)
    return figures
