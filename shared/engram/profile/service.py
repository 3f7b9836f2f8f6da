"""Building a profile: facts and preferences (deduplicated), recent episodes and tasks, relevant
memories for a question, and a context string that fits a token budget. No SQL here."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, time
from typing import Any
from uuid import UUID

import numpy as np

from engram.db.database import Database, Party
from engram.fields import utc_text
from engram.memories.models import SearchFilters, SearchRequest
from engram.memories.predicates import ContainerScope
from engram.memories.search.service import MemorySearch
from engram.profile import repo
from engram.profile.models import Profile, ProfileItem, ProfileSubject

FACT_TYPES = ["fact", "preference"]
CONTEXT_TYPES = ["episode", "task"]
FACT_CANDIDATES, MAX_FACTS, MAX_RECENT, MAX_RELEVANT = 200, 50, 10, 10
NEAR_DUPLICATE = 0.9  # cosine similarity at which an older fact repeats a newer one
MAX_LINE_CHARS = 400
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A model-independent estimate: about four characters per token for English text."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def starts_note(valid_from: datetime | None, now: datetime) -> str:
    """What a line about a memory that begins later ends with (a change announced ahead: `supersedes` with
    a valid_from to come), " (from 2999-06-01)", so that a prompt does not read it as true today; "" for
    one in force. A profile's lines and a context's say it alike."""
    if valid_from is None or valid_from <= now:
        return ""
    moment = valid_from.astimezone(UTC)
    return f" (from {moment.date().isoformat() if moment.time() == time(0) else utc_text(moment)})"


class ProfileService:
    def __init__(self, db: Database, memories: MemorySearch) -> None:
        self.db = db
        self.memories = memories

    def build(
        self,
        tenant_id: UUID,
        *,
        user_id: str | None,
        agent_id: str | None,
        container: str | None,
        q: str | None,
        max_tokens: int,
    ) -> Profile:
        scope = ContainerScope.parse(container)
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            facts = repo.latest_of_types(
                cur, tenant_id, FACT_TYPES, user_id, agent_id, scope, FACT_CANDIDATES
            )
            recent = repo.latest_of_types(cur, tenant_id, CONTEXT_TYPES, user_id, agent_id, scope, MAX_RECENT)
        fact_rows = dedupe_memories(facts)[:MAX_FACTS]
        static_facts = [_item(row) for row in fact_rows]
        recent_context = [_item(row) for row in recent]
        relevant: list[ProfileItem] | None = None
        relevant_says: list[dict[str, Any]] = []
        if q:
            found = self.memories.search(
                tenant_id,
                SearchRequest(
                    query=q,
                    user_id=user_id,
                    container=container,
                    limit=MAX_RELEVANT,
                    filters=SearchFilters(agent_id=agent_id, user_id=user_id),
                    scope="memories",
                ),
            )
            relevant = [
                ProfileItem(
                    id=r.id,
                    content=r.content,
                    memory_type=r.memory_type,
                    container=r.container,
                    created_at=r.created_at,
                    valid_from=r.valid_from,
                    score=r.score,
                )
                for r in found.results
                if r.memory_type is not None
            ]
            # A search result carries no embedding: what it says is its text.
            relevant_says = [
                {"content": i.content, "embedding": None, "embedding_model": None} for i in relevant
            ]
        context, used, omitted = _context(
            list(zip(fact_rows, static_facts, strict=True)),
            None if relevant is None else list(zip(relevant_says, relevant, strict=True)),
            list(zip(recent, recent_context, strict=True)),
            q,
            max_tokens,
        )
        return Profile(
            subject=ProfileSubject(user_id=user_id, agent_id=agent_id, container=container),
            static_facts=static_facts,
            recent_context=recent_context,
            relevant_memories=relevant,
            context=context,
            token_estimate=used,
            max_tokens=max_tokens,
            omitted=omitted,
        )


class Sayings:
    """What memories already kept say: their texts (case and spacing aside) and, by embedding model,
    their unit embeddings."""

    def __init__(self) -> None:
        self.texts: set[str] = set()
        self.vectors: dict[str, list[np.ndarray]] = {}

    def repeats(self, row: dict[str, Any]) -> bool:
        """Whether `row` (`content`, `embedding`, `embedding_model`) says what one of them says: the same
        text, or an embedding (same model; None: text only) at least NEAR_DUPLICATE similar to one."""
        return self._new(row) is None

    def add(self, row: dict[str, Any]) -> None:
        self._keep(row, _unit(row["embedding"]))

    def keep(self, row: dict[str, Any]) -> bool:
        """Adds `row` unless it repeats one of them: whether it did not."""
        new = self._new(row)
        if new is not None:
            self._keep(row, new[0])
        return new is not None

    def _new(self, row: dict[str, Any]) -> tuple[np.ndarray | None] | None:
        """None if `row` repeats one of them; else its unit embedding, parsed once."""
        if _said(row) in self.texts:
            return None
        vector = _unit(row["embedding"])
        others = self.vectors.get(row["embedding_model"] or "", [])
        if vector is not None and any(float(vector @ other) >= NEAR_DUPLICATE for other in others):
            return None
        return (vector,)

    def _keep(self, row: dict[str, Any], vector: np.ndarray | None) -> None:
        self.texts.add(_said(row))
        if vector is not None:
            self.vectors.setdefault(row["embedding_model"] or "", []).append(vector)


def dedupe_memories(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Memories (`content`, `embedding`, `embedding_model`) in order of preference in, the same order
    out, less each that repeats an earlier kept one (Sayings.repeats). A profile's facts come newest
    first, so the newest stays; a context's candidates best-scored first."""
    kept: list[dict[str, Any]] = []
    said = Sayings()
    for row in rows:
        if said.keep(row):
            kept.append(row)
    return kept


