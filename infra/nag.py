"""cdk-nag's AwsSolutions pack, run at every synth. cdk-nag 3.x is a CDK policy-validation plugin: synth
fails on any finding that is not acknowledged. Each acknowledgement is scoped to the constructs it is
about and says why the finding does not apply. They stay here, in the code: writing them into the
template's metadata would cost ~440 KB of CloudFormation's 1 MB."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from engram.pipeline import steps
from infra.aws_services import LLM_FUNCTIONS, OCR_FUNCTIONS
from infra.build import PIPELINE_PREFIX
from infra.s3_access import S3_ACCESS
from infra.stack import EngramStack

LAMBDA_BASIC = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
LAMBDA_VPC = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
APIGW_LOGS = "arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))


def check_with_nag(app: cdk.App, stack: EngramStack) -> None:
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=False))
    _acknowledge_findings(stack)


def _logical_id(construct: IConstruct) -> str:
    child = construct.node.default_child
    assert isinstance(child, cdk.CfnElement), construct
    return cdk.Stack.of(construct).get_logical_id(child)


def _acknowledge_findings(stack: EngramStack) -> None:
    network, database, functions, api = stack.network, stack.database, stack.functions, stack.api
    _acknowledge_pipeline(stack)
    _acknowledge_storage(stack)
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
            "resource-level permissions; tests/infra asserts no other action gets Resource '*'."
            if not any(function is functions[name] for name in OCR_FUNCTIONS)
            else "X-Ray (active tracing) and, for the extract functions that OCR (documents, media) only, "
            "textract:DetectDocumentText and (media) transcribe:Start/GetTranscriptionJob: none of them "
            "supports resource-level permissions; tests/infra asserts no other action gets Resource '*'.",
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
    if stack.config.api_cloudwatch_role:
        acknowledge(
            api.rest_api,
            f"AwsSolutions-IAM4[Policy::{APIGW_LOGS}]",
            "The account-level role API Gateway needs to write access and execution logs (opted in with "
            "api_cloudwatch_role); AWS's policy is the documented minimum.",
        )
    acknowledge(
        stack.failures.queue,
        "AwsSolutions-SQS3",
        "This queue is the dead-letter queue (async failures of the stack's functions and EventBridge "
        "targets); a DLQ of a DLQ would only move the messages.",
    )
    _acknowledge_prefix_list_lookup(stack)
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


def _acknowledge_pipeline(stack: EngramStack) -> None:
    functions = stack.functions
    partition = "<AWS::Partition>" if cdk.Token.is_unresolved(stack.partition) else stack.partition
    for name in sorted(LLM_FUNCTIONS):
        llm = functions[name]
        assert llm.role is not None
        model = functions.llm.foundation_model
        if functions.llm.provider == "bedrock" and functions.llm.is_profile:
            acknowledge(
                llm.role,
                f"AwsSolutions-IAM5[Resource::arn:{partition}:bedrock:*::foundation-model/{model}]",
                "The one LLM model, in any region: a cross-region inference profile (us./eu./apac.) routes "
                "each request to the model in one of several regions, and Bedrock checks the model's ARN "
                "there.",
            )
    machine = stack.ingestion.state_machine
    acknowledge(
        machine,
        "AwsSolutions-SF1",
        "Logs ERROR events: states carry only ids, and every step logs its own work (Powertools); ALL "
        "would log every transition of every document for no extra insight. X-Ray tracing is on.",
    )
    acknowledge(
        machine.role,
        "AwsSolutions-IAM5[Resource::*]",
        "X-Ray (tracing) and CloudWatch Logs delivery (vended logs): neither supports resource-level "
        "permissions. CDK adds exactly these for tracing_enabled and logs.",
    )
    for step in (*steps.STEPS, steps.FINISH):
        function = functions[PIPELINE_PREFIX + step.function]
        acknowledge(
            machine.role,
            f"AwsSolutions-IAM5[Resource::<{_logical_id(function)}.Arn>:*]",
            "lambda:InvokeFunction on this step's function and its versions/aliases (the ':*'), "
            "as CDK's LambdaInvoke grants it; no other function.",
        )


def _acknowledge_storage(stack: EngramStack) -> None:
    """Object grants name exact actions on key prefixes (infra/s3_access.py); a prefix is the finding."""
    buckets = {"documents": stack.buckets.documents, "exports": stack.buckets.exports}
    for name, accesses in S3_ACCESS.items():
        function_role = stack.functions[name].role
        assert function_role is not None
        for access in accesses:
            bucket = _logical_id(buckets[access.bucket])
            for prefix in access.keys or ():
                finding = f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{prefix}*]"
                acknowledge(function_role, finding, access.why)
    handler = stack.node.try_find_child("BucketNotificationsHandler050a0587b7544547bf325f094a3db834")
    if handler is not None:
        role = handler.node.try_find_child("Role")
        acknowledge(
            role or handler,
            f"AwsSolutions-IAM4[Policy::{LAMBDA_BASIC}]",
            "CDK's own handler that turns on the buckets' EventBridge notifications at deploy "
            "time; AWS's minimal policy for it to write its logs.",
        )


def _acknowledge_prefix_list_lookup(stack: EngramStack) -> None:
    """CDK's AwsCustomResource that asks EC2 for S3's managed prefix list id at deploy time."""
    lookup = stack.network.s3_prefix_list_lookup
    if lookup is None:
        return
    provider = stack.node.try_find_child("AWS679f53fac002430cb0da5b7982bd2287")
    if provider is not None:
        provider_role = provider.node.try_find_child("ServiceRole")
        acknowledge(
            provider_role or provider,
            f"AwsSolutions-IAM4[Policy::{LAMBDA_BASIC}]",
            "CDK's own deploy-time function that looks up S3's prefix list; AWS's minimal policy for it to "
            "write its logs.",
        )
    acknowledge(
        lookup,
        "AwsSolutions-IAM5[Resource::*]",
        "ec2:DescribeManagedPrefixLists, read-only, supports no resource-level permissions; it reads the id "
        "of S3's prefix list for the functions' egress rule.",
    )
