"""What each function may do in the buckets, action by action: declared here, granted from here.

Every grant names exact actions (no `s3:GetObject*`, no CDK `grant_read_write`, which also hands out
object-lock, tagging and ACL actions nobody calls): object actions on the keys they are used under,
listing on the bucket. The buckets are SSE-S3 encrypted, so no KMS grant goes with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3

from engram.export.import_jobs import IMPORT_PREFIX
from engram.export.jobs import EXPORT_PREFIX
from engram.settings import WORK_PREFIX
from infra.aws_services import PIPELINE_CONTEXT_FUNCTIONS, TRIGGER
from infra.build import DOCUMENTS_FUNCTION, EXPORT_WORKER_FUNCTION
from infra.ingestion import CONTAINERS_API_FUNCTION as CONTAINERS_FUNCTION
from infra.maintenance import EXPORT_FUNCTION

Bucket = Literal["documents", "exports"]
EVERY_KEY = ""
# Actions on the bucket itself (its ARN); every other action is on objects (<ARN>/<key>).
BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:ListBucketVersions"})


@dataclass(frozen=True)
class S3Access:
    bucket: Bucket
    actions: tuple[str, ...]
    keys: tuple[str, ...] | None  # the key prefixes of the objects; None: the bucket (listing)
    why: str

    def __post_init__(self) -> None:
        on_bucket = {a in BUCKET_ACTIONS for a in self.actions}
        if on_bucket != {self.keys is None}:
            raise ValueError(f"{self.actions}: bucket actions take keys=None, object actions key prefixes")

    def resources(self, bucket: s3.IBucket) -> list[str]:
        if self.keys is None:
            return [bucket.bucket_arn]
        return [bucket.arn_for_objects(prefix + "*") for prefix in self.keys]


READ_DOCUMENTS = S3Access(
    "documents",
    ("s3:GetObject", "s3:GetObjectVersion"),
    (EVERY_KEY,),
    "Reads documents' files wherever their blob_key says (a tenant's drop <tenant-id>/<container>/..., or "
    "an upload under the work prefix), at the version the document names; Amazon Transcribe reads the "
    "audio with the caller's permissions. The key is data, not known at deploy time.",
)
DOCUMENTS_MISSING_IS_404 = S3Access(
    "documents",
    ("s3:ListBucket",),
    None,
    "A file that is gone answers 404 NoSuchKey (SourceMissing: not retried) instead of 403: S3 tells "
    "only a caller that may list the bucket.",
)
WRITE_WORK_FILES = S3Access(
    "documents",
    ("s3:PutObject",),
    (WORK_PREFIX,),
    "Writes work files (fetched URLs, extracted text, Transcribe's transcripts, imported documents' "
    "files) under the work prefix, which the S3 trigger ignores; each key holds the tenant and document.",
)
LIST_WORK_VERSIONS = S3Access(
    "documents",
    ("s3:ListBucketVersions",),
    None,
    "Lists a document's work files with every version and delete marker, to delete them.",
)
DELETE_WORK_VERSIONS = S3Access(
    "documents",
    ("s3:DeleteObjectVersion",),
    (WORK_PREFIX,),
    "Deletes every version of a document's work files (the bucket is versioned: a plain delete would "
    "leave the bytes behind as an earlier version); each key holds the tenant and document.",
)
STORE_UPLOADS = S3Access(
    "documents",
    ("s3:PutObject",),
    (EVERY_KEY,),
    "Stores uploaded files under the work prefix, and presigns uploads into a tenant's drop prefix "
    "(<tenant-id>/<container>/<file>, the tenant from the authorizer), which the trigger ingests.",
)
EXPORT_JOBS = S3Access(
    "exports",
    ("s3:GetObject", "s3:PutObject"),
    (EXPORT_PREFIX, IMPORT_PREFIX),
    "Export and import requests, files and statuses under exports/ and imports/ of the exports bucket; "
    "presigns the export file (GET) and the import upload (PUT). Each key holds the tenant id and a job "
    "id decided at request time.",
)
EXPORTS_MISSING_IS_404 = S3Access(
    "exports",
    ("s3:ListBucket",),
    None,
    "A job with no status yet reads as NoSuchKey (engram.export.jobs.get_json), not 403: S3 tells only "
    "a caller that may list the bucket.",
)
EXPORT_FILE_UPLOAD = S3Access(
    "exports",
    ("s3:AbortMultipartUpload",),
    (EXPORT_PREFIX,),
    "Writes the export file with boto3's managed upload: multipart above 8 MB, aborted if it fails.",
)

# The pipeline's steps and finish share one context (engram.deps.pipeline_context) and its blob store,
# which reads sources, writes work files and deletes them: one set for all of them (the code scan cannot
# tell the steps apart, and equal grants let them share a role, infra/roles.py).
PIPELINE = (
    READ_DOCUMENTS,
    DOCUMENTS_MISSING_IS_404,
    WRITE_WORK_FILES,
    LIST_WORK_VERSIONS,
    DELETE_WORK_VERSIONS,
)
EXPORTS_AND_IMPORTS = (EXPORT_JOBS, EXPORTS_MISSING_IS_404, READ_DOCUMENTS, DOCUMENTS_MISSING_IS_404)

S3_ACCESS: Mapping[str, tuple[S3Access, ...]] = {
    **{name: PIPELINE for name in sorted(PIPELINE_CONTEXT_FUNCTIONS)},
    TRIGGER: (READ_DOCUMENTS, DOCUMENTS_MISSING_IS_404),  # each drop's checksum, at its version
    DOCUMENTS_FUNCTION: (STORE_UPLOADS, LIST_WORK_VERSIONS, DELETE_WORK_VERSIONS),
    CONTAINERS_FUNCTION: (LIST_WORK_VERSIONS, DELETE_WORK_VERSIONS),
    EXPORT_FUNCTION: (*EXPORTS_AND_IMPORTS, WRITE_WORK_FILES),
    EXPORT_WORKER_FUNCTION: (*EXPORTS_AND_IMPORTS, EXPORT_FILE_UPLOAD, WRITE_WORK_FILES),
}


def grant_s3(functions: Mapping[str, lambda_.IFunction], buckets: Mapping[Bucket, s3.IBucket]) -> None:
    """Each function's S3_ACCESS, as statements on its role."""
    for name, accesses in S3_ACCESS.items():
        for access in accesses:
            functions[name].add_to_role_policy(
                iam.PolicyStatement(
                    actions=list(access.actions), resources=access.resources(buckets[access.bucket])
                )
            )
