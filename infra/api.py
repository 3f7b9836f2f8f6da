"""The REST API, generated from engram.api.routes.ROUTES so the local front and AWS never disagree.

It is a nested stack of its own: a route costs a method and often a path resource, so the API is the
part of the stack that grows fastest, and CloudFormation's limits (500 resources, 1 MB) hold per
template. The functions stay in the parent (the API's template names them through parameters, which CDK
wires); the deploy gate checks each template's budgets and lint, and reads the stack flattened for the
rest (infra/gate/nested.py).

Every authorized route requires an API key and the Lambda REQUEST authorizer. The authorizer maps the
key to a tenant, API Gateway caches its answer per key, and the API's key source is AUTHORIZER: the
authorizer hands the key back as `usageIdentifierKey`, so the usage plan throttles and meters each key.
Errors API Gateway answers itself (no key, throttled, unknown route) use the API's error shape.

Each function gets one permission for the whole API (not one per method, and none for the console's
test-invoke): a route added to the table costs two resources, not four. API Gateway's region-wide
CloudWatch role (AWS::ApiGateway::Account) is made only with `-c api_cloudwatch_role=true`, for an
account that has none, and is kept on `cdk destroy`: every REST API in the region logs through it.
"""

from __future__ import annotations

import json

from aws_cdk import Duration, NestedStack, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from engram.api.routes import AUTHORIZER_FUNCTION, ROUTES
from engram.auth import API_KEY_HEADER
from engram.limits import TOO_LARGE_MESSAGE
from engram.unavailable import (
    AUTHORIZER_SECONDS,
    NOT_HANDLED,
    QUOTA_EXCEEDED_SECONDS,
    THROTTLED_SECONDS,
    retry_after,
)
from infra.config import StageConfig, log_retention
from infra.functions import Functions

# API Gateway's own answers, in the shape every Engram error has: {"error": {"code", "message"}}.
GATEWAY_ERRORS: dict[str, tuple[apigw.ResponseType, str, str, str]] = {
    "Unauthorized": (
        apigw.ResponseType.UNAUTHORIZED,
        "401",
        "unauthorized",
        "missing API key: send it in the x-api-key header",
    ),
    "AccessDenied": (apigw.ResponseType.ACCESS_DENIED, "403", "forbidden", "$context.authorizer.reason"),
    "InvalidApiKey": (apigw.ResponseType.INVALID_API_KEY, "403", "forbidden", "unknown or revoked API key"),
    "NoRoute": (
        apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN,
        "404",
        "not_found",
        "no route for $context.httpMethod $context.path",
    ),
    "Throttled": (apigw.ResponseType.THROTTLED, "429", "throttled", "too many requests; slow down and retry"),
    "QuotaExceeded": (
        apigw.ResponseType.QUOTA_EXCEEDED,
        "429",
        "quota_exceeded",
        "this API key's daily quota is used up",
    ),
    "TooLarge": (
        apigw.ResponseType.REQUEST_TOO_LARGE,
        "413",
        "payload_too_large",
        TOO_LARGE_MESSAGE,
    ),
    # The authorizer failed (the database unreachable, a timeout): no handler ran, so the request (a
    # write too) may be sent again, after GATEWAY_HEADERS' Retry-After.
    "AuthorizerFailure": (
        apigw.ResponseType.AUTHORIZER_FAILURE,
        "503",
        NOT_HANDLED,
        "the API key could not be checked; retry later",
    ),
}


def _quoted_retry_after(seconds: int) -> dict[str, str]:
    return {name: f"'{value}'" for name, value in retry_after(seconds).items()}


