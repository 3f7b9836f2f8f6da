"""Scheduled and bulk tenant-data work: the cleanup schedule (functions/cleanup deletes expired rows and
superseded versions past ENGRAM_SUPERSEDED_RETENTION_DAYS), the per-tenant vector index schedule (the
migrate function), and the export bucket POST /v1/export writes to (ENGRAM_EXPORT_BUCKET; the function
may put and read back only under exports/, which is what its presigned links need)."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.build import CLEANUP_FUNCTION, MIGRATE_FUNCTION
from infra.config import StageConfig
from infra.functions import Functions

EXPORT_FUNCTION = "export"
EXPORT_PREFIX = "exports/"  # engram.export.service.upload writes exports/<tenant-id>/<time>-<id>.jsonl


class Maintenance(Construct):
    def __init__(
        self, scope: Construct, id: str, *, config: StageConfig, functions: Functions, exports: s3.IBucket
    ) -> None:
        super().__init__(scope, id)
        self.cleanup_rule = events.Rule(
            self,
            "CleanupSchedule",
            description="Engram: delete expired memories and working keys, and old superseded versions",
            schedule=events.Schedule.expression(config.cleanup_schedule),
            targets=[targets.LambdaFunction(functions[CLEANUP_FUNCTION], retry_attempts=2)],
        )
        # The migrate function (the owner) also makes the HNSW index of each tenant that has grown
        # past ENGRAM_TENANT_INDEX_MIN_ROWS (engram.db.tenant_indexes): daily, not only on deploys.
        self.tenant_index_rule = events.Rule(
            self,
            "TenantIndexSchedule",
            description="Engram: per-tenant vector indexes for tenants that have grown large",
            schedule=events.Schedule.expression(config.tenant_index_schedule),
            targets=[targets.LambdaFunction(functions[MIGRATE_FUNCTION], retry_attempts=2)],
        )
        export = functions[EXPORT_FUNCTION]
        export.add_environment("ENGRAM_EXPORT_BUCKET", exports.bucket_name)
        export.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject"],
                resources=[exports.arn_for_objects(EXPORT_PREFIX + "*")],
            )
        )
