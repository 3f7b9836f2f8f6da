"""`engram preflight`: each check against AWS's answers, recorded with botocore's Stubber (no network)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from engram import preflight
from engram.preflight import Clients, Plan

REGION = "eu-west-1"
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
PROFILE = f"eu.{HAIKU}"
ENDPOINTS = ("secretsmanager", "states", "bedrock-runtime")
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]


def _available(model: str, **overrides: Any) -> dict[str, Any]:
    return {
        "modelId": model,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
        **overrides,
    }


class Account:
    """Stubbed clients; `expect` queues one answer per call, in call order."""

    def __init__(self) -> None:
        session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name=REGION)
        self.clients = Clients(
            rds=session.client("rds"),
            bedrock=session.client("bedrock"),
            ec2=session.client("ec2"),
            apigateway=session.client("apigateway"),
            quotas=session.client("service-quotas"),
        )
        self.stubs = {name: Stubber(getattr(self.clients, name)) for name in Clients.__dataclass_fields__}

    def expect(self, client: str, operation: str, response: dict[str, Any], params: Any = None) -> None:
        self.stubs[client].add_response(operation, response, params)

    def fail(self, client: str, operation: str, code: str) -> None:
        self.stubs[client].add_client_error(operation, service_error_code=code, http_status_code=404)


@pytest.fixture
def account() -> Iterator[Account]:
    acct = Account()
    with ExitStack() as stack:
        for stub in acct.stubs.values():
            stack.enter_context(stub)
        yield acct
        for stub in acct.stubs.values():
            stub.assert_no_pending_responses()


def _healthy(
    acct: Account, *, engine: bool = True, endpoint_zones: list[str] = ZONES, role: bool = True
) -> None:
    acct.expect(
        "rds",
        "describe_orderable_db_instance_options",
        {"OrderableDBInstanceOptions": [{"EngineVersion": "16.13"}] if engine else []},
        {"Engine": "aurora-postgresql", "EngineVersion": "16.13", "DBInstanceClass": "db.serverless"},
    )
    acct.expect("bedrock", "get_foundation_model_availability", _available("amazon.titan-embed-text-v2:0"))
    acct.expect(
        "bedrock",
        "get_inference_profile",
        {
            "inferenceProfileName": "EU Claude Haiku 4.5",
            "inferenceProfileArn": f"arn:aws:bedrock:{REGION}:111111111111:inference-profile/{PROFILE}",
            "models": [{"modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{HAIKU}"}],
            "inferenceProfileId": PROFILE,
            "status": "ACTIVE",
            "type": "SYSTEM_DEFINED",
        },
        {"inferenceProfileIdentifier": PROFILE},
    )
    acct.expect("bedrock", "get_foundation_model_availability", _available(HAIKU), {"modelId": HAIKU})
    acct.expect(
        "ec2",
        "describe_availability_zones",
        {"AvailabilityZones": [{"ZoneName": z} for z in reversed(ZONES)]},
    )
    acct.expect(
        "ec2",
        "describe_vpc_endpoint_services",
        {
            "ServiceDetails": [
                {"ServiceName": f"com.amazonaws.{REGION}.{s}", "AvailabilityZones": endpoint_zones}
                for s in ENDPOINTS
            ]
        },
    )
    acct.expect(
        "apigateway", "get_account", {"cloudwatchRoleArn": "arn:aws:iam::1:role/apigw"} if role else {}
    )
    acct.expect(
        "rds",
        "describe_account_attributes",
        {
            "AccountQuotas": [
                {"AccountQuotaName": "DBClusters", "Used": 3, "Max": 40},
                {"AccountQuotaName": "DBInstances", "Used": 3, "Max": 40},
            ]
        },
    )
    acct.expect("ec2", "describe_vpcs", {"Vpcs": [{"VpcId": "vpc-1"}]})
    acct.expect(
        "quotas",
        "get_service_quota",
        {"Quota": {"Value": 5.0}},
        {"ServiceCode": "vpc", "QuotaCode": "L-F678F1CE"},
    )
    acct.expect(
        "quotas",
        "get_service_quota",
        {"Quota": {"Value": 1000.0}},
        {"ServiceCode": "lambda", "QuotaCode": "L-B99A9384"},
    )


PLAN = Plan(region=REGION, engine_version="16.13", llm_model=PROFILE, interface_endpoints=ENDPOINTS)


def test_a_ready_account_passes_every_check(account: Account) -> None:
    _healthy(account)
    findings = preflight.run(PLAN, account.clients)
    table, ok = preflight.report(findings)
    assert ok, table
    assert all(f.outcome == "ok" for f in findings), table
    assert "interface endpoint bedrock-runtime: in eu-west-1a, eu-west-1b" in table


def test_a_retired_engine_version_fails_with_what_to_do(account: Account) -> None:
    _healthy(account, engine=False)
    findings = {f.check: f for f in preflight.run(PLAN, account.clients)}
    engine = findings["Aurora PostgreSQL 16.13 (Serverless v2)"]
    assert engine.outcome == "fail" and "-c engine_version=" in engine.detail


def test_an_endpoint_service_missing_from_a_chosen_zone_fails(account: Account) -> None:
    _healthy(account, endpoint_zones=["eu-west-1a", "eu-west-1c"])
    findings = [f for f in preflight.run(PLAN, account.clients) if f.check.startswith("interface endpoint")]
    assert {f.outcome for f in findings} == {"fail"}
    assert "not offered in eu-west-1b" in findings[0].detail


def test_no_api_gateway_logging_role_fails_and_names_the_opt_in(account: Account) -> None:
    _healthy(account, role=False)
    table, ok = preflight.report(preflight.run(PLAN, account.clients))
    assert not ok and "-c api_cloudwatch_role=true" in table


def test_models_not_enabled_or_profiles_missing_fail(account: Account) -> None:
    account.expect(
        "bedrock",
        "get_foundation_model_availability",
        _available("amazon.titan-embed-text-v2:0", entitlementAvailability="NOT_AVAILABLE"),
    )
    account.fail("bedrock", "get_inference_profile", "ResourceNotFoundException")
    account.expect(
        "bedrock",
        "get_foundation_model_availability",
        _available(HAIKU, agreementAvailability={"status": "NOT_AVAILABLE"}),
    )
    findings = preflight.models(PLAN, account.clients.bedrock)
    assert [f.outcome for f in findings] == ["fail", "fail", "fail"]
    assert "model access" in findings[0].detail
    assert findings[1].detail.startswith("ResourceNotFoundException") and "llm_model" in findings[1].detail
    assert "agreement" in findings[2].detail


def test_low_lambda_concurrency_warns_and_full_quotas_fail(account: Account) -> None:
    account.expect(
        "rds",
        "describe_account_attributes",
        {"AccountQuotas": [{"AccountQuotaName": "DBClusters", "Used": 40, "Max": 40}]},
    )
    account.expect("ec2", "describe_vpcs", {"Vpcs": [{"VpcId": f"vpc-{i}"} for i in range(5)]})
    account.expect("quotas", "get_service_quota", {"Quota": {"Value": 5.0}})
    account.expect("quotas", "get_service_quota", {"Quota": {"Value": 10.0}})
    findings = {f.check: f for f in preflight.quotas(account.clients)}
    assert findings["quota DBClusters"].outcome == "fail"
    assert findings["quota VPCs"].outcome == "fail"
    assert findings["quota Lambda concurrency"].outcome == "warn"


def test_a_major_version_reports_the_newest_minor_offered(account: Account) -> None:
    account.expect(
        "rds",
        "describe_orderable_db_instance_options",
        {"OrderableDBInstanceOptions": [{"EngineVersion": v} for v in ("16.9", "16.13", "17.4", "16.10")]},
    )
    finding = preflight.engine_version(Plan(REGION, "16", None, ()), account.clients.rds)
    assert (finding.outcome, finding.detail) == ("ok", "newest offered in eu-west-1: 16.13")
