"""Session messages through engram.memory_extraction, the extraction documents go through.

Queued messages are taken in conversation order, in batches of one extract mode and one day (a day's
messages share the reference time relative dates are resolved against). Each message is a section
`<chunk n="seq">` of the batch's text, so a memory names the message it comes from:
- `light`, the offline heuristic: statements in the user's messages (questions and the assistant's
  words are not the user's facts);
- `full`, the configured LLM: the user's and the assistant's messages, each with its time and role,
  under the tenant's and the container's custom instructions.

Each batch is written in one transaction: its memories (private to the session's user, if it has
one), their entities and relations, graph links to older memories of the same owner (`updates` retires
one, as in the pipeline's graph-link), and the messages marked done. Nothing is written when
extraction fails. The session (tenant, container, user, agent) decides where memories go; the
extractor's output is only data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from engram.db.database import Database, Party
from engram.errors import EngramError, ExtractionFailed
from engram.instructions.service import instructions_for
from engram.memories.new_memory import Embedding, Mentions, NewMemory, Owner, Peers
from engram.memories.writer import MemoryWriter
from engram.memory_extraction import (
    ExtractionContext,
    Extractor,
    HeuristicExtractor,
    as_statements,
    chunk_text,
    content_key,
    make_extractor,
)
from engram.memory_extraction.schema import ExtractedMemory
from engram.observability import logger
from engram.providers.embeddings import Embedder
from engram.providers.llm import LLM
from engram.sessions import repo
from engram.sessions.models import ExtractionReport

EXTRACTED_ROLES = {"light": ("user",), "full": ("user", "assistant")}


@dataclass(frozen=True)
class MessageBatch:
    mode: str  # light | full
    messages: list[dict[str, Any]]

    @property
    def reference_time(self) -> datetime:
        return max(m["occurred_at"] for m in self.messages)


def batches(queued: Sequence[dict[str, Any]]) -> list[MessageBatch]:
    """Consecutive messages of one mode and one (UTC) day. Messages queued before extract modes
    existed have none: the heuristic, as when they were queued."""
    out: list[MessageBatch] = []
    for message in queued:
        mode = message["extract_mode"] or "light"
        day = message["occurred_at"].astimezone(UTC).date()
        last = out[-1] if out else None
        if last and last.mode == mode and last.messages[-1]["occurred_at"].astimezone(UTC).date() == day:
            last.messages.append(message)
        else:
            out.append(MessageBatch(mode, [message]))
    return out


def batch_text(batch: MessageBatch, *, heuristic: bool) -> tuple[str, tuple[int, ...]]:
    sections = []
    for message in batch.messages:
        if message["role"] not in EXTRACTED_ROLES[batch.mode]:
            continue
        if heuristic:
            text = as_statements(message["content"])
        else:
            when = message["occurred_at"].astimezone(UTC).isoformat(timespec="seconds")
            text = f"[{when}] {message['role']}: {message['content']}"
        if text.strip():
            sections.append((message["seq"], text))
    return chunk_text(sections) if sections else ("", ())


class MessageExtraction:
    """Runs a session's queued messages through the extractor of their mode and stores the result.
    `llm` is called only for `full` batches, so a session without them never builds a client."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        llm: Callable[[], LLM | None],
        writer: MemoryWriter,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.llm = llm
        self.writer = writer

    def extractor_for(self, mode: str) -> Extractor:
        """Raises InvalidInput (a 422 before anything is stored) for `full` without an LLM."""
        extractor = make_extractor(
            "full" if mode == "full" else "light", llm=self.llm() if mode == "full" else None
        )
        assert extractor is not None
        return extractor

    def run(
        self, tenant_id: UUID, session: dict[str, Any], party: Party, queued: Sequence[dict[str, Any]]
    ) -> ExtractionReport:
        report = ExtractionReport(
            status="done", extractors=[], memory_ids=[], messages_done=0, messages_failed=0, messages_queued=0
        )
        todo = batches(queued)
        for index, batch in enumerate(todo):
            ids = [m["id"] for m in batch.messages]
            try:
                extractor = self.extractor_for(batch.mode)
                report.memory_ids += self._extract_and_store(
                    tenant_id, session, party, batch, extractor, report
                )
                report.messages_done += len(ids)
            except ExtractionFailed as exc:
                self._record_usage(report, exc.details.get("usage") or {})
                with self.db.tenant(tenant_id, party) as cur:
                    repo.mark_extracted(cur, tenant_id, ids, error=exc.message)
                report.messages_failed += len(ids)
                report.status, report.error = "failed", exc.message
            except EngramError as exc:
                # The LLM unavailable (or misconfigured): later messages wait too, so that updates
                # are still applied in conversation order when it is back.
                logger.warning("message extraction deferred", extra={"error": exc.message})
                report.messages_queued = sum(len(b.messages) for b in todo[index:])
                report.status, report.error = "queued", exc.message
                break
        report.memory_ids = list(dict.fromkeys(report.memory_ids))
        return report

    def _extract_and_store(
        self,
        tenant_id: UUID,
        session: dict[str, Any],
        party: Party,
        batch: MessageBatch,
        extractor: Extractor,
        report: ExtractionReport,
    ) -> list[UUID]:
        heuristic = isinstance(extractor, HeuristicExtractor)
        text, sections = batch_text(batch, heuristic=heuristic)
        if heuristic or not text:
            instructions: tuple[str, ...] = ()
        else:
            with self.db.tenant(tenant_id, party) as cur:
                instructions = instructions_for(cur, tenant_id, session["container"])
        context = ExtractionContext(
            reference_time=batch.reference_time, source="message", chunks=sections, instructions=instructions
        )
        result = extractor.extract(text, context) if text else None
        if result is not None:
            report.extractors = list(dict.fromkeys([*report.extractors, result.extractor]))
            report.llm_calls += result.attempts
            self._record_usage(report, result.usage.as_dict())
        found = _unique(result.memories if result else [])
        vectors = self.embedder.embed_documents([m.content for m in found]) if found else []
        embeddings = [Embedding(vector, self.embedder.model_id) for vector in vectors]
        new = _new_memories(found, embeddings, session, batch, result.extractor if result else "")
        peers = Peers(same_owner=True, provenance={"session_id": str(session["id"])})
        with self.db.unit_of_work(tenant_id, party) as uow:
            claimed = repo.claim_queued(uow.cur, tenant_id, [m["id"] for m in batch.messages])
            if not claimed:
                return []  # another run has processed these messages
            stored = self.writer.store(uow, new, peers)
            self.writer.graph_link(uow, [s.row for s in stored if s.row is not None], peers)
            repo.mark_extracted(uow.cur, tenant_id, claimed)
        return [s.id for s in stored]

    @staticmethod
    def _record_usage(report: ExtractionReport, usage: dict[str, Any]) -> None:
        report.input_tokens += int(usage.get("input_tokens") or 0)
        report.output_tokens += int(usage.get("output_tokens") or 0)