def _said(row: dict[str, Any]) -> str:
    return " ".join(row["content"].casefold().split())


def _unit(embedding: Any) -> np.ndarray | None:
    if embedding is None:
        return None
    # App connections register no pgvector adapters: a vector arrives as its text, a JSON array.
    raw = json.loads(embedding) if isinstance(embedding, str) else embedding
    vector = np.asarray(raw, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else None


def _item(row: dict[str, Any]) -> ProfileItem:
    return ProfileItem(
        id=row["id"],
        content=row["content"],
        memory_type=row["memory_type"],
        container=row["container"],
        created_at=row["created_at"],
        valid_from=row["valid_from"],
    )


def _line(item: ProfileItem, now: datetime, *, dated: bool = False) -> str:
    text = " ".join(item.content.split())
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1].rstrip() + "…"
    prefix = f"({item.memory_type}, {item.created_at:%Y-%m-%d}) " if dated else ""
    return f"- {prefix}{text}{starts_note(item.valid_from, now)} [memory:{item.id}]"


# An item that may have a line in the context, and what it says (`content`, `embedding`,
# `embedding_model`: for Sayings).
_Candidate = tuple[dict[str, Any], ProfileItem]


def _context(
    facts: list[_Candidate],
    relevant: list[_Candidate] | None,
    recent: list[_Candidate],
    q: str | None,
    max_tokens: int,
) -> tuple[str, int, int]:
    """Sections in priority order (facts, relevant, recent); a line goes in only if it fits, and a
    heading only with at least one of its lines. A line that says what a line shown in an earlier
    section says (Sayings.repeats: the same memory, the same text from another container, a near-
    duplicate), or repeats the text of one shown above it in its own, is left out: it is not omitted,
    it is there already."""
    now = datetime.now(UTC)
    sections = [("## Facts and preferences", [(says, _line(i, now)) for says, i in facts])]
    if relevant is not None:
        heading = f"## Relevant to: {' '.join((q or '').split())[:200]}"
        sections.append((heading, [(says, _line(i, now)) for says, i in relevant]))
    sections.append(("## Recent context", [(says, _line(i, now, dated=True)) for says, i in recent]))
    out: list[str] = []
    used = omitted = 0
    earlier = Sayings()
    for heading, lines in sections:
        started = False
        shown: list[dict[str, Any]] = []
        for says, line in lines:
            if earlier.repeats(says) or _said(says) in {_said(other) for other in shown}:
                continue
            cost = estimate_tokens(line + "\n") + (0 if started else estimate_tokens(heading + "\n"))
            if used + cost > max_tokens:
                omitted += 1
                continue
            if not started:
                out.append(heading)
                started = True
            out.append(line)
            shown.append(says)
            used += cost
        for says in shown:
            earlier.add(says)
    return "\n".join(out), used, omitted
