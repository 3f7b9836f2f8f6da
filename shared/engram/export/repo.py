"""The export's reads: each record kind's table streamed through a server-side cursor, in one transaction
(one consistent snapshot of the tenant), in an order that does not depend on how the rows were written, so
that a tenant imported elsewhere exports the same lines. The columns are the record's fields.

With a container scope: that subtree's memories (and the containers above it, so the file imports on
its own), its documents and their chunks, the entities and relations those memories mention or state,
and the links whose both ends are exported. Expired memories are never exported, nor anything that
points at one. The import writes through each area's own repository, not here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.rows import dict_row

from engram.db.database import TenantTx
from engram.export.coverage import TABLE_OF
from engram.export.models import RECORD_MODELS
from engram.memories import predicates
from engram.memories.predicates import ContainerScope

_ITERSIZE = 1000
VECTOR_COLUMNS = frozenset({"embedding"})
Scope = ContainerScope | None


@dataclass(frozen=True)
class _Read:
    alias: str
    order: str
    where: Callable[[Scope], sql.Composable]
    whole_tenant_only: bool = False  # conversations, state and procedures belong to no container


def _true(scope: Scope) -> sql.Composable:
    return sql.SQL("true")


def _memory_exported(column: str) -> Callable[[Scope], sql.Composable]:
    def where(scope: Scope) -> sql.Composable:
        return sql.SQL(
            "EXISTS (SELECT 1 FROM memories xm WHERE xm.id = {col} AND {live} AND {scope})"
        ).format(
            col=sql.SQL(column),
            live=predicates.live("xm"),
            scope=predicates.in_container(scope, "xm"),
        )

    return where


def _document_exported(column: str) -> Callable[[Scope], sql.Composable]:
    def where(scope: Scope) -> sql.Composable:
        if scope is None:
            return sql.SQL("true")
        return sql.SQL("EXISTS (SELECT 1 FROM documents xd WHERE xd.id = {col} AND {scope})").format(
            col=sql.SQL(column), scope=predicates.in_container(scope, "xd")
        )

    return where


def _both(*parts: Callable[[Scope], sql.Composable]) -> Callable[[Scope], sql.Composable]:
    return lambda scope: sql.SQL(" AND ").join(part(scope) for part in parts)


def _containers(scope: Scope, alias: str = "t") -> sql.Composable:
    """The scope's containers and their ancestors (so the file imports on its own)."""
    if scope is None:
        return sql.SQL("true")
    parts = scope.name.split(".")
    ancestors = [".".join(parts[:i]) for i in range(1, len(parts))]
    return sql.SQL("({} OR {} = ANY({}))").format(
        predicates.in_container(scope, alias, "name"), sql.Identifier(alias, "name"), sql.Literal(ancestors)
    )


def _instructions(scope: Scope) -> sql.Composable:
    """The tenant's own, and those of the exported containers."""
    if scope is None:
        return sql.SQL("true")
    return sql.SQL(
        "(t.container IS NULL OR EXISTS (SELECT 1 FROM containers xc WHERE xc.tenant_id = t.tenant_id "
        "AND xc.name = t.container AND {}))"
    ).format(_containers(scope, "xc"))


def _entities(scope: Scope, alias: str = "t") -> sql.Composable:
    """Scoped: the entities the exported memories mention, or whose relations they state."""
    if scope is None:
        return sql.SQL("true")
    entity = sql.Identifier(alias, "id")
    return sql.SQL(
        "(EXISTS (SELECT 1 FROM entity_mentions xe WHERE xe.entity_id = {entity} AND {mentioned}) "
        "OR EXISTS (SELECT 1 FROM entity_relations xr WHERE {entity} IN (xr.source_entity, xr.target_entity) "
        "AND {stated}))"
    ).format(
        entity=entity,
        mentioned=_memory_exported("xe.memory_id")(scope),
        stated=_memory_exported("xr.source_memory_id")(scope),
    )


def _entity_keys(scope: Scope) -> sql.Composable:
    if scope is None:
        return sql.SQL("true")
    return sql.SQL("EXISTS (SELECT 1 FROM entities xen WHERE xen.id = t.entity_id AND {})").format(
        _entities(scope, "xen")
    )


def _relations(scope: Scope) -> sql.Composable:
    """A relation a memory states goes with that memory; a manual one only with the whole tenant."""
    stated = _memory_exported("t.source_memory_id")(scope)
    if scope is None:
        return sql.SQL("(t.source_memory_id IS NULL OR {})").format(stated)
    return sql.SQL("t.source_memory_id IS NOT NULL AND {}").format(stated)


