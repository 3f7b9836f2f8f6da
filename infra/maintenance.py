"""Scheduled and bulk tenant-data work: the cleanup schedule (functions/cleanup deletes expired rows and
superseded versions past ENGRAM_SUPERSEDED_RETENTION_DAYS), the per-tenant vector index schedule (the
migrate function), and exports: POST /v1/export (the export function) writes a request object under
exports/ of the exports bucket, an EventBridge rule hands it to the export worker, which writes the file
and its status there; GET /v1/export/{id} reads the status and presigns the file (engram.export.jobs).
Every rule's target keeps what it fails on in the async-failures queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from engram.export.jobs import EXPORT_PREFIX, REQUEST_SUFFIX
from infra.build import CLEANUP_FUNCTION, EXPORT_WORKER_FUNCTION, MIGRATE_FUNCTION
from infra.config import StageConfig
from infra.failures import AsyncFailures
from infra.functions import Functions

EXPORT_FUNCTION = "export"


class Maintenance(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        functions: Functions,
        exports: s3.IBucket,
        failures: AsyncFailures,
    ) -> None:
        super().__init__(scope, id)
        self.cleanup_rule = events.Rule(
            self,
            "CleanupSchedule",
            description="Engram: delete expired memories and working keys, and old superseded versions",
            schedule=events.Schedule.expression(config.cleanup_schedule),
            targets=[failures.target(functions[CLEANUP_FUNCTION])],
        )
        # The migrate function (the owner) also makes the HNSW index of each tenant that has grown
        # past ENGRAM_TENANT_INDEX_MIN_ROWS (engram.db.tenant_indexes): daily, not only on deploys.
        self.tenant_index_rule = events.Rule(
            self,
            "TenantIndexSchedule",
            description="Engram: per-tenant vector indexes for tenants that have grown large",
            schedule=events.Schedule.expression(config.tenant_index_schedule),
            targets=[failures.target(functions[MIGRATE_FUNCTION])],
        )
        objects = exports.arn_for_objects(EXPORT_PREFIX + "*")
        export, worker = functions[EXPORT_FUNCTION], functions[EXPORT_WORKER_FUNCTION]
        for function in (export, worker):
            function.add_environment("ENGRAM_EXPORT_BUCKET", exports.bucket_name)
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject"], resources=[objects]
                )
            )
        self.export_rule = events.Rule(
            self,
            "ExportRequested",
            description="Engram: an export request object (POST /v1/export) starts the export worker",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [exports.bucket_name]},
                    "object": {"key": [{"wildcard": f"{EXPORT_PREFIX}*{REQUEST_SUFFIX}"}]},
                },
            ),
            targets=[failures.target(worker, max_event_age=Duration.hours(1))],
        )
