"""cdk-nag's AwsSolutions pack, run at every synth. cdk-nag 3.x is a CDK policy-validation plugin: synth
fails on any finding that is not acknowledged. Each acknowledgement is scoped to the constructs it is
about and says why the finding does not apply (they are also written into the template's metadata)."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from infra.stack import EngramStack

LAMBDA_BASIC = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
LAMBDA_VPC = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
APIGW_LOGS = "arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))


def check_with_nag(app: cdk.App, stack: EngramStack) -> None:
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    _acknowledge_findings(stack)


def _acknowledge_findings(stack: EngramStack) -> None:
    network, database, functions, api = stack.network, stack.database, stack.functions, stack.api
    acknowledge(
        network.endpoint_security_group,
        "AwsSolutions-EC23",
        "The rule cannot read the peer: it is the VPC's own CIDR (a token at synth), HTTPS only, "
        "never 0.0.0.0/0.",
    )
    if not stack.config.protect_data:
        acknowledge(
            database.cluster,
            "AwsSolutions-RDS10",
            "The dev stage is disposable (`make destroy` must work); every other stage has deletion "
            "protection and a snapshot on removal (context deletion_protection).",
        )
    for function in functions.functions.values():
        assert function.role is not None
        acknowledge(
            function.role,
            f"AwsSolutions-IAM4[Policy::{LAMBDA_BASIC}]",
            "AWS's minimal policy for a function to write its own CloudWatch logs.",
        )
        acknowledge(
            function.role,
            f"AwsSolutions-IAM4[Policy::{LAMBDA_VPC}]",
            "AWS's minimal policy for a VPC function to manage its network interfaces; the EC2 ENI actions "
            "support no resource-level scoping.",
        )
        acknowledge(
            function.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Only xray:PutTraceSegments and xray:PutTelemetryRecords (active tracing), which have no "
            "resource-level permissions; tests/infra asserts no other action gets Resource '*'.",
        )
        acknowledge(
            function,
            "AwsSolutions-L1",
            "Pinned to python3.12 on purpose: the dependencies layer is built from cp312 aarch64 wheels "
            "(infra/build.py); moving runtimes is a deliberate change of both.",
        )
    acknowledge(
        api.rest_api,
        "AwsSolutions-APIG2",
        "Parameters are validated by API Gateway; JSON bodies are validated by each handler with pydantic, "
        "which answers 422 naming the field (an API Gateway model would answer a vaguer 400 first).",
    )
    acknowledge(
        api.rest_api,
        f"AwsSolutions-IAM4[Policy::{APIGW_LOGS}]",
        "The account-level role API Gateway needs to write access and execution logs; AWS's policy is the "
        "documented minimum.",
    )
    acknowledge(
        api.rest_api,
        "AwsSolutions-APIG3",
        "No WAF by default (about $6/month plus per-request fees): every /v1 route needs an API key and "
        "the usage plan throttles and caps each key. Attach a web ACL to the stage for public exposure.",
    )
    acknowledge(
        api.rest_api,
        "AwsSolutions-COG4",
        "Clients are agents and services, not Cognito users: every /v1 method uses the Lambda REQUEST "
        "authorizer, which maps the API key to a tenant, plus an API key required by the usage plan.",
    )
    for method in api.public_methods:
        acknowledge(
            method,
            "AwsSolutions-APIG4",
            "Deliberately public (GET /health, for load balancers and uptime checks): it answers only "
            "{status, database} and touches no tenant data. Public routes are marked in engram.api.routes.",
        )