def _live_memories(scope: Scope) -> sql.Composable:
    return sql.SQL("{} AND {}").format(predicates.live("t"), predicates.in_container(scope, "t"))


def _live_working(scope: Scope) -> sql.Composable:
    return sql.SQL("(t.expires_at IS NULL OR t.expires_at > now())")


READS: dict[str, _Read] = {
    "container": _Read("t", "t.name", _containers),
    "instruction": _Read("t", "t.container NULLS FIRST", _instructions),
    "document": _Read("t", "t.created_at, t.id", lambda scope: predicates.in_container(scope, "t")),
    "chunk": _Read("t", "t.document_id, t.ordinal", _document_exported("t.document_id")),
    "session": _Read("t", "t.created_at, t.id", _true, whole_tenant_only=True),
    "message": _Read("t", "t.session_id, t.seq", _true, whole_tenant_only=True),
    "summary": _Read("t", "t.session_id", _true, whole_tenant_only=True),
    "memory": _Read("t", "t.created_at, t.id", _live_memories),
    "memory_source": _Read(
        "t",
        "t.memory_id, t.document_id",
        _both(_memory_exported("t.memory_id"), _document_exported("t.document_id")),
    ),
    "relationship": _Read(
        "t",
        "t.created_at, t.id",
        _both(_memory_exported("t.source_id"), _memory_exported("t.target_id")),
    ),
    "entity": _Read("t", "t.created_at, t.id", _entities),
    "entity_key": _Read("t", "t.entity_id, t.entity_type, t.key", _entity_keys),
    "mention": _Read("t", "t.entity_id, t.memory_id", _memory_exported("t.memory_id")),
    "relation": _Read("t", "t.created_at, t.id", _relations),
    "working": _Read("t", "t.scope, t.key", _live_working, whole_tenant_only=True),
    "procedure": _Read("t", "t.created_at, t.id", _true, whole_tenant_only=True),
    "plan": _Read("t", "t.plan_id", _true, whole_tenant_only=True),
    "task_context": _Read("t", "t.task_id", _true, whole_tenant_only=True),
}


def exported_kinds(scoped: bool) -> list[str]:
    """The table-backed record kinds an export holds, in RECORD_ORDER."""
    return [
        kind
        for kind, table in TABLE_OF.items()
        if table is not None and not (scoped and READS[kind].whole_tenant_only)
    ]


def rows(cur: TenantTx, tenant_id: UUID, kind: str, scope: Scope) -> Iterator[dict[str, Any]]:
    """The kind's rows, as its record's fields (vectors as pgvector's text, a JSON array)."""
    read = READS[kind]
    table = TABLE_OF[kind]
    assert table is not None
    fields = [f for f in RECORD_MODELS[kind].model_fields if f != "record"]
    columns = sql.SQL(", ").join(
        sql.SQL("{}::text AS {}").format(sql.Identifier(read.alias, f), sql.Identifier(f))
        if f in VECTOR_COLUMNS
        else sql.Identifier(read.alias, f)
        for f in fields
    )
    query = sql.SQL(
        "SELECT {columns} FROM {table} {alias} WHERE {alias}.tenant_id = {tenant} AND {where} "
        "ORDER BY {order}"
    ).format(
        columns=columns,
        table=sql.Identifier(table),
        alias=sql.Identifier(read.alias),
        tenant=sql.Literal(tenant_id),
        where=read.where(scope),
        order=sql.SQL(read.order),
    )
    with cur.connection.cursor(name=f"export_{kind}", row_factory=dict_row) as server_side:
        server_side.itersize = _ITERSIZE
        server_side.execute(query)
        yield from server_side


def document_files(cur: TenantTx, tenant_id: UUID, scope: Scope) -> list[dict[str, Any]]:
    """Where the exported documents' original bytes are: (id, blob_key, blob_version), in export order."""
    return cur.execute(
        sql.SQL(
            "SELECT t.id, t.blob_key, t.blob_version FROM documents t WHERE t.tenant_id = {tenant} "
            "AND {scope} AND t.blob_key IS NOT NULL AND t.blob_key <> '' ORDER BY t.created_at, t.id"
        ).format(tenant=sql.Literal(tenant_id), scope=predicates.in_container(scope, "t"))
    ).fetchall()