# Headers a gateway response sends besides its Content-Type (values quoted, as API Gateway wants them).
GATEWAY_HEADERS: dict[str, dict[str, str]] = {
    "Throttled": _quoted_retry_after(THROTTLED_SECONDS),
    "QuotaExceeded": _quoted_retry_after(QUOTA_EXCEEDED_SECONDS),
    "AuthorizerFailure": _quoted_retry_after(AUTHORIZER_SECONDS),
}
# For the catch-alls the message is API Gateway's own, already quoted and escaped by `messageString`.
GATEWAY_DEFAULTS: dict[apigw.ResponseType, str] = {
    apigw.ResponseType.DEFAULT_4_XX: "bad_request",
    apigw.ResponseType.DEFAULT_5_XX: "upstream_error",
}


class Api(NestedStack):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig, functions: Functions) -> None:
        super().__init__(scope, id, description=f"Engram ({config.stage}): the REST API")
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=f"engram-{config.stage}",
            description="Engram: long-term memory for AI agents",
            api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=config.api_cloudwatch_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if config.api_cloudwatch_role else None,
            deploy_options=apigw.StageOptions(
                stage_name=config.stage,
                tracing_enabled=True,
                metrics_enabled=True,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                throttling_rate_limit=config.throttle_rate * 4,
                throttling_burst_limit=config.throttle_burst * 4,
            ),
        )
        # Parameters are checked here; bodies are validated by each handler (field-level 422s).
        self.authorizer = apigw.RequestAuthorizer(
            self,
            "Authorizer",
            handler=functions[AUTHORIZER_FUNCTION],
            identity_sources=[apigw.IdentitySource.header(API_KEY_HEADER)],
            results_cache_ttl=Duration.seconds(config.authorizer_cache_seconds),
            authorizer_name=f"engram-{config.stage}-api-key",
        )
        self.validator = self.rest_api.add_request_validator(
            "Validator", validate_request_parameters=True, validate_request_body=False
        )
        self.methods: dict[tuple[str, str], apigw.Method] = {
            (route.method, route.path): self._add_route(
                route.method, route.path, functions[route.function], route.authorized
            )
            for route in ROUTES
        }
        self.public_methods = [self.methods[(r.method, r.path)] for r in ROUTES if not r.authorized]
        for name, (response_type, status, code, message) in GATEWAY_ERRORS.items():
            self.rest_api.add_gateway_response(
                name,
                type=response_type,
                status_code=status,
                response_headers={"Content-Type": "'application/json'", **GATEWAY_HEADERS.get(name, {})},
                templates={"application/json": json.dumps({"error": {"code": code, "message": message}})},
            )
        for response_type, code in GATEWAY_DEFAULTS.items():
            self.rest_api.add_gateway_response(
                code.title().replace("_", ""),
                type=response_type,
                response_headers={"Content-Type": "'application/json'"},
                templates={"application/json": _error_template(code)},
            )
        self.usage_plan = self.rest_api.add_usage_plan(
            "UsagePlan",
            name=f"engram-{config.stage}",
            description="Per API key: throttle and daily quota",
            throttle=apigw.ThrottleSettings(
                rate_limit=config.throttle_rate, burst_limit=config.throttle_burst
            ),
            quota=apigw.QuotaSettings(limit=config.quota_per_day, period=apigw.Period.DAY),
        )
        self.usage_plan.add_api_stage(stage=self.rest_api.deployment_stage)

    def _add_route(
        self, method: str, path: str, function: lambda_.IFunction, authorized: bool
    ) -> apigw.Method:
        resource = self.rest_api.root.resource_for_path(path)
        return resource.add_method(
            method,
            apigw.LambdaIntegration(function, proxy=True, scope_permission_to_method=False),
            api_key_required=authorized,
            authorizer=self.authorizer if authorized else None,
            authorization_type=apigw.AuthorizationType.CUSTOM if authorized else apigw.AuthorizationType.NONE,
            request_parameters={f"method.request.path.{name}": True for name in _path_params(path)} or None,
            request_validator=self.validator,
        )


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def _error_template(code: str) -> str:
    # `messageString` is API Gateway's message already quoted and escaped for JSON.
    return '{"error": {"code": "' + code + '", "message": $context.error.messageString}}'
