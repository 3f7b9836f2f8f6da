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
        static_facts = [_item(row) for row in dedupe_memories(facts)[:MAX_FACTS]]
        recent_context = [_item(row) for row in recent]
        relevant: list[ProfileItem] | None = None
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
        context, used, omitted = _context(static_facts, relevant, recent_context, q, max_tokens)
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


def dedupe_memories(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Memories (`content`, `embedding`, `embedding_model`) in order of preference in, the same order
    out: one is dropped when its text equals an earlier kept one's (case and spacing aside), or its
    embedding (same model; None: text only) is at least NEAR_DUPLICATE similar to one. A profile's facts
    come newest first, so the newest stays; a context's candidates best-scored first."""
    kept: list[dict[str, Any]] = []
    seen_text: set[str] = set()
    vectors: dict[str, list[np.ndarray]] = {}
    for row in rows:
        text = " ".join(row["content"].casefold().split())
        if text in seen_text:
            continue
        vector = _unit(row["embedding"])
        model = row["embedding_model"] or ""
        if vector is not None and any(
            float(vector @ other) >= NEAR_DUPLICATE for other in vectors.get(model, [])
        ):
            continue
        seen_text.add(text)
        if vector is not None:
            vectors.setdefault(model, []).append(vector)
        kept.append(row)
    return kept


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


def _context(
    facts: list[ProfileItem],
    relevant: list[ProfileItem] | None,
    recent: list[ProfileItem],
    q: str | None,
    max_tokens: int,
) -> tuple[str, int, int]:
    """Sections in priority order (facts, relevant, recent); a line goes in only if it fits, a
    memory appears once, and a heading only with at least one of its lines."""
    now = datetime.now(UTC)
    sections: list[tuple[str, list[str]]] = [("## Facts and preferences", [_line(i, now) for i in facts])]
    if relevant is not None:
        shown = {i.id for i in facts}
        lines = [_line(i, now) for i in relevant if i.id not in shown]
        sections.append((f"## Relevant to: {' '.join((q or '').split())[:200]}", lines))
    sections.append(("## Recent context", [_line(i, now, dated=True) for i in recent]))
    out: list[str] = []
    used = omitted = 0
    for heading, lines in sections:
        started = False
        for line in lines:
            cost = estimate_tokens(line + "\n") + (0 if started else estimate_tokens(heading + "\n"))
            if used + cost > max_tokens:
                omitted += 1
                continue
            if not started:
                out.append(heading)
                started = True
            out.append(line)
            used += cost
    return "\n".join(out), used, omitted
