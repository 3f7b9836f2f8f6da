"""The migration runner, used locally and by the deploy-time migration Lambda.

Forward-only: each `migrations/NNNN_name.sql` runs once, in its own transaction, and is recorded
with its checksum. Concurrent runners serialise on an advisory lock, so two deploys (or a deploy and
`engram local`) never apply the same file twice. Changing a file that was already applied is an
error, never silently ignored.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from engram.errors import MigrationError
from engram.observability import logger

# Any constant works, as long as every runner uses the same one.
MIGRATION_LOCK_KEY = 0x656E6772616D  # "engram"
_FILE_PATTERN = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations directory not found: {directory}")
    found: list[Migration] = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        match = _FILE_PATTERN.match(path.name)
        if not match:
            raise MigrationError(f"migration file name must look like 0001_what.sql: {path.name}")
        found.append(Migration(version=match[1], name=match[2], path=path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a version number in {directory}")
    return found


def migrate(
    conninfo: str,
    directory: Path,
    *,
    embedding_indexes: list[tuple[str, int]] | None = None,
) -> list[str]:
    """Apply pending migrations; return the versions applied by this call."""
    applied_now: list[str] = []
    migrations = discover(directory)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version text PRIMARY KEY,
                       name text NOT NULL,
                       checksum text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {row[0]: row[1] for row in conn.execute("SELECT version, checksum FROM schema_migrations")}
            for migration in migrations:
                if migration.version in done:
                    if done[migration.version] != migration.checksum:
                        raise MigrationError(
                            f"migration {migration.path.name} changed after it was applied; "
                            "migrations are forward-only: add a new file instead"
                        )
                    continue
                with conn.transaction():
                    lent = _lend_schema_create(conn)
                    conn.execute(migration.sql.encode())
                    if lent:
                        conn.execute(_TAKE_BACK_SCHEMA_CREATE)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, migration.checksum),
                    )
                logger.info(
                    "applied migration", extra={"version": migration.version, "migration": migration.name}
                )
                applied_now.append(migration.version)
            for model, dimensions in embedding_indexes or []:
                for table in EMBEDDED_TABLES:
                    ensure_embedding_index(conn, model, dimensions, table=table)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied_now


# Migrations hand functions to the app's roles (`ALTER FUNCTION ... OWNER TO engram_auth`), and since
# PostgreSQL 15 a migrator that is no superuser (the RDS master user) may do that only if the new owner
# may create in the schema, which no role but the database owner may in `public` by default. So a
# migration's transaction lends CREATE on `public` to every role and takes it back before it commits:
# no other session ever sees the grant, and a function keeps its owner after it.
_PUBLIC_MAY_CREATE = """SELECT rolsuper OR EXISTS (
    SELECT 1 FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
    WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE')
    FROM pg_roles WHERE rolname = current_user"""
_TAKE_BACK_SCHEMA_CREATE = "REVOKE CREATE ON SCHEMA public FROM PUBLIC"


def _lend_schema_create(conn: psycopg.Connection[Any]) -> bool:
    """Lend CREATE on `public` to every role for this transaction, unless it is not needed (a
    superuser, or a schema that already grants it); True if lent, so the caller takes it back."""
    row = conn.execute(_PUBLIC_MAY_CREATE).fetchone()
    if row is None or row[0]:
        return False
    conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
    return True


# Tables whose `embedding` column gets one partial HNSW index per model (chunks: 0003_documents).
EMBEDDED_TABLES = ("memories", "chunks")


def embedding_index_name(model: str, dimensions: int, table: str = "memories") -> str:
    digest = hashlib.sha1(model.encode(), usedforsecurity=False).hexdigest()[:10]
    return f"{table}_embedding_{dimensions}_{digest}_hnsw"


def ensure_embedding_index(
    conn: psycopg.Connection[Any], model: str, dimensions: int, *, table: str = "memories"
) -> None:
    """One partial HNSW (cosine) index per embedding model, over the vectors cast to its dimension.

    Search uses exactly this expression and predicate, so the planner can pick the index; vectors of
    other models never meet in one index or one distance computation."""
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {name} {body} WHERE {model}").format(
            name=sql.Identifier(embedding_index_name(model, dimensions, table)),
            body=hnsw_index_body(dimensions, table),
            model=of_model(model),
        )
    )


def create_partial_hnsw_index(
    conn: psycopg.Connection[Any], name: str, dimensions: int, where: sql.Composable
) -> None:
    """Build an HNSW index of memories over the rows `where` selects, without blocking writes
    (CONCURRENTLY: `conn` in autocommit): a large tenant's or container's own, or the model's shared one
    rebuilt (engram.db.tenant_indexes, engram.db.container_indexes)."""
    conn.execute(
        sql.SQL("CREATE INDEX CONCURRENTLY {name} {body} WHERE {where}").format(
            name=sql.Identifier(name), body=hnsw_index_body(dimensions), where=where
        )
    )


def hnsw_index_body(dimensions: int, table: str = "memories") -> sql.Composed:
    """`ON <table> USING hnsw (...)`: every vector index's table, expression and operator class (the
    model's shared ones here, large tenants' and containers' in engram.db.tenant_indexes and
    engram.db.container_indexes), the shape search orders by."""
    return sql.SQL("ON {table} USING hnsw ((embedding::vector({dims})) vector_cosine_ops)").format(
        table=sql.Identifier(table), dims=sql.Literal(int(dimensions))
    )


def of_model(model: str) -> sql.Composed:
    """The shared index's predicate: one model's vectors."""
    return sql.SQL("embedding_model = {}").format(sql.Literal(model))


def applied_versions(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
