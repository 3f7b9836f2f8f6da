"""The deploy-time migration: run by the migrate Lambda (a CDK Trigger) on every deploy that changes it.

It connects as the master user (from Secrets Manager), applies `migrations/` with the same runner as
`engram local`, makes sure the embedding model's HNSW index exists (and those of large tenants and their
large containers: engram.db.tenant_indexes; a daily schedule runs this function for them too), and checks
what the app needs: the pgvector extension and the `engram_app` role, which on RDS must hold `rds_iam` so
RDS Proxy can log it in with IAM tokens. Every step is idempotent, so running it again changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psycopg
from psycopg import sql

from engram.db.connect import master_conninfo_factory, wait_for_database
from engram.db.migrate import migrate
from engram.db.tenant_indexes import IndexPolicy, ensure_tenant_indexes
from engram.errors import MigrationError
from engram.observability import logger
from engram.settings import Settings


@dataclass(frozen=True)
class DeployReport:
    applied: list[str]
    vector_version: str
    app_role: str
    app_role_iam: bool  # True when rds_iam exists (RDS/Aurora) and the app role holds it
    # HNSW indexes of large tenants and of their large containers created now.
    tenant_indexes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def migrate_for_deploy(settings: Settings, secrets_client: Any = None) -> DeployReport:
    """Migrate as the owner: the master secret on AWS, `DATABASE_URL` under `sam local`."""
    if settings.db_secret_arn:
        factory = master_conninfo_factory(settings, secrets_client)
    elif settings.database_url:
        url = settings.database_url
        factory = lambda: url  # noqa: E731
    else:
        raise MigrationError("no owner connection: set ENGRAM_DB_SECRET_ARN (AWS) or DATABASE_URL")
    # A cluster paused at 0 ACU resumes on the first connection: wait for it (and for a rotated secret).
    conninfo = wait_for_database(factory, wait_seconds=settings.db_connect_wait_seconds)
    applied = migrate(
        conninfo,
        settings.migrations_dir,
        embedding_indexes=[(settings.resolved_embedding_model, settings.resolved_embedding_dimensions)],
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        report = _ensure_app_prerequisites(conn, settings.app_role, applied)
    created = ensure_tenant_indexes(conninfo, IndexPolicy.of(settings))
    report = replace(report, tenant_indexes=created)
    logger.info("migrations done", extra=report.as_dict())
    return report


def _ensure_app_prerequisites(
    conn: psycopg.Connection[Any], app_role: str, applied: list[str]
) -> DeployReport:
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    role = conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (app_role,)).fetchone()
    if role is None or not role[0]:
        raise MigrationError(f"the app role {app_role!r} is missing or cannot log in after migrating")
    has_rds_iam = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam'").fetchone() is not None
    if has_rds_iam:
        # Granting a membership that is already held only raises a notice.
        conn.execute(sql.SQL("GRANT rds_iam TO {}").format(sql.Identifier(app_role)))
    return DeployReport(
        applied=applied,
        vector_version=str(version[0]) if version else "",
        app_role=app_role,
        app_role_iam=has_rds_iam,
    )
