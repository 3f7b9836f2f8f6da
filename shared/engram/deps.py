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
    from engram.containers.service import ContainerService
    from engram.db.database import Database
    from engram.documents.service import DocumentService
    from engram.export.service import ExportService
    from engram.graph.service import GraphService
    from engram.instructions.service import InstructionsService
    from engram.memories.service import MemoryService
    from engram.pipeline.blobs import BlobStore
    from engram.pipeline.context import PipelineContext
    from engram.pipeline.start import PipelineStarter
    from engram.procedures.service import ProcedureService
    from engram.profile.service import ProfileService
    from engram.providers.embeddings import Embedder
    from engram.providers.llm import LLM
    from engram.sessions.service import SessionService
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
    s3: Any = None
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
    deps = current()
    with deps._lock:
        if deps.embedder is None:
            from engram.providers.embeddings import make_embedder

            deps.embedder = make_embedder(deps.settings)
        return deps.embedder


def memory_service() -> MemoryService:
    from engram.documents.search import ChunkSearcher
    from engram.memories.service import MemoryService

    s = current().settings
    return MemoryService(
        database(),
        embedder(),
        exact_scan_threshold=s.exact_scan_threshold,
        ef_search=s.hnsw_ef_search,
        max_scan_tuples=s.hnsw_max_scan_tuples,
        chunks=ChunkSearcher(
            exact_scan_threshold=s.exact_scan_threshold,
            ef_search=s.hnsw_ef_search,
            max_scan_tuples=s.hnsw_max_scan_tuples,
        ),
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
            from engram.pipeline.blobs import LocalBlobStore, S3BlobStore

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
            from engram.pipeline.start import LocalStarter, StepFunctionsStarter

            arn = deps.settings.state_machine_arn
            deps.starter = StepFunctionsStarter(boto_client("stepfunctions"), arn) if arn else LocalStarter()
        return deps.starter


def pipeline_context() -> PipelineContext:
    db, emb, blobs, model = database(), embedder(), blob_store(), llm()
    deps = current()
    with deps._lock:
        if deps.pipeline is None:
            from engram.pipeline.context import build_context

            deps.pipeline = build_context(deps.settings, db, blobs, emb, boto_client, llm=model)
        return deps.pipeline


def document_service() -> DocumentService:
    from engram.documents.service import DocumentService
    from engram.pipeline.blobs import S3BlobStore

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
            from engram.providers.llm import make_llm

            deps.llm = make_llm(deps.settings)
        return deps.llm


def graph_service() -> GraphService:
    from engram.graph.service import GraphService

    return GraphService(database(), memory_service())


def working_service() -> WorkingMemoryService:
    from engram.working.service import WorkingMemoryService

    return WorkingMemoryService(database())


def procedure_service() -> ProcedureService:
    from engram.procedures.service import ProcedureService

    return ProcedureService(database(), embedder())


def session_service() -> SessionService:
    from engram.pipeline.linking import RuleLinker
    from engram.sessions.extraction import MessageExtraction
    from engram.sessions.service import SessionService

    extraction = MessageExtraction(
        database(), embedder(), llm=llm, linker=RuleLinker(current().settings.link_similarity)
    )
    return SessionService(database(), embedder(), extraction)


def instructions_service() -> InstructionsService:
    from engram.instructions.service import InstructionsService

    return InstructionsService(database())


def container_service() -> ContainerService:
    from engram.containers.service import ContainerService

    return ContainerService(database(), blob_store(), work_prefix=current().settings.work_prefix)


def profile_service() -> ProfileService:
    from engram.profile.service import ProfileService

    return ProfileService(database(), memory_service())


def export_service() -> ExportService:
    from engram.export.service import ExportService

    return ExportService(database())


def s3_client() -> Any:
    deps = current()
    with deps._lock:
        if deps.s3 is None:
            import boto3

            deps.s3 = boto3.client("s3", region_name=deps.settings.aws_region)
        return deps.s3
