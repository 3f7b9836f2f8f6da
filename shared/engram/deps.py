"""Collaborators, built once per process (a Lambda container or the local server) and reused.

Lambda handlers call these factories; the local stack and the tests `install` their own instances
(the embedded database, the local model) before any handler runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram.settings import Settings, get_settings

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engram.api.streaming import BodyStream, RequestStream
    from engram.changes.webhooks import WebhookService
    from engram.containers.service import ContainerService
    from engram.context.service import ContextService
    from engram.db.database import Database
    from engram.documents.blobs import BlobStore
    from engram.documents.runs import PipelineStarter
    from engram.documents.service import DocumentService
    from engram.export.import_jobs import ImportJobs
    from engram.export.importer import ImportService
    from engram.export.jobs import ExportJobs
    from engram.export.service import ExportService
    from engram.graph.service import GraphService
    from engram.instructions.service import InstructionsService
    from engram.memories.search.service import MemorySearch
    from engram.memories.service import MemoryService
    from engram.memories.writer import MemoryWriter
    from engram.pipeline.context import PipelineContext
    from engram.pipeline.runner import Invoke
    from engram.plans.service import PlanService, TaskContextService
    from engram.procedures.service import ProcedureService
    from engram.profile.service import ProfileService
    from engram.providers.embeddings import Embedder
    from engram.providers.llm import LLM
    from engram.relay import Relay
    from engram.sessions.service import SessionService
    from engram.sessions.summaries import SummaryService
    from engram.users.service import UserErasureService
    from engram.working.service import WorkingMemoryService


@dataclass
class Deps:
    settings: Settings
    database: Database | None = None
    embedder: Embedder | None = None
    blobs: BlobStore | None = None
    starter: PipelineStarter | None = None
    pipeline: PipelineContext | None = None
    llm: LLM | None = None
    admin_database: Database | None = None  # only the admin function uses it
    # How the in-process pipeline runner calls a step's handler, where no state machine is configured
    # (the local stack gives engram.local.functions.invoke_pipeline_step).
    invoke_step: Invoke | None = None
    s3: Any = None  # the S3 client of export jobs (AWS)
    # Where a handler may leave a body to stream (engram local's workers); None: bodies are whole.
    body_stream: BodyStream | None = None
    # Where the runtime leaves a request body that comes in pieces (engram local's workers); None: whole.
    request_stream: RequestStream | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


_current: Deps | None = None
_install_lock = threading.Lock()


def install(deps: Deps) -> None:
    global _current
    with _install_lock:
        _current = deps


def current() -> Deps:
    global _current
    with _install_lock:
        if _current is None:
            _current = Deps(settings=get_settings())
        return _current


def database() -> Database:
    deps = current()
    with deps._lock:
        if deps.database is None:
            from engram.db.connect import app_database

            deps.database = app_database(deps.settings)
        return deps.database


def admin_database() -> Database:
    deps = current()
    with deps._lock:
        if deps.admin_database is None:
            from engram.db.connect import admin_database as connect_admin

            deps.admin_database = connect_admin(deps.settings)
        return deps.admin_database


def embedder() -> Embedder:
    """The configured embedder, with the embedders of the models tenants were moved to (`engram
    reembed`) beside it: engram.providers.tenant_models."""
    deps = current()
    with deps._lock:
        if deps.embedder is None:
            from engram.providers.embeddings import make_embedder

            deps.embedder = make_embedder(deps.settings)
        from engram.providers.tenant_models import TenantEmbedders

        if not isinstance(deps.embedder, TenantEmbedders):
            from engram.providers.embeddings import make_model_embedder

            settings = deps.settings
            deps.embedder = TenantEmbedders(deps.embedder, lambda model: make_model_embedder(settings, model))
        return deps.embedder


def memory_service() -> MemoryService:
    from engram.instructions.service import instructions_for
    from engram.memories.service import MemoryService
    from engram.memories.write_extraction import WriteExtraction

    extraction = WriteExtraction(
        database(), llm, llm_available=llm_configured(), instructions=instructions_for
    )
    return MemoryService(database(), memory_writer(), extraction)


def memory_search() -> MemorySearch:
    """Search over memories and document chunks (POST /v1/search)."""
    from engram.documents.repo import CHUNKS
    from engram.memories.search.service import MemorySearch

    s = current().settings
    return MemorySearch(
        database(),
        embedder(),
        exact_scan_threshold=s.exact_scan_threshold,
        ef_search=s.hnsw_ef_search,
        max_scan_tuples=s.hnsw_max_scan_tuples,
        chunks=CHUNKS,
    )


def boto_client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    # SigV4 everywhere: presigned S3 URLs must work in every region and with KMS-encrypted buckets.
    config = Config(signature_version="s3v4") if service == "s3" else None
    return boto3.client(service, region_name=current().settings.aws_region, config=config)  # type: ignore[call-overload]


def blob_store() -> BlobStore:
    """S3 when a documents bucket is configured, else a folder under the data directory."""
    deps = current()
    with deps._lock:
        if deps.blobs is None:
            from engram.documents.blobs import LocalBlobStore, S3BlobStore

            s = deps.settings
            deps.blobs = (
                S3BlobStore(boto_client("s3"), s.documents_bucket)
                if s.documents_bucket
                else LocalBlobStore(s.blob_dir)
            )
        return deps.blobs


def pipeline_starter() -> PipelineStarter:
    """Step Functions when a state machine is configured, else the in-process local runner."""
    deps = current()
    with deps._lock:
        if deps.starter is None:
            from engram.pipeline.runner import LocalRunner
            from engram.pipeline.start import LocalStarter, StepFunctionsStarter

            arn = deps.settings.state_machine_arn
            if arn:
                deps.starter = StepFunctionsStarter(boto_client("stepfunctions"), arn)
            elif deps.invoke_step is not None:
                deps.starter = LocalStarter(LocalRunner(deps.invoke_step))
            else:
                raise RuntimeError(
                    "no way to run the ingestion pipeline: set ENGRAM_STATE_MACHINE_ARN, or run the local "
                    "stack (engram local)"
                )
        return deps.starter


def pipeline_context() -> PipelineContext:
    """What the pipeline's steps use: the database and the blob store, and the embedder and the LLM
    built when a step first asks (chunk's function builds neither)."""
    db, blobs = database(), blob_store()
    deps = current()
    with deps._lock:
        if deps.pipeline is None:
            from engram.pipeline.context import PipelineContext

            deps.pipeline = PipelineContext(
                deps.settings, db, blobs, make_embedder=embedder, boto_client=boto_client, make_llm=llm
            )
        return deps.pipeline


def document_service() -> DocumentService:
    from engram.documents.blobs import S3BlobStore
    from engram.documents.service import DocumentService

    s = current().settings
    blobs = blob_store()
    return DocumentService(
        database(),
        blobs,
        pipeline_starter(),
        work_prefix=s.work_prefix,
        max_file_bytes=s.max_file_bytes,
        presigner=blobs if isinstance(blobs, S3BlobStore) else None,
        llm_available=llm_configured(),
        fetch_urls=s.fetch_urls,
    )


def llm_configured() -> bool:
    """Whether extract=full can run, without building a client."""
    deps = current()
    return deps.llm is not None or deps.settings.llm_provider != "none"


def llm() -> LLM | None:
    """The configured LLM provider (ENGRAM_LLM_PROVIDER), or None when there is none."""
    deps = current()
    with deps._lock:
        if deps.llm is None and deps.settings.llm_provider != "none":
            from engram.providers.llm_factory import make_llm

            deps.llm = make_llm(deps.settings)
        return deps.llm


def graph_service() -> GraphService:
    from engram.graph.service import GraphService

    return GraphService(database(), memory_writer())


def working_service() -> WorkingMemoryService:
    from engram.working.service import WorkingMemoryService

    return WorkingMemoryService(database())


def procedure_service() -> ProcedureService:
    from engram.procedures.service import ProcedureService

    return ProcedureService(database(), embedder())


def session_service() -> SessionService:
    from engram.sessions.message_memories import MessageExtraction
    from engram.sessions.service import SessionService

    extraction = MessageExtraction(database(), embedder(), llm=llm, writer=memory_writer())
    return SessionService(database(), embedder(), extraction)


def memory_writer() -> MemoryWriter:
    from engram.graph.link_rules import RuleLinker
    from engram.memories.writer import MemoryWriter

    return MemoryWriter(embedder(), RuleLinker(current().settings.link_similarity))


def user_erasure() -> UserErasureService:
    from engram.users.service import UserErasureService

    return UserErasureService(database(), blob_store(), work_prefix=current().settings.work_prefix)


def instructions_service() -> InstructionsService:
    from engram.instructions.service import InstructionsService

    return InstructionsService(database())


def container_service() -> ContainerService:
    from engram.containers.service import ContainerService

    return ContainerService(database(), blob_store(), work_prefix=current().settings.work_prefix)


def profile_service() -> ProfileService:
    from engram.profile.service import ProfileService

    return ProfileService(database(), memory_search())


def export_service() -> ExportService:
    from engram.export.service import ExportService

    return ExportService(database(), blob_store())


def import_service() -> ImportService:
    from engram.export.importer import ImportService

    return ImportService(database(), memory_writer(), blob_store(), current().settings.work_prefix)


def plan_service() -> PlanService:
    from engram.plans.service import PlanService

    return PlanService(database())


def task_context_service() -> TaskContextService:
    from engram.plans.service import TaskContextService

    return TaskContextService(database())


def export_jobs() -> ExportJobs | None:
    """Asynchronous exports through the exports bucket (AWS), or None: exports are answered at once."""
    settings = current().settings
    if not settings.export_bucket:
        return None
    from engram.export.jobs import ExportJobs

    return ExportJobs(s3_client(), settings.export_bucket, settings.export_url_ttl_seconds)


def body_stream() -> BodyStream | None:
    """Where a handler may leave a body to be streamed (engram local's workers), or None: answer it whole."""
    return current().body_stream


def request_body() -> Iterable[bytes] | None:
    """The request's body in pieces, as the client sends them (engram local's workers, on a route marked
    `streamed_body`), or None: the body is whole in the event."""
    stream = current().request_stream
    return stream.take() if stream is not None else None


def import_jobs() -> ImportJobs | None:
    """Uploaded, asynchronous imports through the exports bucket (AWS), or None: answered at once."""
    settings = current().settings
    if not settings.export_bucket:
        return None
    from engram.export.import_jobs import ImportJobs

    return ImportJobs(s3_client(), settings.export_bucket, settings.export_url_ttl_seconds)


def s3_client() -> Any:
    deps = current()
    with deps._lock:
        if deps.s3 is None:
            deps.s3 = boto_client("s3")  # SigV4, so that the export's presigned links work everywhere
        return deps.s3


def context_service() -> ContextService:
    from engram.context.service import ContextService

    return ContextService(database(), embedder(), memory_search())


def summary_service() -> SummaryService:
    from engram.sessions.summaries import SummaryService

    return SummaryService(database(), llm)


def webhook_service() -> WebhookService:
    from engram.changes.webhooks import WebhookService

    return WebhookService(database(), event_bus=current().settings.event_bus_name)


def relay() -> Relay:
    """Summaries, then change events: to the EventBridge bus if one is configured (AWS), else to webhooks."""
    from engram.relay import Relay

    settings = current().settings
    if settings.event_bus_name:
        from engram.changes.eventbridge import EventBridgePublisher

        events: Any = EventBridgePublisher(database(), boto_client("events"), settings.event_bus_name)
    else:
        import httpx

        from engram.changes.delivery import WebhookDelivery

        client = httpx.Client(timeout=settings.webhook_timeout_seconds, follow_redirects=False)
        events = WebhookDelivery(database(), client)
    return Relay(summary_service(), events)
