"""Bringing up the database side of the local stack: embedded PostgreSQL (or DATABASE_URL),
migrations, and the app's collaborators."""

from __future__ import annotations

from dataclasses import dataclass

from engram import deps
from engram.db.database import Database
from engram.db.embedded import EmbeddedPostgres, start_embedded
from engram.db.migrate import migrate
from engram.db.tenant_indexes import IndexPolicy, ensure_tenant_indexes
from engram.local.functions import invoke_pipeline_step
from engram.settings import Settings


@dataclass
class LocalDatabase:
    settings: Settings
    admin_conninfo: str
    app: Database
    admin: Database
    embedded: EmbeddedPostgres | None

    def close(self) -> None:
        self.app.close()
        self.admin.close()


def open_database(settings: Settings, *, cleanup_mode: str = "stop", app_pool_size: int = 8) -> LocalDatabase:
    """Start (or attach to) the database, apply migrations, and open app and admin pools."""
    embedded: EmbeddedPostgres | None = None
    if settings.database_url:
        admin_conninfo = settings.database_url
        app = Database(
            settings.app_database_url or admin_conninfo,
            set_role=None if settings.app_database_url else settings.app_role,
            max_size=app_pool_size,
        )
    else:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        embedded = start_embedded(settings.pg_data_dir, cleanup_mode=cleanup_mode)
        admin_conninfo = embedded.admin_conninfo
        app = Database(embedded.app_conninfo(settings.app_role), max_size=app_pool_size)
    migrate(
        admin_conninfo,
        settings.migrations_dir,
        embedding_indexes=[(settings.resolved_embedding_model, settings.resolved_embedding_dimensions)],
    )
    ensure_tenant_indexes(admin_conninfo, IndexPolicy.of(settings))
    admin = Database(admin_conninfo, max_size=2)
    return LocalDatabase(settings, admin_conninfo, app.open(), admin, embedded)


def install_app(local: LocalDatabase) -> None:
    """Make the handlers use this database (and the configured embedder)."""
    deps.install(deps.Deps(settings=local.settings, database=local.app, invoke_step=invoke_pipeline_step))
