"""The REST API: generated from the route table; every /v1 method needs an API key and the authorizer."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from engram.api.routes import AUTHORIZER_FUNCTION, ROUTES
from infra.build import Assets
from tests.infra.conftest import ACCOUNT, REGION, Synth, project_context, synthesize
from tests.infra.helpers import api_methods, engram_functions, ref, refs_in


def test_methods_are_exactly_the_route_table(dev: Synth) -> None:
    assert set(api_methods(dev)) == {(route.method, route.path) for route in ROUTES}


def test_each_method_calls_the_function_the_route_table_names(dev: Synth) -> None:
    functions = engram_functions(dev)
    methods = api_methods(dev)
    for route in ROUTES:
        integration = methods[(route.method, route.path)]["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert refs_in(integration["Uri"]) == {functions[route.function]}, route


def test_every_v1_method_requires_an_api_key_and_the_request_authorizer(dev: Synth) -> None:
    (authorizer,) = dev.of_type("AWS::ApiGateway::Authorizer")
    v1 = {key: props for key, props in api_methods(dev).items() if key[1].startswith("/v1/")}
    assert len(v1) == sum(1 for r in ROUTES if r.path.startswith("/v1/"))
    for key, props in v1.items():
        assert props["ApiKeyRequired"] is True, key
        assert props["AuthorizationType"] == "CUSTOM", key
        assert ref(props["AuthorizerId"]) == authorizer, key


def test_only_routes_marked_public_skip_the_authorizer(dev: Synth) -> None:
    public = {(r.method, r.path) for r in ROUTES if not r.authorized}
    assert public == {("GET", "/health")}
    for key, props in api_methods(dev).items():
        if key in public:
            assert props["AuthorizationType"] == "NONE" and not props.get("ApiKeyRequired")


def test_authorizer_reads_the_key_header_caches_and_feeds_usage_plans(dev: Synth) -> None:
    (authorizer,) = dev.of_type("AWS::ApiGateway::Authorizer")
    props = dev.props(authorizer)
    assert props["Type"] == "REQUEST"
    assert props["IdentitySource"] == "method.request.header.x-api-key"
    assert props["AuthorizerResultTtlInSeconds"] == 300
    assert refs_in(props["AuthorizerUri"]) == {engram_functions(dev)[AUTHORIZER_FUNCTION]}
    (api,) = dev.of_type("AWS::ApiGateway::RestApi")
    assert dev.props(api)["ApiKeySourceType"] == "AUTHORIZER"


def test_usage_plan_throttles_and_caps_each_key_on_the_stage(dev: Synth) -> None:
    (plan,) = dev.of_type("AWS::ApiGateway::UsagePlan")
    (stage,) = dev.of_type("AWS::ApiGateway::Stage")
    props = dev.props(plan)
    assert props["Throttle"] == {"RateLimit": 50, "BurstLimit": 100}
    assert props["Quota"] == {"Limit": 100000, "Period": "DAY"}
    assert [ref(s["Stage"]) for s in props["ApiStages"]] == [stage]


def test_stage_has_access_logs_xray_and_execution_logging(dev: Synth) -> None:
    (stage,) = dev.of_type("AWS::ApiGateway::Stage")
    props = dev.props(stage)
    assert props["StageName"] == "dev"
    assert props["TracingEnabled"] is True
    log_group = ref(props["AccessLogSetting"]["DestinationArn"])
    assert dev.resources[log_group]["Type"] == "AWS::Logs::LogGroup"
    assert '"status":"$context.status"' in props["AccessLogSetting"]["Format"]
    (all_methods,) = [m for m in props["MethodSettings"] if m["HttpMethod"] == "*"]
    assert all_methods["LoggingLevel"] == "ERROR" and all_methods["MetricsEnabled"] is True


def test_gateway_errors_use_the_api_error_shape(dev: Synth) -> None:
    responses = {
        dev.props(k)["ResponseType"]: dev.props(k) for k in dev.of_type("AWS::ApiGateway::GatewayResponse")
    }
    for kind in (
        "UNAUTHORIZED",
        "ACCESS_DENIED",
        "THROTTLED",
        "QUOTA_EXCEEDED",
        "DEFAULT_4XX",
        "DEFAULT_5XX",
    ):
        template = responses[kind]["ResponseTemplates"]["application/json"]
        assert template.startswith('{"error": {"code": '), kind
    assert responses["UNAUTHORIZED"]["StatusCode"] == "401"
    assert responses["THROTTLED"]["StatusCode"] == "429"


def test_an_authorizer_failure_is_a_503_refused_before_any_handler_with_retry_after(dev: Synth) -> None:
    (failure,) = [
        dev.props(k)
        for k in dev.of_type("AWS::ApiGateway::GatewayResponse")
        if dev.props(k)["ResponseType"] == "AUTHORIZER_FAILURE"
    ]

    assert failure["StatusCode"] == "503"
    assert failure["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'2'"
    template = json.loads(failure["ResponseTemplates"]["application/json"])
    assert template["error"]["code"] == "not_handled"


def test_a_throttled_or_over_quota_key_is_told_when_to_try_again(dev: Synth) -> None:
    responses = {
        dev.props(k)["ResponseType"]: dev.props(k) for k in dev.of_type("AWS::ApiGateway::GatewayResponse")
    }

    throttled, over_quota = responses["THROTTLED"], responses["QUOTA_EXCEEDED"]

    assert (throttled["StatusCode"], over_quota["StatusCode"]) == ("429", "429")
    assert throttled["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"
    assert over_quota["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'3600'"


def test_one_invoke_permission_per_function_and_none_for_test_invoke(dev: Synth) -> None:
    permissions = [
        p["Properties"]
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    targets = [ref(p["FunctionName"]) for p in permissions]
    assert len(targets) == len(set(targets)), "one permission per function, not one per method"
    assert not [p for p in permissions if "test-invoke-stage" in json.dumps(p["SourceArn"])]
    assert len(targets) == len({r.function for r in ROUTES}) + 1  # the endpoint groups and the authorizer


def test_api_gateway_account_role_only_on_opt_in_and_kept_on_destroy(
    dev: Synth, tmp_path_factory: pytest.TempPathFactory, assets: Assets
) -> None:
    assert not dev.of_type("AWS::ApiGateway::Account")
    opted = synthesize(
        tmp_path_factory.mktemp("cdk-role"),
        assets,
        {**project_context(), "api_cloudwatch_role": "true"},
        cdk.Environment(account=ACCOUNT, region=REGION),
    )
    assert opted.error is None, opted.error
    (account,) = opted.of_type("AWS::ApiGateway::Account").items()
    role = ref(account[1]["Properties"]["CloudWatchRoleArn"])
    for logical in (account[0], role):
        assert opted.resources[logical]["DeletionPolicy"] == "Retain", logical


def test_the_api_is_a_nested_template_of_its_own_and_the_functions_stay_in_the_parent(dev: Synth) -> None:
    # Given the templates CloudFormation receives: the stack's, then the API's
    (root, api) = dev.templates.values()
    (nested,) = [k for k, r in root.resources.items() if r["Type"] == "AWS::CloudFormation::Stack"]
    # Then every API Gateway resource is in the API's template, every function in the parent's
    api_types = {r["Type"] for r in api.resources.values()}
    assert {"AWS::ApiGateway::RestApi", "AWS::ApiGateway::Method", "AWS::ApiGateway::UsagePlan"} <= api_types
    assert not [k for k, r in root.resources.items() if r["Type"].startswith("AWS::ApiGateway::")]
    assert not api.of_type("AWS::Lambda::Function", "AWS::IAM::Role")
    assert len(api.of_type("AWS::ApiGateway::Method")) == len(ROUTES)
    # And the API names the functions through parameters that the parent fills with their ARNs
    passed = root.props(nested)["Parameters"]
    functions = engram_functions(dev)
    expected = {functions[r.function] for r in ROUTES} | {functions[AUTHORIZER_FUNCTION]}
    assert {ref(value) for value in passed.values()} == expected
