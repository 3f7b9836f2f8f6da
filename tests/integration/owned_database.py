"""A database owned by a role that is no superuser, as the RDS master user is not: it may log in, make
roles and own the database, so every table it migrates is its own and forced row-level security applies
to it, and PostgreSQL's rules for a non-superuser (handing a function to another role, creating an
extension) apply to its migrations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from engram.local.stack import LocalDatabase

# The roles the migrations make. They exist cluster-wide once the session's database is migrated, so
# the owner is given them as it would hold them had it made them (PostgreSQL 16: with ADMIN OPTION).
APP_ROLES = ("engram_app", "engram_auth", "engram_search", "engram_sweep", "engram_relay")


@dataclass(frozen=True)
class OwnedDatabase:
    owner: str  # connection string of the owner, who migrates
    admin: str  # of a superuser, who sees every tenant's rows


@contextmanager
def owned_database(local_db: LocalDatabase, prefix: str) -> Iterator[OwnedDatabase]:
    suffix = uuid.uuid4().hex[:8]
    role_name, db_name = f"migrator_{suffix}", f"{prefix}_{suffix}"
    role, name = sql.Identifier(role_name), sql.Identifier(db_name)
    roles = sql.SQL(", ").join(sql.Identifier(r) for r in APP_ROLES)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE NOSUPERUSER").format(role))
        conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(roles, role))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(name, role))
    admin = make_conninfo(local_db.admin_conninfo, dbname=db_name)
    with psycopg.connect(admin, autocommit=True) as conn:
        # pgvector is no trusted extension here; on RDS the master user may create it.
        conn.execute("CREATE EXTENSION vector")
    try:
        yield OwnedDatabase(owner=make_conninfo(admin, user=role_name), admin=admin)
    finally:
        with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(name))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
