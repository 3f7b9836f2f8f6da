"""What each function may do in the buckets, action by action: declared here, granted from here.

Every grant names exact actions (no `s3:GetObject*`, no CDK `grant_read_write`, which also hands out
object-lock, tagging and ACL actions nobody calls): object actions on the keys they are used under,
listing on the bucket. The buckets are SSE-S3 encrypted, so no KMS grant goes with them.

The deploy gate holds these grants against the code (infra/gate/checks.s3_actions_match_code): the S3
operations a function's code names (infra/gate/clients.py) need exactly the actions its role holds,
but for operations listed in NOT_CALLED (code the function builds and never runs). OPERATION_ACTIONS
says which actions each operation needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

_BLOB_DELETES = ("list_object_versions", "delete_objects")
# Operations a function's code names but never runs: function -> operation -> why.
NOT_CALLED: Mapping[str, Mapping[str, str]] = {
    TRIGGER: dict.fromkeys(
        ("put_object", *_BLOB_DELETES),
        "the document service it registers drops with also stores uploads and deletes documents (the "
        "documents API's paths); the trigger only reads each drop",
    ),
    DOCUMENTS_FUNCTION: {"get_object": "the blob store reads files for the pipeline; the API never does"},
    CONTAINERS_FUNCTION: dict.fromkeys(
        ("get_object", "put_object"), "it only deletes documents' files, through the blob store"
    ),
    EXPORT_FUNCTION: {
        "upload_fileobj": "ExportJobs.run writes the export file: the export worker's code, not the API's",
        **dict.fromkeys(_BLOB_DELETES, "exports and imports read and write documents' files, never delete"),
    },
    EXPORT_WORKER_FUNCTION: dict.fromkeys(
        _BLOB_DELETES, "exports and imports read and write documents' files, never delete them"
    ),
}

# boto3's S3 operation -> the IAM actions it needs. Naming a VersionId adds GetObjectVersion to a read and
# makes a delete DeleteObjectVersion; handling NoSuchKey on a read needs ListBucket (else S3 says 403).
OPERATION_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "get_object": ("s3:GetObject",),
    "head_object": ("s3:GetObject",),
    "download_file": ("s3:GetObject",),
    "download_fileobj": ("s3:GetObject",),
    "put_object": ("s3:PutObject",),
    "create_multipart_upload": ("s3:PutObject",),
    "upload_part": ("s3:PutObject",),
    "complete_multipart_upload": ("s3:PutObject",),
    "abort_multipart_upload": ("s3:AbortMultipartUpload",),
    "upload_file": ("s3:PutObject", "s3:AbortMultipartUpload"),
    "upload_fileobj": ("s3:PutObject", "s3:AbortMultipartUpload"),
    "copy_object": ("s3:GetObject", "s3:PutObject"),
    "delete_object": ("s3:DeleteObject",),
    "delete_objects": ("s3:DeleteObject",),
    "list_objects": ("s3:ListBucket",),
    "list_objects_v2": ("s3:ListBucket",),
    "list_object_versions": ("s3:ListBucketVersions",),
}
READS = frozenset({"get_object", "head_object", "download_file", "download_fileobj"})
DELETES = frozenset({"delete_object", "delete_objects"})


def operation_actions(operation: str, mentions: Iterable[str]) -> tuple[str, ...]:
    """The IAM actions one operation needs, given the names the function's code mentions (S3_MENTIONS);
    KeyError for an operation with no entry in OPERATION_ACTIONS."""
    named = set(mentions)
    actions = OPERATION_ACTIONS[operation]
    if "VersionId" in named and operation in DELETES:
        return ("s3:DeleteObjectVersion",)
    if operation in READS:
        actions = (
            *actions,
            *(["s3:GetObjectVersion"] if "VersionId" in named else []),
            *(["s3:ListBucket"] if "NoSuchKey" in named else []),
        )
    return actions


def granted_actions(name: str) -> frozenset[str]:
    return frozenset(a for access in S3_ACCESS.get(name, ()) for a in access.actions)


def grant_s3(functions: Mapping[str, lambda_.IFunction], buckets: Mapping[Bucket, s3.IBucket]) -> None:
    """Each function's S3_ACCESS, as statements on its role."""
    for name, accesses in S3_ACCESS.items():
        for access in accesses:
            functions[name].add_to_role_policy(
                iam.PolicyStatement(
                    actions=list(access.actions), resources=access.resources(buckets[access.bucket])
                )
            )
