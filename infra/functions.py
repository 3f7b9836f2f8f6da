"""Packaging and the Lambda functions: one per endpoint group (from the route table), the authorizer,
the migrator and the admin function. All arm64, Python 3.12, with explicit memory, timeout, a log group
with retention, X-Ray tracing, their own security group and their own least-privilege role.

Code comes from `make build` (infra/build.py): `.build/functions/<name>/` and the dependencies layer
`.build/layer/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.settings import DEFAULT_MODELS
from infra.build import ADMIN_FUNCTION, MIGRATE_FUNCTION, Assets
from infra.config import StageConfig, log_retention
from infra.database import APP_ROLE, DB_NAME, DB_PORT, Database
from infra.network import Network

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
EMBEDDING_FUNCTIONS = frozenset({"memories", "search"})


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    memory_mb: int = 512
    timeout_s: int = 15  # API Gateway gives up at 29 s
    owner: bool = False  # connects as the database owner (master secret) instead of the app role


def function_specs() -> tuple[FunctionSpec, ...]:
    """Every function the stack deploys; the API ones come from engram.api.routes.ROUTES."""
    api = tuple(
        FunctionSpec(
            name,
            f"Engram API: the {name} endpoint group",
            memory_mb=1024 if name in EMBEDDING_FUNCTIONS else 512,
        )
        for name in API_FUNCTIONS
    )
    return (
        *api,
        FunctionSpec(AUTHORIZER_FUNCTION, "Engram API: REQUEST authorizer (API key -> tenant)", timeout_s=10),
        FunctionSpec(
            MIGRATE_FUNCTION,
            "Engram: applies migrations/ at deploy time",
            memory_mb=1024,
            timeout_s=600,
            owner=True,
        ),
        FunctionSpec(
            ADMIN_FUNCTION,
            "Engram: tenant and API-key administration (engram keys --stage)",
            timeout_s=30,
            owner=True,
        ),
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
        self.functions: dict[str, lambda_.Function] = {
            spec.name: self._function(spec) for spec in function_specs()
        }

    def __getitem__(self, name: str) -> lambda_.Function:
        return self.functions[name]

    def _function(self, spec: FunctionSpec) -> lambda_.Function:
        config, vpc = self.config, self.network.vpc
        title = spec.name.capitalize()
        log_group = logs.LogGroup(
            self,
            f"{title}Logs",
            log_group_name=f"/aws/lambda/engram-{config.stage}-{spec.name}",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        security_group = ec2.SecurityGroup(
            self, f"{title}Sg", vpc=vpc, allow_all_outbound=False, description=f"Lambda engram-{spec.name}"
        )
        https_to = ec2.Peer.any_ipv4() if config.nat_gateways else ec2.Peer.ipv4(vpc.vpc_cidr_block)
        security_group.add_egress_rule(https_to, ec2.Port.tcp(443), "HTTPS to AWS APIs")
        function = lambda_.Function(
            self,
            title,
            function_name=f"engram-{config.stage}-{spec.name}",
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(self.assets.function(spec.name))),
            layers=[self.layer],
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_s),
            environment=self._environment(spec),
            vpc=vpc,
            vpc_subnets=self.network.app_subnets,
            security_groups=[security_group],
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
        return function

    def _environment(self, spec: FunctionSpec) -> dict[str, str]:
        env = {
            "ENGRAM_STAGE": self.config.stage,
            "ENGRAM_DB_NAME": DB_NAME,
            "ENGRAM_DB_PORT": str(DB_PORT),
            "ENGRAM_APP_ROLE": APP_ROLE,
            "ENGRAM_EMBEDDING_PROVIDER": self.config.embedding_provider,
            "POWERTOOLS_SERVICE_NAME": "engram",
            "POWERTOOLS_METRICS_NAMESPACE": "Engram",
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        if spec.owner:
            env["ENGRAM_DB_SECRET_ARN"] = self.database.master_secret.secret_arn
        else:
            env["ENGRAM_DB_HOST"] = self.database.proxy.endpoint
            env["ENGRAM_DB_IAM_AUTH"] = "true"
        return env
