"""The REST API: generated from the route table; every /v1 method needs an API key and the authorizer."""

from __future__ import annotations

from engram.api.routes import AUTHORIZER_FUNCTION, ROUTES
from tests.infra.conftest import Synth
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
