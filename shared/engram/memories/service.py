"""Memories through the API: reads, history, stats, and the writes the writer makes. No SQL here
(search: engram.memories.search)."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from engram.db.database import EVERYONE, Database, Party
from engram.errors import EngramError, NotFound
from engram.graph import relationships
from engram.memories import repo
from engram.memories.models import (
    ContainerCount,
    ContainerTypeCount,
    CreatedMemory,
    EmbeddingCoverage,
    ListRequest,
    Memory,
    MemoryBatch,
    MemoryCreate,
    MemoryHistory,
    MemoryPage,
    MemoryPatch,
    MemoryUpsert,
    Stats,
    TypeCount,
    UpsertResult,
)
from engram.memories.new_memory import Mentions, NewMemory
from engram.memories.predicates import ContainerScope
from engram.memories.write_extraction import WriteExtraction
from engram.memories.writer import MemoryWriter
from engram.observability import tracer
from engram.pagination import decode_cursor, encode_cursor, listing


class MemoryService:
    """Reads of memories, and the API's writes: each in its own unit of work, handed to the writer.
    A write's `extract` mode (engram.memories.write_extraction) finds what its text names before the
    unit of work opens; graph-link then relates it to the owner's older memories in the same unit."""

    def __init__(self, db: Database, writer: MemoryWriter, extraction: WriteExtraction) -> None:
        self.db = db
        self.writer = writer
        self.extraction = extraction

    # --- writes -------------------------------------------------------------------------------

    @tracer.capture_method
    def create(self, tenant_id: UUID, request: MemoryCreate) -> CreatedMemory:
        (memory,) = self.create_batch(tenant_id, MemoryBatch(memories=[request]), field_prefix="")
        return memory

    @tracer.capture_method
    def create_batch(
        self, tenant_id: UUID, request: MemoryBatch, *, field_prefix: str = "memories"
    ) -> list[CreatedMemory]:
        """Every memory of the batch, in order, or none: embedded together (one call to the model),
        stored in one unit of work, each as made for its own user_id. Answered as committed: an item a
        later one retired is read again (only a memory of its owner retires it, so the later item's
        party sees it)."""
        items = request.memories
        prepared = [
            self._prepared(tenant_id, item, f"{field_prefix}[{i}].extract" if field_prefix else "extract")
            for i, item in enumerate(items)
        ]
        memories = self.writer.embedded([memory for memory, _ in prepared])
        out: list[CreatedMemory] = []
        position: dict[UUID, int] = {}
        acting_for = items[0].user_id
        with self.db.unit_of_work(tenant_id, Party(user_id=acting_for)) as uow:
            for index, (item, memory, (_, link)) in enumerate(zip(items, memories, prepared, strict=True)):
                if item.user_id != acting_for:
                    acting_for = item.user_id
                    uow.act_for(Party(user_id=acting_for))
                try:
                    row = self.writer.create(uow, memory, supersedes=item.supersedes)
                except EngramError as exc:
                    # A refused supersedes, valid_from or embedding is named as validation names an
                    # item's field: memories[2].supersedes.
                    if field_prefix:
                        exc.within(f"{field_prefix}[{index}]")
                    raise
                retired = [item.supersedes] if item.supersedes else []
                retired += self.writer.relate(uow, row) if link else []
                for earlier in (position[i] for i in retired if i in position):
                    again = repo.get_memory(uow.cur, tenant_id, out[earlier].id)
                    if again is not None:
                        out[earlier] = CreatedMemory(**again, superseded=out[earlier].superseded)
                position[row["id"]] = len(out)
                out.append(CreatedMemory(**row, superseded=retired))
        return out

    @tracer.capture_method
    def upsert(self, tenant_id: UUID, request: MemoryUpsert) -> UpsertResult:
        """Store a fact unless the container already holds it (MemoryWriter.upsert)."""
        memory, link = self._prepared(tenant_id, request, "extract")
        with self.db.unit_of_work(tenant_id, Party(user_id=request.user_id)) as uow:
            return self.writer.upsert(uow, memory, request.dedupe_threshold, link=link)

    @tracer.capture_method
    def patch(
        self, tenant_id: UUID, memory_id: UUID, request: MemoryPatch, *, user_id: str | None = None
    ) -> CreatedMemory:
        """New content is a new version (answered, with the memories it retired: the patched one, and
        those graph-link found it contradicts); the rest changes in place (nothing retired). What the
        writer would refuse is refused before the new content is extracted (MemoryWriter.patchable)."""
        extractor, mentions = None, Mentions()
        if request.content is not None:
            with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
                current = self.writer.patchable(uow, memory_id, request, user_id=user_id)
            # Only new content is extracted: the memory's own content sent back changes nothing of it.
            if request.content != current["content"]:
                extractor = self.extraction.extractor(self.extraction.mode(request.extract))
                mentions = self.extraction.mentions(
                    tenant_id, extractor, request.content, current["container"], None
                )
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            row = self.writer.update(uow, memory_id, request, user_id=user_id, mentions=mentions)
            retired = [memory_id] if row["id"] != memory_id else []
            if retired and extractor is not None:
                retired += self.writer.relate(uow, row)
        return CreatedMemory(**row, superseded=retired)

    def delete(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> None:
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            self.writer.delete(uow, memory_id, user_id=user_id)

    @tracer.capture_method
    def revert(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> Memory:
        """Undo the supersession that retired `memory_id` (MemoryWriter.revert)."""
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            return Memory(**self.writer.revert(uow, memory_id, user_id=user_id))

    def _prepared(self, tenant_id: UUID, request: MemoryCreate, field: str) -> tuple[NewMemory, bool]:
        """The memory to store, with what its extract mode finds named in it, and whether graph-link
        relates it to older memories (any mode but `none`)."""
        extractor = self.extraction.extractor(self.extraction.mode(request.extract), field=field)
        memory = NewMemory.written(request)
        if extractor is None:
            return memory, False
        found = self.extraction.mentions(
            tenant_id, extractor, request.content, request.container, request.valid_from
        )
        return replace(memory, mentions=found), True

    # --- reads --------------------------------------------------------------------------------

    def history(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> MemoryHistory:
        """The versions of the memory's chain the request may read. A memory that GET does not find
        (unknown, hidden, expired) has no history either, even when other versions of its chain remain."""
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            rows = relationships.version_chain(cur, tenant_id, memory_id)
        if not any(row["id"] == memory_id for row in rows):
            raise _not_found(memory_id)
        return MemoryHistory(id=memory_id, versions=[Memory(**row) for row in rows])

    def get(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> Memory:
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            row = repo.get_memory(cur, tenant_id, memory_id)
        if row is None:
            raise _not_found(memory_id)
        return Memory(**row)

    def list_memories(self, tenant_id: UUID, request: ListRequest) -> MemoryPage:
        pages = listing(
            "memories", user_id=request.user_id, container=request.container, filters=request.filters
        )
        after = decode_cursor(request.cursor, pages)
        with self.db.tenant(tenant_id, Party(user_id=request.user_id)) as cur:
            rows = repo.list_memories(
                cur,
                tenant_id,
                ContainerScope.parse(request.container),
                request.filters,
                request.limit + 1,
                after,
            )
        memories = [Memory(**row) for row in rows[: request.limit]]
        next_cursor = (
            encode_cursor(pages, memories[-1].created_at, memories[-1].id)
            if len(rows) > request.limit
            else None
        )
        return MemoryPage(memories=memories, next_cursor=next_cursor)

    def stats(self, tenant_id: UUID, *, user_id: str | None = None) -> Stats:
        # Counts of the whole tenant (or of one user's memories), every user's private memories
        # included (no content).
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            raw = repo.stats(cur, tenant_id, user_id)
        containers: dict[str, int] = {}
        types: dict[str, int] = {}
        for row in raw["by_container_type"]:
            containers[row["container"]] = containers.get(row["container"], 0) + row["count"]
            types[row["memory_type"]] = types.get(row["memory_type"], 0) + row["count"]
        models = {row["model"]: row["count"] for row in raw["models"] if row["model"]}
        total = sum(containers.values())
        embedded = sum(models.values())
        return Stats(
            total=total,
            containers=[ContainerCount(container=k, count=v) for k, v in sorted(containers.items())],
            memory_types=[TypeCount(memory_type=k, count=v) for k, v in sorted(types.items())],
            by_container_and_type=[ContainerTypeCount(**row) for row in raw["by_container_type"]],
            embeddings=EmbeddingCoverage(
                embedded=embedded,
                missing=total - embedded,
                coverage=round(embedded / total, 4) if total else 1.0,
                models=models,
            ),
        )


def _not_found(memory_id: UUID) -> NotFound:
    return NotFound(f"memory {memory_id} not found")
