"""The embedding model of each tenant: the configured one, unless `engram reembed` moved the tenant.

A tenant moved to another model (a row of tenant_embedding_models, migrations/0024) has all its
memories' and chunks' vectors under that model, so its searches embed the query with it and its new
memories and chunks are embedded with it. TenantEmbedders is the configured embedder (the Embedder
protocol is answered by it) plus one embedder per other model, made on first use; `embedder_for`
reads the tenant's model in the caller's transaction, so a switch is seen by the next transaction,
never half.

Sessions' messages and procedures keep the configured model: reembed does not move them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from psycopg import sql

from engram.providers.embeddings import Embedder


class TenantEmbedders:
    def __init__(self, default: Embedder, make: Callable[[str], Embedder]) -> None:
        self.default = default
        self.model_id = default.model_id
        self.dimensions = default.dimensions
        self._make = make
        self._others: dict[str, Embedder] = {}
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.default.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.default.embed_query(text)

    def of_model(self, model: str | None) -> Embedder:
        if model is None or model == self.default.model_id:
            return self.default
        with self._lock:
            if model not in self._others:
                self._others[model] = self._make(model)
            return self._others[model]


# The lock a switch holds (exclusive) and a memory write holds (shared) while it reads the tenant's model
# and stores a vector: a write never stores a vector of the model the tenant just left.
SWITCH_LOCK = "SELECT {how}(hashtextextended('engram.reembed:' || %s::text, 0))"


def lock_switch(cur: Any, tenant_id: UUID, *, shared: bool) -> None:
    how = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    cur.execute(SWITCH_LOCK.format(how=how), (tenant_id,))


def tenant_model(cur: Any, tenant_id: UUID) -> str | None:
    """The model the tenant was moved to, or None (the configured one)."""
    return model_of(cur.execute(tenant_model_query(tenant_id)).fetchall())


def tenant_model_query(tenant_id: UUID) -> sql.Composed:
    """(model): the row of the model the tenant was moved to, if any; as a statement with literals, for a
    read of its own in one round trip (Database.run)."""
    return sql.SQL("SELECT model FROM tenant_embedding_models WHERE tenant_id = {}").format(
        sql.Literal(tenant_id)
    )


def model_of(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The model tenant_model_query's rows name, or None (the configured one)."""
    return str(rows[0]["model"]) if rows else None


def embedder_for(embedder: Embedder, cur: Any, tenant_id: UUID, *, writing: bool = False) -> Embedder:
    """The embedder of the tenant's model; a plain embedder (no TenantEmbedders) is every tenant's.
    `writing`: the transaction will store a vector of it, so a switch waits for it (and it for one)."""
    if not isinstance(embedder, TenantEmbedders):
        return embedder
    if writing:
        lock_switch(cur, tenant_id, shared=True)
    return embedder.of_model(tenant_model(cur, tenant_id))
