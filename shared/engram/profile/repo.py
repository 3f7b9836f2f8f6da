"""Read-only queries on memories for profiles. The party policy has already narrowed memories to
what the request's user may see; these add the subject and the container."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db.database import TenantTx
from engram.memories import predicates
from engram.memories.predicates import ContainerScope

_COLUMNS = sql.SQL(
    "m.id, m.content, m.memory_type, m.container, m.created_at, m.valid_from, m.embedding, m.embedding_model"
)


def latest_of_types(
    cur: TenantTx,
    tenant_id: UUID,
    types: list[str],
    user_id: str | None,
    agent_id: str | None,
    container: ContainerScope | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Current, unexpired memories of these types about the subject, newest first."""
    clauses: list[sql.Composable] = [
        sql.SQL("m.tenant_id = {}").format(sql.Literal(tenant_id)),
        predicates.current(),
        sql.SQL("m.memory_type = ANY({}::text[])").format(sql.Literal(types)),
        predicates.in_container(container),
    ]
    if user_id is not None:
        clauses.append(sql.SQL("m.user_id = {}").format(sql.Literal(user_id)))
    if agent_id is not None:
        clauses.append(sql.SQL("m.agent_id = {}").format(sql.Literal(agent_id)))
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id DESC LIMIT {n}"
        ).format(columns=_COLUMNS, where=sql.SQL(" AND ").join(clauses), n=sql.Literal(limit))
    ).fetchall()
