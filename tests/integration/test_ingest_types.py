"""Office documents, code, scanned PDFs and images sent to POST /v1/documents: each routed by the detect
step to its family's extract function, each ending `done` with chunks search finds, or `failed` with a
clear code where OCR is absent. Against the embedded PostgreSQL and the local model."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from engram import deps
from engram.pipeline.readers import Services
from engram.pipeline.readers.image import LlmImageDescriber
from engram.providers.llm_openai import OpenAILLM
from tests import ingest_files as files
from tests.conftest import Api
from tests.integration.documents_helpers import ingest
from tests.integration.pipeline_helpers import with_services
from tests.llm_fakes import scripted_openai_server


class ScriptedOcr:
    name = "scripted"

    def image_text(self, data: bytes, content_type: str) -> str:
        return "\n".join(files.SCANNED_LINES)


@pytest.fixture
def functions_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The pipeline functions the local runner invokes, in order."""
    runner = deps.pipeline_starter().runner  # type: ignore[attr-defined]
    real = runner.invoke
    ran: list[str] = []

    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        ran.append(function)
        return real(function, event)  # type: ignore[no-any-return]

    monkeypatch.setattr(runner, "invoke", invoke)
    yield ran


def _services(monkeypatch: pytest.MonkeyPatch, **services: Any) -> None:
    ctx = deps.pipeline_context()
    monkeypatch.setattr(deps.current(), "pipeline", with_services(ctx, Services(**services)))


def _send(api: Api, data: bytes, filename: str) -> dict[str, Any]:
    return ingest(
        api, {"file_base64": base64.b64encode(data).decode(), "filename": filename, "container": "types"}
    )


def _chunks(api: Api, query: str) -> list[dict[str, Any]]:
    found = api.post("/v1/search", {"query": query, "scope": "chunks", "container": "types"}).json
    return list(found["results"])


CASES = [
    ("handbook.docx", files.docx, "office", "extract_office", "who owns the billing api", "Alice Martin"),
    ("sales.xlsx", files.xlsx, "office", "extract_office", "revenue in Europe Q1", "Revenue: 125000"),
    ("roadmap.pptx", files.pptx, "office", "extract_office", "budget freeze in August", "budget freeze"),
    ("cart.ts", files.TYPESCRIPT.encode, "code", "extract_code", "cart total prices", "class Cart"),
    ("invoice.go", files.GO.encode, "code", "extract_code", "invoice total formats amount due", "Total()"),
]


@pytest.mark.parametrize(
    ("filename", "make", "family", "function", "query", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_each_type_is_routed_to_its_familys_function_and_becomes_searchable_chunks(
    api: Api,
    functions_run: list[str],
    filename: str,
    make: Any,
    family: str,
    function: str,
    query: str,
    expected: str,
) -> None:
    doc = _send(api, make(), filename)

    assert doc["status"] == "done", doc["error"]
    assert functions_run[:2] == ["detect", function]
    assert doc["chunk_count"] >= 1
    assert any(expected in c["content"] for c in _chunks(api, query)[:3]), _chunks(api, query)[:3]


def test_a_workbooks_chunks_name_their_sheets(api: Api) -> None:
    _send(api, files.xlsx(), "staff.xlsx")

    (chunk,) = [c for c in _chunks(api, "which team is Chen Wei on") if "Chen Wei" in c["content"]][:1]
    assert chunk["metadata"]["sheets"] == ["Sales", "Staff"] and "[Staff] Name: Chen Wei" in chunk["content"]


def test_a_scanned_pdf_is_read_by_ocr_and_its_chunks_say_so(
    api: Api, monkeypatch: pytest.MonkeyPatch, functions_run: list[str]
) -> None:
    _services(monkeypatch, ocr=ScriptedOcr())

    doc = _send(api, files.scanned_pdf(scanned_pages=1), "scan.pdf")

    assert doc["status"] == "done", doc["error"]
    assert functions_run[:2] == ["detect", "extract"]  # PDFs are the documents family's
    (chunk,) = [c for c in _chunks(api, "invoice total due") if "INVOICE 4471" in c["content"]]
    assert chunk["metadata"]["sources"] == ["ocr"] and chunk["metadata"]["pages"] == [1, 1]


def test_without_ocr_a_scanned_pdf_and_an_image_fail_ocr_unavailable(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    _services(monkeypatch, ocr=None)

    pdf = _send(api, files.scanned_pdf(scanned_pages=1), "scan.pdf")
    png = _send(api, files.text_image(["hello"]), "photo.png")

    for doc in (pdf, png):
        assert doc["status"] == "failed" and doc["error"]["code"] == "ocr_unavailable", doc["error"]
        assert "tesseract" in doc["error"]["message"] and doc["chunk_count"] == 0


def test_an_image_described_by_the_vision_model_is_stored_as_generated_text(
    api: Api, monkeypatch: pytest.MonkeyPatch, functions_run: list[str]
) -> None:
    answer = json.dumps({"description": "A whiteboard sketch of the payments architecture.", "text": ""})
    with scripted_openai_server([answer]) as server:
        import openai

        llm = OpenAILLM(
            client=openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0), model_id="vis-1"
        )
        _services(monkeypatch, ocr=ScriptedOcr(), describer=LlmImageDescriber(llm))

        doc = _send(api, files.text_image(["payments"]), "board.png")

    assert doc["status"] == "done", doc["error"]
    assert functions_run[:2] == ["detect", "extract_media"]
    (chunk,) = [c for c in _chunks(api, "payments architecture sketch") if "whiteboard" in c["content"]]
    assert chunk["metadata"]["generated"] is True
    assert chunk["metadata"]["sources"] == ["ocr", "vision"]
    assert chunk["content"].startswith("# Image description (generated by openai:vis-1)")
