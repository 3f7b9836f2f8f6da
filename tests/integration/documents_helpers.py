"""Waiting for documents to finish, without sleeping blindly."""

from __future__ import annotations

import time
from typing import Any

from engram import deps
from engram.pipeline.start import LocalStarter
from tests.conftest import Api

FINAL = ("done", "failed")


def wait_final(api: Api, document_id: str, timeout: float = 120.0) -> dict[str, Any]:
    starter = deps.pipeline_starter()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = api.get(f"/v1/documents/{document_id}").json
        if body["status"] in FINAL:
            return body
        if isinstance(starter, LocalStarter):
            starter.wait_idle(timeout=max(0.1, deadline - time.monotonic()))
        else:  # pragma: no cover - the tests always run the local starter
            time.sleep(0.2)
    raise AssertionError(f"document {document_id} did not finish within {timeout}s")


def ingest(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post("/v1/documents", body)
    assert response.status == 202, response.json
    return wait_final(api, response.json["id"])
