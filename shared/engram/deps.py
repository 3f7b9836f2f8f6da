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
    from engram.export.service import ExportService
    from engram.memories.service import MemoryService
    from engram.procedures.service import ProcedureService
    from engram.profile.service import ProfileService
    from engram.providers.embeddings import Embedder
    from engram.sessions.service import SessionService
    from engram.working.service import WorkingMemoryService


@dataclass
class Deps:
    settings: Settings
    database: Database | None = None
    embedder: Embedder | None = None
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


def embedder() -> Embedder:
    deps = current()
    with deps._lock:
        if deps.embedder is None:
            from engram.providers.embeddings import make_embedder

            deps.embedder = make_embedder(deps.settings)
        return deps.embedder


def memory_service() -> MemoryService:
    from engram.memories.service import MemoryService

    s = current().settings
    return MemoryService(
        database(),
        embedder(),
        exact_scan_threshold=s.exact_scan_threshold,
        ef_search=s.hnsw_ef_search,
        max_scan_tuples=s.hnsw_max_scan_tuples,
    )


def working_service() -> WorkingMemoryService:
    from engram.working.service import WorkingMemoryService

    return WorkingMemoryService(database())


def procedure_service() -> ProcedureService:
    from engram.procedures.service import ProcedureService

    return ProcedureService(database(), embedder())


def session_service() -> SessionService:
    from engram.sessions.service import SessionService

    return SessionService(database(), embedder(), memory_service())


def container_service() -> ContainerService:
    from engram.containers.service import ContainerService

    return ContainerService(database())


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
