"""`engram keys ... --stage`: API Gateway keys (moto) whose value is the Engram key, on the usage plan,
with the hash stored by the real admin handler on the embedded PostgreSQL; the wire format of the
admin invocation and of the stack lookup with botocore's Stubber."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

from engram import cli, deps
from engram.errors import Forbidden, InvalidInput, NotFound
from engram.local.functions import LocalLambdaContext, handler_of
from engram.local.stack import LocalDatabase
from engram.tenants.aws_keys import AdminFunctionError, AwsKeys, StageResources, api_key_name
from engram.tenants.service import authenticate

REGION = "us-east-1"


def _payload(body: dict[str, Any]) -> StreamingBody:
    raw = json.dumps(body).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


class AdminLambda:
    """Stands in for `boto3.client("lambda")`: runs the real admin handler and records each payload."""

    def __init__(self) -> None:
        self.payloads: list[bytes] = []

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        assert InvocationType == "RequestResponse"
        self.payloads.append(Payload)
        result = handler_of("admin")(json.loads(Payload), LocalLambdaContext(function_name=FunctionName))
        return {"StatusCode": 200, "Payload": _payload(result)}


class BrokenLambda:
    def invoke(self, **_: Any) -> dict[str, Any]:
        return {
            "StatusCode": 200,
            "FunctionError": "Unhandled",
            "Payload": _payload({"errorMessage": "boom"}),
        }


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


@pytest.fixture
def admin_db(local_db: LocalDatabase) -> Iterator[None]:
    previous = deps.current()
    deps.install(
        deps.Deps(
            settings=previous.settings,
            database=previous.database,
            embedder=previous.embedder,
            admin_database=local_db.admin,
        )
    )
    yield
    deps.install(previous)


@pytest.fixture
def apigateway(aws: None) -> Any:
    return boto3.client("apigateway", region_name=REGION)


@pytest.fixture
def resources(apigateway: Any) -> StageResources:
    plan = apigateway.create_usage_plan(name="engram-test", throttle={"rateLimit": 5, "burstLimit": 10})
    return StageResources("test", plan["id"], "engram-test-admin", "https://api.example/test/")


@pytest.fixture
def keys(admin_db: None, apigateway: Any, resources: StageResources) -> AwsKeys:
    return AwsKeys(resources, apigateway=apigateway, lambda_client=AdminLambda())


def _tenant() -> str:
    return f"k-{uuid.uuid4().hex[:12]}"


def test_create_puts_the_key_on_the_usage_plan_and_its_hash_in_the_database(
    keys: AwsKeys, apigateway: Any, resources: StageResources, local_db: LocalDatabase
) -> None:
    tenant = _tenant()

    issued = keys.create(tenant, label="ci")

    (api_key,) = apigateway.get_api_keys(includeValues=True)["items"]
    assert api_key["value"] == issued.plaintext and api_key["enabled"] is True
    assert api_key["name"] == api_key_name("test", tenant, issued.prefix)
    plan_keys = apigateway.get_usage_plan_keys(usagePlanId=resources.usage_plan_id)["items"]
    assert [k["id"] for k in plan_keys] == [api_key["id"]]
    principal = authenticate(local_db.app, issued.plaintext)
    assert (principal.tenant_id, principal.tenant_name, principal.key_id) == (
        issued.tenant_id,
        tenant,
        issued.key_id,
    )


def test_the_plaintext_key_never_reaches_the_admin_function(keys: AwsKeys) -> None:
    issued = keys.create(_tenant())

    assert isinstance(keys.lambda_client, AdminLambda)
    (sent,) = keys.lambda_client.payloads
    assert issued.plaintext.encode() not in sent
    assert json.loads(sent)["prefix"] == issued.prefix


def test_revoke_by_key_refuses_it_in_the_database_and_deletes_the_gateway_key(
    keys: AwsKeys, apigateway: Any, local_db: LocalDatabase
) -> None:
    tenant = _tenant()
    issued = keys.create(tenant)
    kept = keys.create(tenant)

    assert keys.revoke(tenant, plaintext=issued.plaintext) == 1

    remaining = apigateway.get_api_keys(includeValues=True)["items"]
    assert [k["value"] for k in remaining] == [kept.plaintext]
    with pytest.raises(Forbidden, match="revoked"):
        authenticate(local_db.app, issued.plaintext)
    assert authenticate(local_db.app, kept.plaintext).key_id == kept.key_id


def test_revoke_by_prefix(keys: AwsKeys, apigateway: Any) -> None:
    tenant = _tenant()
    issued = keys.create(tenant)

    assert keys.revoke(tenant, prefix=issued.prefix) == 1
    assert apigateway.get_api_keys()["items"] == []
    assert keys.revoke(tenant, prefix=issued.prefix) == 0


def test_list_shows_active_and_revoked_keys(keys: AwsKeys) -> None:
    tenant = _tenant()
    first, second = keys.create(tenant, label="one"), keys.create(tenant, label="two")
    keys.revoke(tenant, plaintext=first.plaintext)

    listed = {k["prefix"]: k for k in keys.list_keys(tenant)}

    assert listed[first.prefix]["revoked_at"] is not None and listed[first.prefix]["name"] == "one"
    assert listed[second.prefix]["revoked_at"] is None


def test_a_failed_store_deletes_the_gateway_key_again(apigateway: Any, resources: StageResources) -> None:
    keys = AwsKeys(resources, apigateway=apigateway, lambda_client=BrokenLambda())

    with pytest.raises(AdminFunctionError, match="boom"):
        keys.create(_tenant())

    assert apigateway.get_api_keys()["items"] == []


def test_a_bad_tenant_name_is_refused_before_anything_is_created(keys: AwsKeys, apigateway: Any) -> None:
    with pytest.raises(InvalidInput, match="invalid tenant name"):
        keys.create("Not A Tenant")
    assert apigateway.get_api_keys()["items"] == []


def test_admin_refusals_come_back_as_clear_errors(keys: AwsKeys) -> None:
    with pytest.raises(InvalidInput, match="no tenant named"):
        keys.revoke(_tenant(), prefix="engram_abcdef")
    with pytest.raises(InvalidInput, match="key_hash"):
        keys.invoke_admin({"action": "register_key", "tenant": "x", "key_hash": "zz", "prefix": "p"})


def test_invoke_admin_sends_a_request_response_invocation_and_reads_the_result() -> None:
    client = boto3.client("lambda", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    resources = StageResources("test", "plan", "engram-test-admin", "https://api.example/test/")
    keys = AwsKeys(resources, apigateway=None, lambda_client=client)
    request = {"action": "list_keys", "tenant": "acme"}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": _payload({"ok": True, "keys": []})},
            {
                "FunctionName": "engram-test-admin",
                "InvocationType": "RequestResponse",
                "Payload": json.dumps(request).encode(),
            },
        )
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": _payload({"errorMessage": "boom"})},
        )
        assert keys.invoke_admin(request) == {"ok": True, "keys": []}
        with pytest.raises(AdminFunctionError, match="boom"):
            keys.invoke_admin(request)


def test_stage_resources_come_from_the_stack_outputs() -> None:
    client = boto3.client(
        "cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    outputs = [
        {"OutputKey": "UsagePlanId", "OutputValue": "plan1"},
        {"OutputKey": "AdminFunctionName", "OutputValue": "engram-prod-admin"},
        {"OutputKey": "ApiUrl", "OutputValue": "https://abc.execute-api.eu-west-1.amazonaws.com/prod/"},
    ]
    stack = {
        "StackName": "Engram-prod",
        "CreationTime": "2026-01-01T00:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
    }
    with Stubber(client) as stub:
        stub.add_response(
            "describe_stacks", {"Stacks": [{**stack, "Outputs": outputs}]}, {"StackName": "Engram-prod"}
        )
        stub.add_response("describe_stacks", {"Stacks": [{**stack, "Outputs": outputs[:1]}]})
        stub.add_client_error(
            "describe_stacks", "ValidationError", "Stack with id Engram-prod does not exist"
        )

        found = StageResources.from_stack(client, "prod")
        assert (found.usage_plan_id, found.admin_function) == ("plan1", "engram-prod-admin")
        with pytest.raises(NotFound, match="AdminFunctionName"):
            StageResources.from_stack(client, "prod")
        with pytest.raises(NotFound, match="make deploy STAGE=prod"):
            StageResources.from_stack(client, "prod")


def test_cli_with_stage_prints_the_key_once_as_the_last_line(
    keys: AwsKeys, apigateway: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[tuple[str, str | None]] = []

    def for_stage(stage: str, *, region: str | None = None) -> AwsKeys:
        asked.append((stage, region))
        return keys

    monkeypatch.setattr(AwsKeys, "for_stage", staticmethod(for_stage))
    tenant = _tenant()

    assert cli.main(["keys", "create", "--tenant", tenant, "--stage", "test", "--region", "eu-west-1"]) == 0

    lines = capsys.readouterr().out.strip().splitlines()
    (api_key,) = apigateway.get_api_keys(includeValues=True)["items"]
    assert lines[-1] == api_key["value"]
    assert sum(api_key["value"] in line for line in lines) == 1
    assert asked == [("test", "eu-west-1")]
    assert cli.main(["keys", "revoke", "--tenant", tenant, "--stage", "test", "--key", lines[-1]]) == 0
    assert apigateway.get_api_keys()["items"] == []


def test_cli_revoking_a_key_that_matches_none_says_so_on_stderr_and_exits_1(
    keys: AwsKeys, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(AwsKeys, "for_stage", staticmethod(lambda stage, region=None: keys))
    tenant = _tenant()
    assert cli.main(["keys", "create", "--tenant", tenant, "--stage", "test"]) == 0
    capsys.readouterr()

    code = cli.main(["keys", "revoke", "--tenant", tenant, "--stage", "test", "--key", "bogus"])

    said = capsys.readouterr()
    assert code == 1 and said.out == ""
    assert said.err == f"engram: no active key of tenant {tenant!r} matched; none revoked\n"


def test_without_stage_the_cli_keeps_the_local_path() -> None:
    args = cli.build_parser().parse_args(["keys", "create", "--tenant", "acme"])
    assert args.stage is None and args.func is cli.cmd_keys
