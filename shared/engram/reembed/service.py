"""`engram reembed --model M`: a tenant's memories and document chunks embedded again under M, then the
tenant switched to M in one transaction.

Until the switch the tenant searches (and writes) with its current model, and the new vectors wait
in embedding_staging (migrations/0024). The run pages through the rows by id, each page embedded and
staged in its own transaction: a run that is stopped loses at most one page and the next run goes on
from the rows with no staged vector. The switch checks, under a per-tenant lock, that every row has
its staged vector for its current text (rows written or edited during the run are embedded first),
then copies the vectors into the rows, records M as the tenant's model and empties the staging. A
reader sees the old vectors or the new ones, never a mix.

Every user's rows are moved (the party EVERYONE): under a narrower one, row-level security hid private
memories from the run, and they stayed on the old model, out of vector search.

Only rows under a model Engram embeds with are moved (`sources`: the configured model and the local
ones); vectors a client sent under a model name of its own stay as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from engram.db.database import EVERYONE, Database
from engram.db.vectors import vector_literal
from engram.providers.embeddings import Embedder
from engram.reembed import repo
from engram.reembed.repo import TABLES, Table

PAGE = 64  # rows embedded and staged per transaction
MAX_ROUNDS = 5  # catch-up passes for rows written during the run, before giving up on switching


@dataclass
class ReembedReport:
    model: str
    embedded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    switched: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    done: bool = False


class Reembedder:
    def __init__(self, db: Database, embedder: Embedder, sources: Sequence[str], *, page: int = PAGE) -> None:
        self.db = db
        self.embedder = embedder
        self.model = embedder.model_id
        self.sources = [m for m in dict.fromkeys(sources) if m != self.model]
        self.page = page

    def totals(self, tenant_id: UUID) -> dict[Table, tuple[int, int]]:
        """Per table: (rows to move, of which already staged)."""
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            return {t: repo.count(cur, tenant_id, t, self.model, self.sources) for t in TABLES}

    def run(self, tenant_id: UUID, *, progress: Callable[[Table, int], None] | None = None) -> ReembedReport:
        report = ReembedReport(self.model)
        for _ in range(MAX_ROUNDS):
            for table in TABLES:
                report.embedded[table] += self._stage_all(tenant_id, table, progress)
            if self._switch(tenant_id, report):
                report.done = True
                return report
        return report

    def _stage_all(self, tenant_id: UUID, table: Table, progress: Callable[[Table, int], None] | None) -> int:
        after: UUID | None = None
        done = 0
        while True:
            with self.db.tenant(tenant_id, EVERYONE) as cur:
                rows = repo.pending(cur, tenant_id, table, self.model, self.sources, after, self.page)
            if not rows:
                return done
            texts = [r["content"] for r in rows]
            vectors = self.embedder.embed_documents(texts)
            staged = [
                (
                    r["id"],
                    vector_literal(v),
                    hashlib.md5(r["content"].encode(), usedforsecurity=False).hexdigest(),
                )
                for r, v in zip(rows, vectors, strict=True)
            ]
            with self.db.tenant(tenant_id, EVERYONE) as cur:
                repo.stage(cur, tenant_id, table, self.model, staged)
            after = rows[-1]["id"]
            done += len(rows)
            if progress is not None:
                progress(table, len(rows))

    def _switch(self, tenant_id: UUID, report: ReembedReport) -> bool:
        """Every row's staged vector into the row and the tenant onto the model, or nothing (False)
        when a row still has none: one written or edited since it was staged."""
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            repo.lock_tenant(cur, tenant_id)
            for table in TABLES:
                if repo.pending(cur, tenant_id, table, self.model, self.sources, None, 1):
                    return False
            repo.quiet_change_events(cur)
            for table in TABLES:
                report.switched[table] = repo.apply(cur, tenant_id, table, self.model, self.sources)
            repo.record_model(cur, tenant_id, self.model)
            repo.clear_staging(cur, tenant_id)
        return True
