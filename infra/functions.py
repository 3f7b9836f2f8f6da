"""Packaging and the Lambda functions: one per endpoint group (from the route table), the authorizer,
the migrator, the admin function, the scheduled cleanup and the ingestion pipeline's functions (one per
step, from engram.pipeline.steps, plus finish, trigger and sweeper). All arm64, Python 3.12, with explicit
memory, timeout, a log group with retention, X-Ray tracing and their own least-privilege role, in the VPC
with the database settings. Security groups are per network role, not per function (they would all be
alike): the functions that log in through RDS Proxy share one, the owner functions another, and those
that call S3 (infra/aws_services.py says which) also get the group that lets them out to S3.

Code comes from `make build` (infra/build.py): `.build/functions/<name>/`, the dependencies layer
`.build/layer/`, and per-function extras layers `.build/extras/<extra>/` (FUNCTION_EXTRAS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.pipeline import steps
from engram.providers.llm import MAX_DELAY_S
from engram.relay import PASS_MARGIN_S
from engram.runtime import FUNCTION_ENVIRONMENT
from engram.settings import DEFAULT_MODELS, Settings
from infra.aws_services import (
    EMBEDDING_FUNCTIONS,
    LLM_FUNCTIONS,
    MEDIA_EXTRACT,
    PIPELINE_CONTEXT_FUNCTIONS,
    declared_services,
)
from infra.build import (
    ADMIN_FUNCTION,
    CLEANUP_FUNCTION,
    DOCUMENTS_FUNCTION,
    EXPORT_WORKER_FUNCTION,
    FUNCTION_EXTRAS,
    LAYER_CA_BUNDLE,
    MIGRATE_FUNCTION,
    PIPELINE_PREFIX,
    RELAY_FUNCTION,
    Assets,
)
from infra.config import StageConfig, log_retention
from infra.database import APP_ROLE, DB_NAME, DB_PORT, Database
from infra.llm import LlmChoice, choose_llm
from infra.migrations import MIGRATE_TIMEOUT_S
from infra.network import Network

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
# Functions that may wait for the LLM (sessions, memories: extract=full): as long as API Gateway waits
# (29 s), less a margin.
SESSIONS_TIMEOUT_S = 28
# The pipeline's trigger registers a document and starts its execution; 120 s covers reading the object.
TRIGGER_TIMEOUT_S, TRIGGER_MEMORY_MB = 120, 1024
# What a function keeps of its time besides its LLM calls: an API request's other work (the database,
# the embedding), a relay pass's (within its margin), a pipeline step's (its writes).
API_WORK_S, PASS_WORK_S, STEP_WORK_S = 8, 5, 5


def llm_limits(room_s: float) -> tuple[float, int]:
    """A call's timeout and the attempts whose worst case (every call timing out, the longest wait
    between them: engram.providers.llm.MAX_DELAY_S) fits in `room_s`: the settings' defaults where they
    fit, fewer attempts, then a shorter call, where they do not."""
    call = min(float(Settings.model_fields["llm_timeout_seconds"].default), room_s)
    most = int(Settings.model_fields["llm_max_attempts"].default)
    attempts = 1
    while attempts < most and (attempts + 1) * call + attempts * MAX_DELAY_S <= room_s:
        attempts += 1
    return call, attempts


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # folder under functions/: "memories", "pipeline/extract"
    description: str
    memory_mb: int = 512
    timeout_s: int = 15  # API Gateway gives up at 29 s
    owner: bool = False  # connects as the database owner (master secret) instead of the app role

    @property
    def construct_id(self) -> str:
        """ "memories" -> "Memories", "pipeline/llm_extract" -> "PipelineLlmExtract"."""
        return "".join(part.capitalize() for part in re.split(r"[/_]", self.name))


def function_name(stage: str, name: str) -> str:
    return f"engram-{stage}-{name.replace('/', '-')}"


def pipeline_specs() -> tuple[FunctionSpec, ...]:
    family_of = {step.function: family for family, step in steps.EXTRACT_FAMILIES.items()}
    step_specs = tuple(
        FunctionSpec(
            PIPELINE_PREFIX + step.function,
            f"Engram pipeline: the {step.name} step"
            + (f" for {family_of[step.function]}" if step.function in family_of else ""),
            memory_mb=step.memory_mb,
            timeout_s=step.timeout_seconds,
        )
        for step in steps.STEPS
    )
    return (
        *step_specs,
        FunctionSpec(
            PIPELINE_PREFIX + steps.FINISH.function,
            "Engram pipeline: mark-done, mark-failed, executions that ended early",
            memory_mb=steps.FINISH.memory_mb,
            timeout_s=steps.FINISH.timeout_seconds,
        ),
        FunctionSpec(
            PIPELINE_PREFIX + steps.TRIGGER_FUNCTION,
            "Engram pipeline: S3 object created -> document -> execution",
            memory_mb=TRIGGER_MEMORY_MB,
            timeout_s=TRIGGER_TIMEOUT_S,
        ),
        FunctionSpec(
            PIPELINE_PREFIX + steps.SWEEPER_FUNCTION,
            "Engram pipeline: fails documents left unfinished (scheduled)",
            memory_mb=256,
            timeout_s=60,
        ),
    )


def function_specs() -> tuple[FunctionSpec, ...]:
    """Every function the stack deploys; the API ones come from engram.api.routes.ROUTES."""
    api = tuple(
        FunctionSpec(
            name,
            f"Engram API: the {name} endpoint group",
            memory_mb=1024 if name in EMBEDDING_FUNCTIONS else 512,
            timeout_s=SESSIONS_TIMEOUT_S if name in LLM_FUNCTIONS else FunctionSpec.timeout_s,
        )
        for name in API_FUNCTIONS
    )
    return (
        *api,
        FunctionSpec(AUTHORIZER_FUNCTION, "Engram API: REQUEST authorizer (API key -> tenant)", timeout_s=10),
        FunctionSpec(
            MIGRATE_FUNCTION,
            "Engram: applies migrations/ at deploy time, and makes large tenants' vector indexes daily",
            memory_mb=1024,
            timeout_s=MIGRATE_TIMEOUT_S,
            owner=True,
        ),
        FunctionSpec(
            ADMIN_FUNCTION,
            "Engram: tenant and API-key administration (engram keys --stage)",
            timeout_s=30,
            owner=True,
        ),
        FunctionSpec(
            CLEANUP_FUNCTION,
            "Engram: deletes expired rows and old superseded versions (scheduled)",
            timeout_s=300,
        ),
        FunctionSpec(
            EXPORT_WORKER_FUNCTION,
            "Engram: writes a tenant's export to S3, imports an uploaded one (POST /v1/export, /v1/import)",
            memory_mb=1024,
            timeout_s=900,
        ),
        FunctionSpec(
            RELAY_FUNCTION,
            "Engram: conversation summaries, then change events to the event bus (scheduled)",
            memory_mb=512,
            timeout_s=120,
        ),
        *pipeline_specs(),
    )


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        network: Network,
        database: Database,
        assets: Assets,
    ) -> None:
        super().__init__(scope, id)
        self.config, self.network, self.database, self.assets = config, network, database, assets
        self.layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(assets.layer)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="Engram run-time dependencies (pyproject.toml, less boto3)",
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.extra_layers = {
            extra: lambda_.LayerVersion(
                self,
                "".join(part.capitalize() for part in extra.split("-")) + "Layer",
                code=lambda_.Code.from_asset(str(assets.extra_layer(extra))),
                compatible_runtimes=[RUNTIME],
                compatible_architectures=[ARCHITECTURE],
                description=f"Engram optional dependencies [{extra}] (on top of the dependencies layer)",
                removal_policy=RemovalPolicy.DESTROY,
            )
            for extra in dict.fromkeys(e for extras in FUNCTION_EXTRAS.values() for e in extras)
        }
        region = Stack.of(self).region
        self.llm: LlmChoice = choose_llm(config, None if Token.is_unresolved(region) else region)
        if self.llm.warning:
            Annotations.of(self).add_warning_v2("engram:llm", self.llm.warning)
        # Security groups per network role: HTTPS to the AWS APIs, and the database each role logs in to.
        self.proxy_clients = ec2.SecurityGroup(
            self,
            "ProxyClientsSg",
            vpc=network.vpc,
            allow_all_outbound=False,
            description="Functions that log in through RDS Proxy as the app role",
        )
        self.owner_clients = ec2.SecurityGroup(
            self,
            "OwnerClientsSg",
            vpc=network.vpc,
            allow_all_outbound=False,
            description="Functions that log in to the cluster as its owner (migrate, admin)",
        )
        for group in (self.proxy_clients, self.owner_clients):
            network.https_out(group)
        database.admit_proxy_clients(self.proxy_clients)
        database.admit_owners(self.owner_clients)
        self.specs = {spec.name: spec for spec in function_specs()}
        self.functions: dict[str, lambda_.Function] = {
            name: self._function(spec) for name, spec in self.specs.items()
        }

    def __getitem__(self, name: str) -> lambda_.Function:
        return self.functions[name]

    def _function(self, spec: FunctionSpec) -> lambda_.Function:
        config, vpc = self.config, self.network.vpc
        title = spec.construct_id
        name = function_name(config.stage, spec.name)
        log_group = logs.LogGroup(
            self,
            f"{title}Logs",
            log_group_name=f"/aws/lambda/{name}",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        groups = [self.owner_clients if spec.owner else self.proxy_clients]
        if any(use.service == "s3" and use.calls for use in declared_services(spec.name)):
            groups.append(self.network.s3_access)
        function = lambda_.Function(
            self,
            title,
            function_name=name,
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(self.assets.function(spec.name))),
            layers=[self.layer, *(self.extra_layers[e] for e in FUNCTION_EXTRAS.get(spec.name, ()))],
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_s),
            environment=self._environment(spec),
            vpc=vpc,
            vpc_subnets=self.network.app_subnets,
            security_groups=groups,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
        )
        if spec.owner:
            self.database.allow_owner(function)
        else:
            self.database.allow_app(function)
        if spec.name in EMBEDDING_FUNCTIONS and config.embedding_provider == "bedrock":
            model = DEFAULT_MODELS["bedrock"][0]
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["bedrock:InvokeModel"],
                    resources=[
                        Stack.of(self).format_arn(
                            service="bedrock", account="", resource="foundation-model", resource_name=model
                        )
                    ],
                )
            )
        if self._calls_llm(spec) and self.llm.provider == "bedrock":
            function.add_to_role_policy(
                iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=self.llm_model_arns())
            )
        return function

    def _calls_llm(self, spec: FunctionSpec) -> bool:
        """The LLM functions; the media extract function only when it describes images (vision)."""
        return spec.name in LLM_FUNCTIONS and (spec.name != MEDIA_EXTRACT or self.config.vision)

    def llm_model_arns(self) -> list[str]:
        """What the LLM functions may invoke: the inference profile and its model in whichever region the
        profile routes a request to (a geographic profile spans several), or the model in this region."""
        stack, llm = Stack.of(self), self.llm
        assert llm.model_id is not None and llm.foundation_model is not None
        if not llm.is_profile:
            return [
                stack.format_arn(
                    service="bedrock", account="", resource="foundation-model", resource_name=llm.model_id
                )
            ]
        return [
            stack.format_arn(service="bedrock", resource="inference-profile", resource_name=llm.model_id),
            stack.format_arn(
                service="bedrock",
                region="*",
                account="",
                resource="foundation-model",
                resource_name=llm.foundation_model,
            ),
        ]

    def _environment(self, spec: FunctionSpec) -> dict[str, str]:
        env = {
            "ENGRAM_STAGE": self.config.stage,
            "ENGRAM_DB_NAME": DB_NAME,
            "ENGRAM_DB_PORT": str(DB_PORT),
            "ENGRAM_APP_ROLE": APP_ROLE,
            # verify-full TLS to RDS Proxy and Aurora, against the bundle in the dependencies layer
            "ENGRAM_DB_SSLMODE": "verify-full",
            "ENGRAM_DB_SSLROOTCERT": f"/opt/{LAYER_CA_BUNDLE}",
            "ENGRAM_EMBEDDING_PROVIDER": self.config.embedding_provider,
            "POWERTOOLS_SERVICE_NAME": "engram",
            "POWERTOOLS_METRICS_NAMESPACE": "Engram",
            "POWERTOOLS_LOG_LEVEL": "INFO",
            **FUNCTION_ENVIRONMENT,
        }
        if self._calls_llm(spec):
            env["ENGRAM_LLM_PROVIDER"] = self.llm.provider
            # The function waits for its LLM calls to their end: a slow or throttled model is a clear
            # error (503), never the function's own timeout.
            if spec.name == RELAY_FUNCTION:
                room = PASS_MARGIN_S - PASS_WORK_S
            elif spec.name in API_FUNCTIONS:
                room = spec.timeout_s - API_WORK_S
            else:
                room = spec.timeout_s - STEP_WORK_S
            call, attempts = llm_limits(room)
            env["ENGRAM_LLM_TIMEOUT_SECONDS"] = f"{call:g}"
            env["ENGRAM_LLM_MAX_ATTEMPTS"] = str(attempts)
            if self.llm.model_id:
                env["ENGRAM_LLM_MODEL"] = self.llm.model_id
        if spec.name in PIPELINE_CONTEXT_FUNCTIONS and not self.network.reaches("textract"):
            # Without a path to Textract (no NAT, no endpoint), scanned pages and images fail at once
            # (ocr_unavailable) and say why.
            env["ENGRAM_OCR_PROVIDER"] = "none"
        if spec.name == MEDIA_EXTRACT and self.config.vision:
            env["ENGRAM_VISION"] = "true"
        if spec.name == MEDIA_EXTRACT and self.network.reaches("transcribe"):
            env["ENGRAM_TRANSCRIPTION_PROVIDER"] = "transcribe"  # audio (else unsupported_here, saying so)
        if spec.name == DOCUMENTS_FUNCTION and not self.network.reaches_internet:
            # Without a NAT gateway the pipeline cannot fetch a URL: refused when sent, not timed out later.
            env["ENGRAM_FETCH_URLS"] = "false"
        if spec.owner:
            env["ENGRAM_DB_SECRET_ARN"] = self.database.master_secret.secret_arn
        else:
            env["ENGRAM_DB_HOST"] = self.database.proxy.endpoint
            env["ENGRAM_DB_IAM_AUTH"] = "true"
        return env
