"""What a direct write names (POST /v1/memories, /batch and /upsert, PATCH of content): its entities,
the relations between them and its subject, found by the extractors documents and messages go through
(engram.memory_extraction: `light` the offline heuristic, `full` the configured LLM), so that graph-link
relates the memory to the owner's older ones ("Alice lives in Berlin" retires "Alice lives in Paris").

Extraction only reads the text: the memory is stored exactly as sent, one memory however many
statements the extractor sees in it, with every entity and relation they name. It runs before the
write's transaction opens (an LLM call never holds one)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from engram.db.database import Database, TenantTx
from engram.errors import InvalidInput
from engram.graph.names import normalize_name
from engram.memories.models import ExtractMode
from engram.memories.new_memory import Mentions
from engram.memory_extraction import (
    ExtractionContext,
    Extractor,
    HeuristicExtractor,
    as_statements,
    make_extractor,
)
from engram.memory_extraction.schema import ExtractedEntity
from engram.providers.llm import LLM

MAX_ENTITIES = 50  # per memory: each one is resolved in the write's transaction

Instructions = Callable[[TenantTx, UUID, str], tuple[str, ...]]


class WriteExtraction:
    """`llm` is called only for `full`, so writes without it never build a client. `instructions`
    (the tenant's and the container's custom extraction instructions) reach the LLM, as they do for
    documents and messages."""

    def __init__(
        self,
        db: Database,
        llm: Callable[[], LLM | None],
        *,
        llm_available: bool,
        instructions: Instructions | None = None,
    ) -> None:
        self.db = db
        self.llm = llm
        self.default: ExtractMode = "full" if llm_available else "light"
        self.instructions = instructions

    def mode(self, requested: ExtractMode | None) -> ExtractMode:
        return requested or self.default

    def extractor(self, mode: ExtractMode, *, field: str = "extract") -> Extractor | None:
        """None for `none`. `full` without an LLM is a 422 naming `field`, before anything is stored."""
        try:
            return make_extractor(mode, llm=self.llm() if mode == "full" else None)
        except InvalidInput as exc:
            raise InvalidInput(exc.message, details={**exc.details, "field": field}) from None

    def mentions(
        self,
        tenant_id: UUID,
        extractor: Extractor | None,
        content: str,
        container: str,
        reference_time: datetime | None,
    ) -> Mentions:
        """Everything the extractor finds named in `content`: entities (first spelling of each),
        relations, and the first statement's subject."""
        if extractor is None:
            return Mentions()
        heuristic = isinstance(extractor, HeuristicExtractor)
        instructions: tuple[str, ...] = ()
        if not heuristic and self.instructions is not None:
            with self.db.tenant(tenant_id) as cur:
                instructions = self.instructions(cur, tenant_id, container)
        text = as_statements(content) if heuristic else content
        context = ExtractionContext(reference_time=reference_time, source="memory", instructions=instructions)
        found = extractor.extract(text, context).memories
        entities: dict[str, ExtractedEntity] = {}
        for memory in found:
            for entity in memory.entities:
                entities.setdefault(normalize_name(entity.name), entity)
        subject = next((m.subject for m in found if m.subject), None)
        relations = [relation for memory in found for relation in memory.relations]
        return Mentions(list(entities.values())[:MAX_ENTITIES], relations, subject)
