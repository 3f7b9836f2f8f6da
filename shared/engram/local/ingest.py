"""Ingestion in `engram local`: the drop folder watcher and the in-process pipeline runner."""

from __future__ import annotations

from dataclasses import dataclass

from engram import deps
from engram.db.database import Database
from engram.pipeline.start import LocalStarter
from engram.pipeline.sweep import resume
from engram.pipeline.watch import DropWatcher
from engram.settings import Settings
from engram.tenants.service import ensure_existing_tenant


@dataclass
class LocalIngest:
    watcher: DropWatcher
    resumed: int

    def stop(self) -> None:
        self.watcher.stop()
        starter = deps.pipeline_starter()
        if isinstance(starter, LocalStarter):
            starter.shutdown()


def start_local_ingest(settings: Settings, admin_db: Database, tenant_name: str) -> LocalIngest:
    """Resume documents a previous run left unfinished, then watch drop/<container>/ for new files
    (they belong to `tenant_name`, the dev tenant)."""
    tenant_id = ensure_existing_tenant(admin_db, tenant_name)
    resumed = resume(deps.database(), deps.pipeline_starter())
    watcher = DropWatcher(
        settings.drop_dir,
        tenant_id,
        deps.document_service(),
        max_file_bytes=settings.max_file_bytes,
        interval=settings.watch_interval_seconds,
    )
    watcher.start()
    return LocalIngest(watcher, resumed)
