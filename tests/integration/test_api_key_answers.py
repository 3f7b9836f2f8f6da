"""An API key is one header, and a refused key tells nothing (issue 14): several x-api-key headers are
refused, by the authorizer and by every handler (in AWS the authorizer's cached answer for one of the
keys could otherwise let the request through); an unknown and a revoked key get the same answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram.api.routes import AUTHORIZER_FUNCTION
from engram.local.functions import LocalLambdaContext, handler_of
from engram.local.gateway import LocalGateway
from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
SEVERAL = "send exactly one x-api-key header: this request has several"


def _event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return event


@pytest.mark.parametrize("second", ["x-api-key", "X-API-Key"])
def test_two_api_key_headers_are_refused_through_the_gateway(
    gateway: LocalGateway, tenant: IssuedKey, other_tenant: IssuedKey, second: str
) -> None:
    caller = Api(gateway, tenant.plaintext)
    mine = caller.post("/v1/memories", {"content": "mine"}).json

    response = caller.get(f"/v1/memories/{mine['id']}", repeated=[(second, other_tenant.plaintext)])
    listed = caller.post("/v1/memories/list", {}, repeated=[(second, other_tenant.plaintext)])

    for refused in (response, listed):
        assert refused.status == 403, refused.json
        assert refused.json["error"] == {"code": "forbidden", "message": SEVERAL}
    same_key_twice = caller.post("/v1/memories/list", {}, repeated=[(second, tenant.plaintext)])
    assert same_key_twice.status == 403
    assert Api(gateway, other_tenant.plaintext).post("/v1/memories/list", {}).json["memories"] == []


def test_the_authorizer_denies_an_event_with_several_keys(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    event = _event("authorizer.json")
    event["headers"]["x-api-key"] = tenant.plaintext
    event["multiValueHeaders"]["x-api-key"] = ["engram_someone-else", tenant.plaintext]

    result = handler_of(AUTHORIZER_FUNCTION)(event, LocalLambdaContext(AUTHORIZER_FUNCTION))

    assert result["policyDocument"]["Statement"][0]["Effect"] == "Deny"
    assert result["context"] == {"reason": SEVERAL}
    assert "usageIdentifierKey" not in result


def test_a_handler_refuses_several_keys_even_when_the_authorizer_allowed_one(tenant: IssuedKey) -> None:
    # What API Gateway sends after a cached Allow for the last key: the context and every header value.
    event = _event("memories.list.json")
    event["requestContext"]["authorizer"].update(
        tenantId=str(tenant.tenant_id), tenantName=tenant.tenant_name
    )
    event["multiValueHeaders"]["x-api-key"] = ["engram_someone-else", tenant.plaintext]

    response = handler_of("memories")(event, LocalLambdaContext("memories"))

    assert response["statusCode"] == 403
    assert json.loads(response["body"])["error"]["message"] == SEVERAL


def test_unknown_and_revoked_keys_get_the_same_answer(
    gateway: LocalGateway, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    unknown = Api(gateway, "engram_not-a-real-key").get("/v1/stats")
    tenants.revoke_key(local_db.admin, tenant.tenant_name, prefix=tenant.prefix)
    revoked = Api(gateway, tenant.plaintext).get("/v1/stats")

    assert unknown.status == revoked.status == 403
    assert unknown.raw == revoked.raw
    assert unknown.json["error"] == {"code": "forbidden", "message": "unknown or revoked API key"}
