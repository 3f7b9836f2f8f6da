"""Scheduled and bulk tenant-data work: the cleanup schedule (functions/cleanup deletes expired rows and
superseded versions past ENGRAM_SUPERSEDED_RETENTION_DAYS), the per-tenant vector index schedule (the
migrate function), exports and imports. POST /v1/export (the export function) writes a request object
under exports/ of the exports bucket, an EventBridge rule hands it to the export worker, which writes the
file and its status there; GET /v1/export/{id} reads the status and presigns the file (engram.export.jobs).
POST /v1/import?upload=true writes a request under imports/ and presigns the upload; the uploaded file
starts the same worker, which imports it (engram.export.import_jobs). Documents' original files travel
with exports and imports, so those functions read and write the documents bucket too. Every rule's
target keeps what it fails on in the async-failures queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_s3 as s3
from constructs import Construct

from engram.export.import_jobs import IMPORT_PREFIX, UPLOAD_SUFFIX
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
        documents: s3.IBucket,
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
        # past ENGRAM_TENANT_INDEX_MIN_ROWS (engram.db.tenant_indexes), and of such a tenant's large
        # containers (engram.db.container_indexes): daily, not only on deploys.
        self.tenant_index_rule = events.Rule(
            self,
            "TenantIndexSchedule",
            description="Engram: per-tenant vector indexes for tenants that have grown large",
            schedule=events.Schedule.expression(config.tenant_index_schedule),
            targets=[failures.target(functions[MIGRATE_FUNCTION])],
        )
        export, worker = functions[EXPORT_FUNCTION], functions[EXPORT_WORKER_FUNCTION]
        for function in (export, worker):  # their S3 grants: infra/s3_access.py
            function.add_environment("ENGRAM_EXPORT_BUCKET", exports.bucket_name)
            # The documents' original files (export with_files; an import restores them).
            function.add_environment("ENGRAM_DOCUMENTS_BUCKET", documents.bucket_name)
        self.export_rule = events.Rule(
            self,
            "ExportRequested",
            description="Engram: an export request (POST /v1/export) or an import upload (POST /v1/import) "
            "starts the export worker",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [exports.bucket_name]},
                    "object": {
                        "key": [
                            {"wildcard": f"{EXPORT_PREFIX}*{REQUEST_SUFFIX}"},
                            {"wildcard": f"{IMPORT_PREFIX}*{UPLOAD_SUFFIX}"},
                        ]
                    },
                },
            ),
            targets=[failures.target(worker, max_event_age=Duration.hours(1))],
        )
