"""The only code that runs SQL for export and import. Export streams each table through a
server-side cursor in one transaction (one consistent snapshot of the tenant). Import inserts
with the ids, times and versions of the file, skipping ids that are already there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from engram.db.database import TenantTx
from engram.errors import InvalidInput
from engram.memories import predicates
from engram.memories.predicates import ContainerScope

_ITERSIZE = 1000


def _stream(cur: TenantTx, name: str, query: sql.Composed) -> Iterator[dict[str, Any]]:
    with cur.connection.cursor(name=name, row_factory=dict_row) as server_side:
        server_side.itersize = _ITERSIZE
        server_side.execute(query)
        yield from server_side


def containers(cur: TenantTx, tenant_id: UUID, scope: ContainerScope | None) -> Iterator[dict[str, Any]]:
    """In name order, so a parent always comes before its children; with a scope, its ancestors too."""
    ancestors: list[str] = []
    if scope is not None:
        parts = scope.name.split(".")
        ancestors = [".".join(parts[:i]) for i in range(1, len(parts))]
    where = (
        sql.SQL("true")
        if scope is None
        else sql.SQL("({} OR c.name = ANY({}))").format(
            predicates.in_container(scope, "c", "name"), sql.Literal(ancestors)
        )
    )
    return _stream(
        cur,
        "export_containers",
        sql.SQL(
            "SELECT c.name, c.parent, c.description, c.created_at FROM containers c "
            "WHERE c.tenant_id = {tenant} AND {where} ORDER BY c.name"
        ).format(tenant=sql.Literal(tenant_id), where=where),
    )


def memories(cur: TenantTx, tenant_id: UUID, scope: ContainerScope | None) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_memories",
        sql.SQL(
            "SELECT m.id, m.container, m.content, m.memory_type, m.tags, m.metadata, m.agent_id, "
            "m.conversation_id, m.user_id, m.visibility, m.confidence, m.is_latest, m.valid_from, "
            "m.valid_to, m.expires_at, "
            "m.embedding::text AS embedding, m.embedding_model, m.created_at, m.updated_at FROM memories m "
            "WHERE m.tenant_id = {tenant} AND {live} AND {scope} ORDER BY m.created_at, m.id"
        ).format(tenant=sql.Literal(tenant_id), live=predicates.live(), scope=predicates.in_container(scope)),
    )


def relationships(cur: TenantTx, tenant_id: UUID, scope: ContainerScope | None) -> Iterator[dict[str, Any]]:
    """Relationships whose both ends are exported."""

    def end(alias: str) -> sql.Composable:
        return sql.SQL("{live} AND {scope}").format(
            live=predicates.live(alias), scope=predicates.in_container(scope, alias)
        )

    return _stream(
        cur,
        "export_relationships",
        sql.SQL(
            "SELECT r.id, r.source_id, r.target_id, r.relationship_type, r.confidence, r.metadata, "
            "r.created_at FROM memory_relationships r "
            "JOIN memories s ON s.id = r.source_id JOIN memories t ON t.id = r.target_id "
            "WHERE r.tenant_id = {tenant} AND {source} AND {target} ORDER BY r.created_at, r.id"
        ).format(tenant=sql.Literal(tenant_id), source=end("s"), target=end("t")),
    )


def sessions(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_sessions",
        sql.SQL(
            "SELECT s.id, s.user_id, s.agent_id, s.container, s.metadata, s.message_count, "
            "s.last_message_at, s.created_at, s.updated_at FROM sessions s WHERE s.tenant_id = {tenant} "
            "ORDER BY s.created_at, s.id"
        ).format(tenant=sql.Literal(tenant_id)),
    )


def messages(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_messages",
        sql.SQL(
            "SELECT m.id, m.session_id, m.seq, m.user_id, m.agent_id, m.role, m.content, m.metadata, "
            "m.embedding::text AS embedding, m.embedding_model, m.extraction, m.extract_mode, "
            "m.extraction_error, m.occurred_at, m.created_at "
            "FROM session_messages m WHERE m.tenant_id = {tenant} ORDER BY m.session_id, m.seq"
        ).format(tenant=sql.Literal(tenant_id)),
    )


def working(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_working",
        sql.SQL(
            "SELECT w.scope, w.key, w.value, w.version, w.expires_at, w.user_id, w.created_at, w.updated_at "
            "FROM working_memory w WHERE w.tenant_id = {tenant} "
            "AND (w.expires_at IS NULL OR w.expires_at > now()) ORDER BY w.scope, w.key"
        ).format(tenant=sql.Literal(tenant_id)),
    )


def procedures(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_procedures",
        sql.SQL(
            "SELECT p.id, p.kind, p.trigger, p.content, p.agent_id, p.visibility, p.user_id, p.tags, "
            "p.metadata, p.embedding::text AS embedding, p.embedding_model, p.created_at, p.updated_at "
            "FROM procedures p WHERE p.tenant_id = {tenant} ORDER BY p.created_at, p.id"
        ).format(tenant=sql.Literal(tenant_id)),
    )


def plans(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_plans",
        sql.SQL(
            "SELECT p.plan_id, p.goal_event, p.goal_data, p.status, p.state, p.user_id, p.version, "
            "p.created_at, p.updated_at FROM plans p WHERE p.tenant_id = {tenant} ORDER BY p.plan_id"
        ).format(tenant=sql.Literal(tenant_id)),
    )


def task_contexts(cur: TenantTx, tenant_id: UUID) -> Iterator[dict[str, Any]]:
    return _stream(
        cur,
        "export_task_contexts",
        sql.SQL(
            "SELECT t.task_id, t.plan_id, t.event_type, t.response_event, t.response_topic, t.data, "
            "t.sub_tasks, t.state, t.version, t.created_at, t.updated_at FROM task_contexts t "
            "WHERE t.tenant_id = {tenant} ORDER BY t.task_id"
        ).format(tenant=sql.Literal(tenant_id)),
    )


# --- import -----------------------------------------------------------------------------------

_COLUMNS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # record -> (table, columns after tenant_id, conflict target)
    "container": ("containers", ("name", "parent", "description", "created_at"), "(tenant_id, name)"),
    "memory": (
        "memories",
        (
            "id",
            "container",
            "content",
            "memory_type",
            "tags",
            "metadata",
            "agent_id",
            "conversation_id",
            "user_id",
            "visibility",
            "confidence",
            "is_latest",
            "valid_from",
            "valid_to",
            "expires_at",
            "embedding",
            "embedding_model",
            "created_at",
            "updated_at",
        ),
        "(id)",
    ),
    "relationship": (
        "memory_relationships",
        ("id", "source_id", "target_id", "relationship_type", "confidence", "metadata", "created_at"),
        "(id)",
    ),
    "session": (
        "sessions",
        (
            "id",
            "user_id",
            "agent_id",
            "container",
            "metadata",
            "message_count",
            "last_message_at",
            "created_at",
            "updated_at",
        ),
        "(id)",
    ),
    "message": (
        "session_messages",
        (
            "id",
            "session_id",
            "seq",
            "user_id",
            "agent_id",
            "role",
            "content",
            "metadata",
            "embedding",
            "embedding_model",
            "extraction",
            "extract_mode",
            "extraction_error",
            "occurred_at",
            "created_at",
        ),
        "(id)",
    ),
    "working": (
        "working_memory",
        ("scope", "key", "value", "version", "expires_at", "user_id", "created_at", "updated_at"),
        "(tenant_id, scope, key)",
    ),
    "procedure": (
        "procedures",
        (
            "id",
            "kind",
            "trigger",
            "content",
            "agent_id",
            "visibility",
            "user_id",
            "tags",
            "metadata",
            "embedding",
            "embedding_model",
            "created_at",
            "updated_at",
        ),
        "(id)",
    ),
    "plan": (
        "plans",
        (
            "plan_id",
            "goal_event",
            "goal_data",
            "status",
            "state",
            "user_id",
            "version",
            "created_at",
            "updated_at",
        ),
        "(tenant_id, plan_id)",
    ),
    "task_context": (
        "task_contexts",
        (
            "task_id",
            "plan_id",
            "event_type",
            "response_event",
            "response_topic",
            "data",
            "sub_tasks",
            "state",
            "version",
            "created_at",
            "updated_at",
        ),
        "(tenant_id, task_id)",
    ),
}
_JSON_COLUMNS = {"metadata", "value", "goal_data", "state", "data"}


def insert(cur: TenantTx, tenant_id: UUID, record: str, fields: dict[str, Any]) -> bool:
    """Insert one record unless its key is already there; True when it was inserted."""
    table, columns, conflict = _COLUMNS[record]
    values: list[Any] = [tenant_id]
    placeholders = [sql.SQL("%s")]
    for column in columns:
        value = fields[column]
        if column in _JSON_COLUMNS:
            value = Jsonb(value)
        elif column == "embedding" and value is not None:
            value = "[" + ",".join(repr(float(x)) for x in value) + "]"
            placeholders.append(sql.SQL("%s::vector"))
            values.append(value)
            continue
        placeholders.append(sql.SQL("%s"))
        values.append(value)
    query = sql.SQL(
        "INSERT INTO {table} (tenant_id, {columns}) VALUES ({values}) ON CONFLICT {conflict} DO NOTHING "
        "RETURNING true AS inserted"
    ).format(
        table=sql.Identifier(table),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        values=sql.SQL(", ").join(placeholders),
        conflict=sql.SQL(conflict),
    )
    try:
        row = cur.execute(query, values).fetchone()
    except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
        # A record the schema refuses (an unknown memory_type, a dangling reference, ...).
        raise InvalidInput(f"the database refused the {record}: {exc.diag.message_primary}") from exc
    return row is not None


def owns(cur: TenantTx, record: str, row_id: UUID) -> bool:
    """Whether the row with this id belongs to the transaction's tenant (ids are global)."""
    table = _COLUMNS[record][0]
    found = cur.execute(sql.SQL("SELECT 1 FROM {} WHERE id = %s").format(sql.Identifier(table)), (row_id,))
    return found.fetchone() is not None
