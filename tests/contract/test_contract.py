"""The API contract, checked end to end: a client generated from GET /openapi.json by
openapi-python-client drives every operation of the local stack over HTTP (each group with its own
tenant), and every response it gets, successes and errors alike, is validated against the document."""

from __future__ import annotations

import traceback
import uuid
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from engram.api.routes import ROUTES
from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from tests.contract.generated import GeneratedApi
from tests.contract.scenarios import SCENARIOS
from tests.contract.validation import ContractChecker


@dataclass
class Run:
    checker: ContractChecker
    failed: dict[str, str] = field(default_factory=dict)


def _error_calls(document: dict[str, Any], live_url: str, key: str, checker: ContractChecker) -> None:
    """Errors a generated client cannot provoke (no key, a wrong key, malformed JSON, a body too large),
    sent by hand; the checker sees them like any other answer."""
    hooks = {"response": [checker.hook()]}
    with httpx.Client(base_url=live_url, event_hooks=hooks, timeout=60) as raw:
        assert raw.get("/v1/stats").status_code == 401
        assert raw.get("/v1/stats", headers={"x-api-key": "engram_not-a-key"}).status_code == 403
        sent = {"x-api-key": key, "Content-Type": "application/json"}
        assert raw.post("/v1/memories", content=b"{not json", headers=sent).status_code == 400
        assert raw.post("/v1/memories", json={"content": ""}, headers=sent).status_code == 422
        too_large = b'{"content": "' + b"x" * (10 * 1024 * 1024) + b'"}'
        assert raw.post("/v1/memories", content=too_large, headers=sent).status_code == 413
        assert (
            raw.put("/v1/working/s/k", json={"value": 1}, headers={**sent, "If-Match": "nope"}).status_code
            == 422
        )


@pytest.fixture(scope="module")
def run(
    generated: ModuleType,
    document: dict[str, Any],
    checker: ContractChecker,
    live_url: str,
    local_db: LocalDatabase,
) -> Run:
    result = Run(checker)
    for name, scenario in SCENARIOS.items():
        key = tenants.issue_key(local_db.admin, f"contract-{name}-{uuid.uuid4().hex[:8]}").plaintext
        try:
            scenario(GeneratedApi(document, live_url, key, checker.hook()))
        except Exception:
            result.failed[name] = traceback.format_exc()
    key = tenants.issue_key(local_db.admin, f"contract-errors-{uuid.uuid4().hex[:8]}").plaintext
    try:
        _error_calls(document, live_url, key, checker)
    except Exception:
        result.failed["errors"] = traceback.format_exc()
    return result


def test_the_document_is_valid_openapi_with_verb_operation_ids(
    document: dict[str, Any], live_url: str
) -> None:
    assert httpx.get(f"{live_url}/openapi.json", timeout=30).json() == document
    validate(document)
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)) == len(ROUTES)
    assert not [i for i in ids if "_v1_" in i or i.endswith(("_get", "_post", "_put", "_delete", "_patch"))]


def test_bounds_are_stated_in_json_schema_words(document: dict[str, Any]) -> None:
    # pydantic leaves `ge`/`le` as they are on a type with a BeforeValidator (fields.Number, Integer):
    # JSON Schema ignores them, and schemathesis sent ttl_seconds 0 as valid (found by the fuzz gate)
    leaked: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            leaked.extend(f"{where}/{k}" for k in node if k in ("ge", "le", "gt", "lt"))
            for key, child in node.items():
                walk(child, f"{where}/{key}")
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{where}[{i}]")

    walk(document, "")
    assert leaked == []
    ttl = document["components"]["schemas"]["WorkingPut"]["properties"]["ttl_seconds"]["anyOf"][0]
    assert (ttl["minimum"], ttl["maximum"]) == (1, 31622400)


def test_every_operation_documents_the_error_shape_and_its_security(document: dict[str, Any]) -> None:
    for route in ROUTES:
        operation = document["paths"][route.path][route.method.lower()]
        errors = {code: r for code, r in operation["responses"].items() if not code.startswith("2")}
        assert "default" in errors and ("401" in errors) == route.authorized, route.operation_id
        for response in errors.values():
            assert response["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorResponse"
            }
        assert (operation.get("security") == []) == (not route.authorized), route.operation_id
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        assert headers == set(route.headers), route.operation_id
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
        "description": "the API key alone decides the tenant",
    }


@pytest.mark.parametrize("group", [*SCENARIOS, "errors"])
def test_the_generated_client_drives_the_group(run: Run, group: str) -> None:
    assert group not in run.failed, run.failed.get(group)


def test_every_response_matches_the_document(run: Run) -> None:
    failures = [f"{e.method} {e.path} -> {e.status}: {'; '.join(e.problems)}" for e in run.checker.failures()]
    assert run.checker.exchanges and not failures, "\n".join(failures)


def test_every_operation_and_every_success_status_it_documents_was_exercised(
    run: Run, document: dict[str, Any]
) -> None:
    documented = {
        (op["operationId"], int(code))
        for ops in document["paths"].values()
        for op in ops.values()
        for code in op["responses"]
        if code.startswith("2")
    }
    seen = {(e.operation_id, e.status) for e in run.checker.exchanges}
    assert documented - seen == set()


def test_the_common_error_statuses_were_answered_in_the_documented_shape(run: Run) -> None:
    seen = {e.status for e in run.checker.exchanges if not e.problems}
    assert {400, 401, 403, 404, 409, 413, 422} <= seen
