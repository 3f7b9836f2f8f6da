"""A CloudWatch dashboard and the alarms that page someone: API 5xx, API p95 latency, Lambda
throttles, database connections, RDS Proxy session pinning, and async work that failed for good.
Alarms go to an encrypted SNS topic (subscribe an address with `-c alarm_email=...`)."""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.api import Api
from infra.config import StageConfig
from infra.database import Database
from infra.failures import AsyncFailures
from infra.functions import Functions

FIVE_MINUTES = Duration.minutes(5)


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        api: Api,
        functions: Functions,
        database: Database,
        failures: AsyncFailures,
    ) -> None:
        super().__init__(scope, id)
        key = kms.Key(
            self, "AlarmsKey", enable_key_rotation=True, description="Engram alarm topic encryption"
        )
        key.grant_encrypt_decrypt(iam.ServicePrincipal("cloudwatch.amazonaws.com"))
        self.topic = sns.Topic(
            self, "Alarms", display_name=f"Engram {config.stage} alarms", master_key=key, enforce_ssl=True
        )
        # enforce_ssl gives the topic a policy of its own, in place of SNS's default one: without this
        # statement CloudWatch may not publish, and no alarm reaches anyone.
        alarms = f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": alarms},
                },
            )
        )
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        rest_api = api.rest_api
        stage = rest_api.deployment_stage.stage_name
        api_dims = {"ApiName": rest_api.rest_api_name, "Stage": stage}

        def api_metric(name: str, statistic: str) -> cw.Metric:
            return cw.Metric(
                namespace="AWS/ApiGateway",
                metric_name=name,
                dimensions_map=api_dims,
                statistic=statistic,
                period=FIVE_MINUTES,
            )

        cluster_dims = {"DBClusterIdentifier": database.cluster_identifier}
        proxy_dims = {"ProxyName": database.proxy.db_proxy_name}
        connections = cw.Metric(
            namespace="AWS/RDS",
            metric_name="DatabaseConnections",
            dimensions_map=cluster_dims,
            statistic="Maximum",
            period=FIVE_MINUTES,
        )
        pinned = cw.Metric(
            namespace="AWS/RDS",
            metric_name="DatabaseConnectionsCurrentlySessionPinned",
            dimensions_map=proxy_dims,
            statistic="Maximum",
            period=FIVE_MINUTES,
        )
        acu = cw.Metric(
            namespace="AWS/RDS",
            metric_name="ServerlessDatabaseCapacity",
            dimensions_map=cluster_dims,
            statistic="Average",
            period=FIVE_MINUTES,
        )
        lambdas = list(functions.functions.values())
        # An alarm's math expression may use at most 10 metrics: one throttle alarm per 10 functions.
        throttle_groups = [
            cw.MathExpression(
                expression="+".join(f"t{i}" for i in range(len(group))),
                using_metrics={
                    f"t{i}": fn.metric_throttles(period=FIVE_MINUTES, statistic="Sum")
                    for i, fn in enumerate(group)
                },
                label=f"Lambda throttles (functions {start + 1}-{start + len(group)})",
                period=FIVE_MINUTES,
            )
            for start in range(0, len(lambdas), 10)
            for group in [lambdas[start : start + 10]]
        ]
        max_connections = int(config.max_acu * 100)  # a rough ceiling; Aurora allows more per ACU
        self.alarms = [
            self._alarm("Api5xx", api_metric("5XXError", "Sum"), 5, "API 5xx responses (5 min sum)"),
            self._alarm(
                "ApiLatencyP95",
                api_metric("Latency", "p95"),
                config.latency_p95_ms,
                "API p95 latency in ms",
                evaluation_periods=3,
            ),
            *(
                self._alarm(
                    "LambdaThrottles" + (str(n + 1) if n else ""),
                    group_metric,
                    1,
                    f"Lambda throttles (5 min sum, {group_metric.label})",
                )
                for n, group_metric in enumerate(throttle_groups)
            ),
            self._alarm("DbConnections", connections, max_connections, "database connections (max)"),
            self._alarm(
                "ProxyPinning", pinned, 5, "RDS Proxy connections pinned to a session", evaluation_periods=3
            ),
            failures.alarm,
        ]
        for alarm in self.alarms:
            alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"engram-{config.stage}")
        dashboard.add_widgets(
            cw.GraphWidget(
                title="API requests and errors",
                width=12,
                left=[
                    api_metric("Count", "Sum"),
                    api_metric("4XXError", "Sum"),
                    api_metric("5XXError", "Sum"),
                ],
            ),
            cw.GraphWidget(
                title="API latency (ms)",
                width=12,
                left=[
                    api_metric("Latency", "p50"),
                    api_metric("Latency", "p95"),
                    api_metric("IntegrationLatency", "p95"),
                ],
            ),
            cw.GraphWidget(
                title="Lambda errors",
                width=12,
                left=[
                    fn.metric_errors(period=FIVE_MINUTES, label=name)
                    for name, fn in functions.functions.items()
                ],
            ),
            cw.GraphWidget(
                title="Lambda p95 duration (ms)",
                width=12,
                left=[
                    fn.metric_duration(period=FIVE_MINUTES, statistic="p95", label=name)
                    for name, fn in functions.functions.items()
                ],
            ),
            cw.GraphWidget(title="Database", width=12, left=[connections, pinned], right=[acu]),
            cw.AlarmStatusWidget(title="Alarms", width=12, alarms=self.alarms),
        )

    def _alarm(
        self, id: str, metric: cw.IMetric, threshold: float, what: str, *, evaluation_periods: int = 1
    ) -> cw.Alarm:
        return cw.Alarm(
            self,
            id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=f"Engram: {what} >= {threshold}",
        )
