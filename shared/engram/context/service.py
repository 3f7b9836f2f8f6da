"""One call for an agent's turn: the memories relevant to the query, the user's current facts and
preferences, the procedures that apply, the conversation's summary and last messages, and the plan's state,
as one prompt-ready text within a token budget. No SQL here: it reads through each area's repository, in
one transaction after the search.

The query is embedded once; search, fact ranking and procedure matching all use that vector. The budget
is filled in order of value: the lines ranked by their relevance to the turn (memories, facts and
procedures, each with its score) first get their share of it together, highest score first across the
three sections, and the conversation and the plan (which have no score) theirs; what is left over goes
again to the ranked lines by score, then to the conversation and the plan. So a long conversation never
crowds out the facts a question needs, a barely related memory never the procedure that matched, and an
empty section gives its room away. Sections still appear in their order, each line in its rank. Only
current memories appear (a superseded fact never stands beside the one that replaced it), and a memory
or fact that says what a better-scored one says (the same text, or a near-duplicate: as a profile's
facts are deduplicated) appears once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np

from engram.context.models import AgentContext, ContextItem, ContextRequest
from engram.context.relevance import is_relevant
from engram.db.database import Database, Party
from engram.errors import NotFound
from engram.memories.models import SearchRequest
from engram.memories.predicates import ContainerScope
from engram.memories.search.service import MemorySearch
from engram.plans import repo as plans_repo
from engram.procedures import repo as procedures_repo
from engram.profile import repo as profile_repo
from engram.profile.service import FACT_TYPES, dedupe_memories, estimate_tokens, starts_note
from engram.providers.embeddings import Embedder
from engram.sessions import repo as sessions_repo
from engram.sessions import summary_repo
from engram.working import repo as working_repo

MAX_RELEVANT, FACT_CANDIDATES, MAX_PROCEDURES, MAX_MESSAGES, MAX_WORKING = 15, 100, 5, 20, 20
CONVERSATION_TOPIC_MESSAGES = 6  # the user's latest messages, averaged, rank facts besides the query
PROCEDURE_FLOOR = 0.3
MIN_SUMMARY_TOKENS = 40
MAX_LINE_CHARS = 400
SECTIONS = ("memories", "facts", "procedures", "conversation", "plan")  # the order they appear in
RANKED = ("memories", "facts", "procedures")  # their lines have a score: they compete by it
# The first share of the budget of the ranked lines (together) and of the others; what one leaves goes to
# the ranked lines, then to the conversation, then to the plan.
SHARES = {"ranked": 0.7, "conversation": 0.2, "plan": 0.1}
HEADINGS = {
    "memories": "## Relevant memories",
    "facts": "## About the user",
    "procedures": "## Procedures that apply",
    "conversation": "## The conversation so far",
    "plan": "## Plan state",
}


# A memory or fact that may appear: what it says (for dedupe_memories), and its line.
_Candidate = tuple[dict[str, Any], ContextItem]


@dataclass
class _Line:
    section: str
    item: ContextItem
    cost: int
    taken: bool = False


class ContextService:
    def __init__(self, db: Database, embedder: Embedder, search: MemorySearch) -> None:
        self.db = db
        self.embedder = embedder
        self.search = search

    def build(self, tenant_id: UUID, request: ContextRequest) -> AgentContext:
        embedder = self.search.embedder_of(tenant_id)
        vector = embedder.embed_query(request.query)
        model = embedder.model_id
        found = self.search.search_with_vector(
            tenant_id,
            SearchRequest(
                query=request.query,
                user_id=request.user_id,
                container=request.container,
                limit=MAX_RELEVANT,
                scope="memories",
            ),
            vector,
            model,
        )
        sections: dict[str, list[ContextItem]] = {name: [] for name in SECTIONS}
        shown: set[str] = set()
        memories: list[_Candidate] = []
        facts: list[_Candidate] = []
        now = datetime.now(UTC)
        for hit in found.results:
            if is_relevant(hit):
                shown.add(str(hit.id))
                # Ranked by the search: its score is the item's, so items read in the order they rank.
                says: dict[str, Any] = {"content": hit.content, "embedding": None, "embedding_model": None}
                item = _item("memory", hit.id, hit.content, hit.score, note=starts_note(hit.valid_from, now))
                memories.append((says, item))
        party = Party(user_id=request.user_id, agent_id=request.agent_id)
        with self.db.tenant(tenant_id, party) as cur:
            topics = [_unit(vector)]
            if request.session_id is not None:
                sections["conversation"] = self._conversation(cur, tenant_id, request.session_id)
                # What the user said last is part of the turn: "book it" needs "window seat" from before.
                said = sessions_repo.recent_embeddings(
                    cur, tenant_id, request.session_id, "user", model, CONVERSATION_TOPIC_MESSAGES
                )
                if said:
                    topics.append(_unit(np.mean([_vector(v) for v in said], axis=0)))
            if request.user_id is not None:
                current = profile_repo.latest_of_types(
                    cur,
                    tenant_id,
                    FACT_TYPES,
                    request.user_id,
                    None,
                    ContainerScope.parse(request.container),
                    FACT_CANDIDATES,
                )
                for row, similarity in _by_similarity(dedupe_memories(current), topics, model):
                    if str(row["id"]) not in shown:
                        text = f"({row['memory_type']}) {row['content']}"
                        note = starts_note(row["valid_from"], now)
                        facts.append((row, _item("fact", row["id"], text, similarity, note=note)))
            for row in procedures_repo.match(
                cur, tenant_id, vector, model, None, PROCEDURE_FLOOR, MAX_PROCEDURES
            ):
                trigger = row["trigger"]
                when = trigger if trigger.casefold().startswith("when ") else f"when {trigger}"
                text = f"{when}: {row['content']}"
                item = _item("procedure", row["id"], text, float(row["similarity"]))
                if all(other.text != item.text for other in sections["procedures"]):  # a rule stored twice
                    sections["procedures"].append(item)
            if request.plan_id is not None:
                sections["plan"] = self._plan(cur, tenant_id, request.plan_id, request.user_id)
        sections["memories"], sections["facts"] = _distinct(memories, facts)
        return fit(sections, request.max_tokens)

    @staticmethod
    def _conversation(cur: Any, tenant_id: UUID, session_id: UUID) -> list[ContextItem]:
        if sessions_repo.get_session(cur, tenant_id, session_id) is None:
            raise NotFound(f"session {session_id} not found")
        items = []
        summary = summary_repo.get_summary(cur, tenant_id, session_id)
        if summary is not None:
            label = f"summary ({summary['method']}, through message {summary['through_seq']}): "
            items.append(_item("summary", session_id, label + summary["content"], None, clip=1600))
        newest_first = sessions_repo.latest_messages(cur, tenant_id, session_id, MAX_MESSAGES)[::-1]
        for row in newest_first:  # the budget keeps the latest; _fit shows them in conversation order
            items.append(_item("message", row["id"], f"#{row['seq']} {row['role']}: {row['content']}", None))
        return items

    @staticmethod
    def _plan(cur: Any, tenant_id: UUID, plan_id: str, user_id: str | None) -> list[ContextItem]:
        """The plan and its workflow state: for a user, their keys and those of no user."""
        items = []
        plan = plans_repo.get(cur, plans_repo.PLANS, tenant_id, plan_id)
        if plan is not None:
            text = (
                f"plan {plan_id} ({plan['status']}), goal {plan['goal_event']}: state "
                f"{_compact(plan['state'])}"
            )
            items.append(ContextItem(source="plan", id=plan_id, text=_clip(text, 800)))
        scope = f"workflow:{plan_id}"  # where engram_client.workflow.WorkflowState keeps its values
        working = working_repo.list_scope(cur, tenant_id, scope, None, MAX_WORKING, for_user=user_id)
        if plan is None and not working:  # as an unknown session is: a wrong id is not an empty plan
            raise NotFound(f"plan {plan_id} not found: no plan and no workflow state under that id")
        for row in working:
            if row["key"].startswith("v."):  # its values ("a." keys are its action history)
                text = f"{row['key'].removeprefix('v.')} = {_compact(row['value'])}"
                items.append(ContextItem(source="working", id=f"{scope}/{row['key']}", text=_clip(text)))
        return items


def _item(
    source: Any, row_id: Any, text: str, score: float | None, *, clip: int = MAX_LINE_CHARS, note: str = ""
) -> ContextItem:
    return ContextItem(
        source=source,
        id=str(row_id),
        text=_clip(text, clip) + note,
        score=None if score is None else round(score, 4),
    )


def _clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _vector(raw: Any) -> np.ndarray:
    return np.asarray(json.loads(raw) if isinstance(raw, str) else raw, dtype=np.float32)


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def _by_similarity(
    rows: Sequence[dict[str, Any]], topics: Sequence[np.ndarray], model: str
) -> list[tuple[dict[str, Any], float | None]]:
    """Facts closest to any topic (the query; what the user said last) first; those of another model
    (not comparable) last, newest first."""
    scored: list[tuple[dict[str, Any], float | None]] = []
    for row in rows:
        similarity = None
        if row["embedding"] is not None and row["embedding_model"] == model:
            fact = _unit(_vector(row["embedding"]))
            similarity = max(float(topic @ fact) for topic in topics)
        scored.append((row, similarity))
    # sorted() is stable: rows of equal rank keep their newest-first order.
    return sorted(scored, key=lambda pair: -(pair[1] if pair[1] is not None else -2.0))


def _rank(item: ContextItem) -> float:
    return item.score if item.score is not None else -1.0  # a fact of another model: last


def _distinct(*groups: list[_Candidate]) -> list[list[ContextItem]]:
    """Each group's items, less those that say what a better-scored one of any group says
    (dedupe_memories): "name: Erin; city: Lisbon." stored in three containers is one line."""
    best_first = sorted((pair for group in groups for pair in group), key=lambda pair: -_rank(pair[1]))
    kept = {id(row) for row in dedupe_memories([row for row, _ in best_first])}
    return [[item for row, item in group if id(row) in kept] for group in groups]


def _line(item: ContextItem) -> str:
    return f"- {item.text} [{item.source}:{item.id}]"


def fit(sections: dict[str, list[ContextItem]], max_tokens: int) -> AgentContext:
    """The context of the sections' candidate lines within `max_tokens`, by the rule above (SHARES)."""
    lines = {
        name: [_Line(name, item, estimate_tokens(_line(item) + "\n")) for item in sections[name]]
        for name in SECTIONS
    }
    groups = {
        # sorted() is stable: lines of equal score keep their sections' order, and their rank in it.
        "ranked": sorted((line for name in RANKED for line in lines[name]), key=lambda x: -_rank(x.item)),
        "conversation": lines["conversation"],
        "plan": lines["plan"],
    }
    heading_cost = {name: estimate_tokens(HEADINGS[name] + "\n") for name in SECTIONS}
    started: set[str] = set()
    used = 0

    def take(group: list[_Line], budget: int, *, in_order: bool = False) -> None:
        """The lines of `group` that fit in `budget`, in order; `in_order`: none after one that does
        not (the latest messages only, without gaps; ranked lines within their share: a line that
        does not fit it waits for the leftover rather than let lower-scored ones take its place)."""
        nonlocal used
        spent = 0
        for line in group:
            if line.taken:
                continue
            heading = 0 if line.section in started else heading_cost[line.section]
            room = min(budget - spent, max_tokens - used) - heading
            if line.cost > room and line.item.source == "summary" and room >= MIN_SUMMARY_TOKENS:
                line.item = _shortened(line.item, room)  # a summary is cut to fit rather than left out
                line.cost = estimate_tokens(_line(line.item) + "\n")
            if line.cost > room:
                if in_order or line.item.source == "message":
                    break
                continue
            line.taken = True
            started.add(line.section)
            spent += line.cost + heading
            used += line.cost + heading

    for name, share in SHARES.items():
        take(groups[name], int(max_tokens * share), in_order=name == "ranked")
    for name in SHARES:
        take(groups[name], max_tokens)
    out: list[str] = []
    items: list[ContextItem] = []
    for name in SECTIONS:
        kept = [line.item for line in lines[name] if line.taken]
        if name == "conversation":  # the summary, then the messages kept, oldest first
            kept = [i for i in kept if i.source != "message"] + [
                i for i in reversed(kept) if i.source == "message"
            ]
        if kept:
            out.append(HEADINGS[name])
            out.extend(_line(item) for item in kept)
            items.extend(kept)
    omitted = sum(1 for name in SECTIONS for line in lines[name] if not line.taken)
    return AgentContext(
        context="\n".join(out), items=items, token_estimate=used, max_tokens=max_tokens, omitted=omitted
    )


def _shortened(item: ContextItem, tokens: int) -> ContextItem:
    overhead = len(_line(item)) - len(item.text) + 1
    return item.model_copy(update={"text": _clip(item.text, max(20, tokens * 4 - overhead - 4))})