def _unique(found: Sequence[ExtractedMemory]) -> list[ExtractedMemory]:
    seen: set[str] = set()
    out = []
    for memory in found:
        key = content_key(memory.content)
        if key not in seen:
            seen.add(key)
            out.append(memory)
    return out


def _new_memories(
    found: Sequence[ExtractedMemory],
    embeddings: Sequence[Embedding],
    session: dict[str, Any],
    batch: MessageBatch,
    extractor: str,
) -> list[NewMemory]:
    """The conversation's memories: in the session's container, for its agent, and private to its
    user if it has one."""
    by_seq = {m["seq"]: m for m in batch.messages}
    user_id = session["user_id"]
    owner = Owner(user_id, "private" if user_id else "tenant")
    new = []
    for memory, embedding in zip(found, embeddings, strict=True):
        source = by_seq.get(memory.source_chunk) if memory.source_chunk is not None else None
        new.append(
            NewMemory(
                content=memory.content,
                container=session["container"],
                memory_type=memory.memory_type,
                owner=owner,
                agent_id=session["agent_id"],
                conversation_id=str(session["id"]),
                metadata=_provenance(extractor, session, source),
                confidence=memory.confidence,
                valid_from=_valid_from(memory, source, batch.reference_time),
                expires_at=memory.expires_at,
                embedding=embedding,
                mentions=Mentions(memory.entities, memory.relations, memory.subject),
            )
        )
    return new


def _valid_from(memory: ExtractedMemory, source: dict[str, Any] | None, reference: datetime) -> datetime:
    """A date the message states, else the time of the message the memory comes from."""
    if memory.valid_from is not None and memory.valid_from != reference:
        return memory.valid_from
    return source["occurred_at"] if source is not None else reference


def _provenance(extractor: str, session: dict[str, Any], message: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"extractor": extractor, "session_id": str(session["id"])}
    if message is not None:
        meta.update(message_id=str(message["id"]), seq=message["seq"])
    return meta
