"""The buckets: documents (S3 drops and the pipeline's work files), exports (POST /v1/export writes
there and answers a presigned link), and the access-log bucket both log to.

All three block public access, enforce TLS and are encrypted (SSE-S3). The documents bucket sends its
events to EventBridge (the pipeline's trigger rule listens there) and is versioned, so a changed object
under the same key is a new document run; the transcripts left in its old transcripts/ folder expire
after a day. Export files expire after `export_retention_days`. The dev stage empties and deletes the
buckets on `make destroy`; every other stage keeps them.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from engram.settings import WORK_PREFIX
from infra.config import StageConfig

ACCESS_LOG_DAYS = 90
NONCURRENT_VERSION_DAYS = 30
# Where Amazon Transcribe's transcripts went before they were kept among their document's work files
# (engram.pipeline.readers.audio.transcript_key): no delete path reaches them there, and nothing writes
# or reads there now, so the bucket expires them, every version.
OLD_TRANSCRIPTS_PREFIX = f"{WORK_PREFIX}transcripts/"


class Buckets(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig) -> None:
        super().__init__(scope, id)
        disposable = not config.protect_data
        common = {
            "encryption": s3.BucketEncryption.S3_MANAGED,
            "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
            "enforce_ssl": True,
            "removal_policy": RemovalPolicy.DESTROY if disposable else RemovalPolicy.RETAIN,
            "auto_delete_objects": disposable,
        }
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_DAYS))],
            **common,  # type: ignore[arg-type]
        )
        self.documents = s3.Bucket(
            self,
            "Documents",
            event_bridge_enabled=True,
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="documents/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
                s3.LifecycleRule(
                    prefix=OLD_TRANSCRIPTS_PREFIX,
                    expiration=Duration.days(1),
                    noncurrent_version_expiration=Duration.days(1),
                ),
            ],
            **common,  # type: ignore[arg-type]
        )
        self.exports = s3.Bucket(
            self,
            "Exports",
            event_bridge_enabled=True,  # an export request object starts the export worker
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="exports/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(config.export_retention_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            **common,  # type: ignore[arg-type]
        )
