"""Aurora PostgreSQL Serverless v2 with pgvector, behind RDS Proxy with IAM authentication end to end.

- The cluster lives in the isolated subnets, encrypted, with backups; non-dev stages also get deletion
  protection and a final snapshot on removal.
- The master user's password is generated into Secrets Manager and rotated; only the migration and
  admin functions read it, and they connect to the cluster directly.
- The API functions connect to RDS Proxy as `engram_app` with IAM tokens (TLS required), and the proxy
  connects on to the database with IAM too (`DefaultAuthScheme: IAM_AUTH`): no password exists for the
  app role anywhere. Migration 0001 grants it `rds_iam`.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import StageConfig, log_retention
from infra.network import Network

DB_NAME = "engram"
DB_PORT = 5432
MASTER_USER = "engram_admin"
APP_ROLE = "engram_app"


class Database(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig, network: Network) -> None:
        super().__init__(scope, id)
        vpc = network.vpc
        self.cluster_identifier = f"engram-{config.stage}"
        self.security_group = ec2.SecurityGroup(
            self,
            "ClusterSg",
            vpc=vpc,
            allow_all_outbound=False,
            description="Aurora: from the proxy and the migrator",
        )
        self.proxy_security_group = ec2.SecurityGroup(
            self,
            "ProxySg",
            vpc=vpc,
            allow_all_outbound=False,
            description="RDS Proxy: from the API functions",
        )
        # RDS creates this group on first write; creating it first lets us set its retention.
        postgres_logs = logs.LogGroup(
            self,
            "PostgresLogs",
            log_group_name=f"/aws/rds/cluster/{self.cluster_identifier}/postgresql",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN if config.protect_data else RemovalPolicy.DESTROY,
        )
        parameters = rds.ParameterGroup(
            self,
            "Parameters",
            engine=engine(config),
            description="Engram: TLS only, slow statements logged",
            parameters={"rds.force_ssl": "1", "log_min_duration_statement": "1000"},
        )
        self.cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            cluster_identifier=self.cluster_identifier,
            engine=engine(config),
            parameter_group=parameters,
            credentials=rds.Credentials.from_generated_secret(
                MASTER_USER, secret_name=f"engram/{config.stage}/master"
            ),
            default_database_name=DB_NAME,
            port=DB_PORT,
            writer=rds.ClusterInstance.serverless_v2(
                "Writer", publicly_accessible=False, auto_minor_version_upgrade=True
            ),
            serverless_v2_min_capacity=config.min_acu,
            serverless_v2_max_capacity=config.max_acu,
            vpc=vpc,
            vpc_subnets=network.data_subnets,
            security_groups=[self.security_group],
            storage_encrypted=True,
            iam_authentication=True,
            backup=rds.BackupProps(
                retention=Duration.days(config.backup_retention_days), preferred_window="03:00-04:00"
            ),
            preferred_maintenance_window="Sun:04:30-Sun:05:30",
            deletion_protection=config.protect_data,
            removal_policy=RemovalPolicy.SNAPSHOT if config.protect_data else RemovalPolicy.DESTROY,
            cloudwatch_logs_exports=["postgresql"],
            copy_tags_to_snapshot=True,
        )
        self.cluster.node.add_dependency(postgres_logs)
        assert self.cluster.secret is not None
        self.master_secret: secretsmanager.ISecret = self.cluster.secret
        # The stack makes this wait for the deploy-time migration (infra/stack.py): a first rotation
        # changes the password, which must not happen under the migration's connection.
        self.rotation = self.cluster.add_rotation_single_user(
            automatically_after=Duration.days(config.secret_rotation_days), vpc_subnets=network.app_subnets
        )
        # What the deploy-time migration waits for: the cluster's resources (the cluster, its writer, the
        # secret and its attachment, which gives the secret the host), not the rotation's, which wait
        # for the migration. Waiting for the whole cluster construct would take its rotation in too: a
        # circle CloudFormation refuses.
        rotation = self.rotation.node.path + "/"
        self.in_service: list[CfnResource] = [
            c
            for c in self.cluster.node.find_all()
            if isinstance(c, CfnResource)
            and not isinstance(c, secretsmanager.CfnRotationSchedule)
            and not c.node.path.startswith(rotation)
        ]

        proxy_role = iam.Role(
            self,
            "ProxyRole",
            assumed_by=iam.ServicePrincipal("rds.amazonaws.com"),
            description="RDS Proxy: log in to Aurora as the app role with IAM (end-to-end IAM auth)",
        )
        self.proxy = rds.DatabaseProxy(
            self,
            "Proxy",
            proxy_target=rds.ProxyTarget.from_cluster(self.cluster),
            vpc=vpc,
            vpc_subnets=network.data_subnets,
            security_groups=[self.proxy_security_group],
            role=proxy_role,
            db_proxy_name=f"engram-{config.stage}",
            require_tls=True,
            iam_auth=True,
            default_auth_scheme=rds.DefaultAuthScheme.IAM_AUTH,
            debug_logging=False,
            idle_client_timeout=Duration.minutes(30),
            borrow_timeout=Duration.seconds(30),
            max_connections_percent=90,
        )
        proxy_role.add_to_policy(
            iam.PolicyStatement(
                actions=["rds-db:connect"],
                resources=[
                    self.cluster.stack.format_arn(
                        service="rds-db",
                        resource="dbuser",
                        resource_name=f"{self.cluster.cluster_resource_identifier}/{APP_ROLE}",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        self.proxy_security_group.connections.allow_to(
            self.security_group, ec2.Port.tcp(DB_PORT), "proxy to Aurora"
        )

    def admit_proxy_clients(self, group: ec2.SecurityGroup) -> None:
        """The functions in `group` may reach the proxy (they log in there with IAM tokens)."""
        group.connections.allow_to(self.proxy_security_group, ec2.Port.tcp(DB_PORT), "functions to RDS Proxy")

    def admit_owners(self, group: ec2.SecurityGroup) -> None:
        """The functions in `group` (migrate, admin) may reach the cluster directly."""
        group.connections.allow_to(self.security_group, ec2.Port.tcp(DB_PORT), "owner functions to Aurora")

    def allow_app(self, function: lambda_.Function) -> None:
        """An API function: log in at the proxy as the app role with an IAM token."""
        self.proxy.grant_connect(function, APP_ROLE)

    def allow_owner(self, function: lambda_.Function) -> None:
        """The migration and admin functions: read the master secret."""
        self.master_secret.grant_read(function)


def engine(config: StageConfig) -> rds.IClusterEngine:
    return rds.DatabaseClusterEngine.aurora_postgres(
        version=rds.AuroraPostgresEngineVersion.of(config.resolved_engine_version, config.engine_major)
    )
