"""The only code that stores memories and links them: what the document pipeline and session
extraction found, direct writes (POST /v1/memories, /upsert, PATCH, DELETE, revert) and the new
memories of entity observations.

Every method works in the caller's unit of work: a memory, its entity links and its graph links
commit together or not at all, with whatever else the caller writes (a document's sources, a
session's messages marked done). Nothing here opens a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from engram.db.database import UnitOfWork
from engram.errors import Conflict, InvalidInput, NotFound
from engram.fields import utc_text
from engram.graph import relationships
from engram.graph import repo as graph_repo
from engram.graph.graph_link import nearest_links
from engram.graph.link_rules import Link, RuleLinker
from engram.graph.linking import link_memory
from engram.memories import repo
from engram.memories.models import MemoryPatch, UpsertResult
from engram.memories.new_memory import Embedding, Mentions, NewMemory, Owner, Peers, StoredMemory
from engram.memories.periods import memory_periods
from engram.providers.embeddings import Embedder, check_dimensions
from engram.providers.tenant_models import embedder_for

RestoredKind = Literal["memory", "relationship", "mention", "relation"]
NO_MENTIONS = Mentions()
# A direct write is related to the older memories of its own owner and visibility.
DIRECT_WRITE = Peers(same_owner=True, provenance={"by": "write"})


class MemoryWriter:
    def __init__(self, embedder: Embedder, linker: RuleLinker) -> None:
        self.embedder = embedder
        self.linker = linker

    # --- extracted memories -------------------------------------------------------------------

    def store(self, uow: UnitOfWork, memories: Sequence[NewMemory], peers: Peers) -> list[StoredMemory]:
        """Each memory, unless a peer already says exactly the same (then that one stands for it),
        with its entities and relations. In input order. Writers to one container are serialised
        until the unit of work ends, so the same text stored twice at once is one memory."""
        for container in sorted({m.container for m in memories}):
            repo.lock_container_writes(uow.cur, uow.tenant_id, container)
        stored: list[StoredMemory] = []
        for memory in memories:
            owner = (memory.owner.user_id, memory.owner.visibility) if peers.same_owner else None
            existing = repo.current_with_content(
                uow.cur, uow.tenant_id, memory.container, memory.content, owner
            )
            if existing is not None:
                stored.append(StoredMemory(existing, None))
                continue
            row = self._insert(uow, memory)
            stored.append(StoredMemory(row["id"], row))
        return stored

    def graph_link(self, uow: UnitOfWork, memories: Sequence[Mapping[str, Any]], peers: Peers) -> int:
        """How each new memory (a row: id, content, memory_type, valid_from) relates to its nearest
        older peers (engram.graph.graph_link): `updates` retires the older one, `extends` or
        `derives` links them. One memory after the other, so each sees the links made before it.
        Returns the number of links made."""
        return sum(len(self._link(uow, memory, peers)) for memory in memories)

    def relate(self, uow: UnitOfWork, memory: Mapping[str, Any]) -> list[UUID]:
        """graph-link for a direct write, exactly as for a document's or a conversation's memories,
        against the older memories of the same owner and visibility (a write for one user never
        retires another's memory, nor a shared fact). Returns the ids of the memories it retired."""
        return [
            link.target_id for link in self._link(uow, memory, DIRECT_WRITE) if link.relationship == "updates"
        ]

    # --- direct writes ------------------------------------------------------------------------

    def create(self, uow: UnitOfWork, memory: NewMemory, *, supersedes: UUID | None = None) -> dict[str, Any]:
        """A direct write. With `supersedes`, the new memory retires that one (kept as history), in
        the same unit of work: both happen, or neither."""
        old = self._supersedable(uow, supersedes, owner=memory.owner) if supersedes is not None else None
        row = self._insert(uow, memory)
        if old is not None:
            _check_starts_after(old, row, "valid_from")
            self._retire(uow, old["id"], row["id"], row["valid_from"], 1.0, {})
        return row

    def embedded(self, memories: Sequence[NewMemory]) -> list[NewMemory]:
        """The memories with their vectors: those that came without one are embedded together, in one
        call to the model (a batch). Vectors a caller sent are checked when they are stored."""
        missing = [m.content for m in memories if m.embedding is None]
        if not missing:
            return list(memories)
        vectors = iter(self.embedder.embed_documents(missing))
        model = self.embedder.model_id
        return [
            m if m.embedding is not None else replace(m, embedding=Embedding(next(vectors), model))
            for m in memories
        ]

    def upsert(
        self, uow: UnitOfWork, memory: NewMemory, threshold: float, *, link: bool = False
    ) -> UpsertResult:
        """Store a fact unless the container already holds it. The nearest current memory with the
        same model, owner and visibility decides: at least `threshold` similar and the same text is
        `unchanged`; similar but different text becomes a new version that supersedes it
        (`updated`); otherwise the memory is `created`. Writers to one container are serialised, so
        concurrent identical upserts leave exactly one memory.

        With `link`, a stored memory then goes through graph-link (`relate`): when it contradicts
        older memories of the owner (Alice lives in Berlin, not Paris), it retires them too, and the
        upsert is `updated`."""
        embedding = self._embedding(uow, memory)
        memory = replace(memory, embedding=embedding)
        repo.lock_container_writes(uow.cur, uow.tenant_id, memory.container)
        match = repo.nearest_same_owner(
            uow.cur,
            uow.tenant_id,
            memory.container,
            embedding.model,
            embedding.vector,
            memory.owner.user_id,
            memory.owner.visibility,
        )
        similarity = round(float(match["similarity"]), 6) if match else None
        if match is None or similarity is None or similarity < threshold:
            row = self._insert(uow, memory)
            retired = self.relate(uow, row) if link else []
            if not retired:
                return UpsertResult(status="created", id=row["id"])
            return UpsertResult(status="updated", id=row["id"], matched_id=retired[0], superseded=retired)
        if match["content"] == memory.content:
            return UpsertResult(
                status="unchanged", id=match["id"], matched_id=match["id"], similarity=similarity
            )
        row = self._insert(uow, memory)
        self._retire(uow, match["id"], row["id"], row["valid_from"], similarity, {"by": "upsert"})
        retired = [match["id"], *(self.relate(uow, row) if link else [])]
        return UpsertResult(
            status="updated", id=row["id"], matched_id=match["id"], similarity=similarity, superseded=retired
        )

    def update(
        self,
        uow: UnitOfWork,
        memory_id: UUID,
        patch: MemoryPatch,
        *,
        user_id: str | None,
        mentions: Mentions = NO_MENTIONS,
    ) -> dict[str, Any]:
        """PATCH. New text is a new version, exactly as `supersedes` makes one: the memory stays as
        history (`is_latest` false, `valid_to` set), the new version (embedded again with the writer's
        model, with `mentions`) carries its fields and the patch's, and an `updates` link joins them;
        the new version's row is returned. Tags, metadata, type, expiry and visibility change in place.
        It refuses what `patchable` refuses; a new version is checked again under the row's lock
        (`_supersedable`) and once it is stamped (`_check_starts_after`)."""
        current = self.patchable(uow, memory_id, patch, user_id=user_id)
        if _new_content(patch, current):
            return self._new_version(uow, current, patch, mentions)
        row = repo.update_memory(uow.cur, uow.tenant_id, memory_id, patch, None)
        if row is None:
            raise _not_found(memory_id)
        if patch.content is not None or patch.metadata is not None:
            _redate(uow, row)
        return row

    def patchable(
        self, uow: UnitOfWork, memory_id: UUID, patch: MemoryPatch, *, user_id: str | None
    ) -> dict[str, Any]:
        """The memory `update` changes, once every refusal that does not depend on what extraction finds
        in the new content is made: not found (404); made for a user (`user_id`), another user's memory or
        a shared one (409, `_changeable`); private, for a memory with no user or by a request not made for
        its user (422); new content for a memory already superseded, or valid from a time still to come
        (409). The service asks it before it extracts (with `extract: full`, an LLM call), so that a
        refused PATCH calls nothing; `update` asks it again in the unit of work that writes."""
        current = repo.get_memory(uow.cur, uow.tenant_id, memory_id)
        if current is None:
            raise _not_found(memory_id)
        self._changeable(uow, current, user_id)
        if patch.visibility == "private" and current["user_id"] is None:
            raise InvalidInput(
                "visibility 'private' needs a memory with a user_id; this one has none",
                details={"field": "visibility"},
            )
        if patch.visibility == "private" and current["user_id"] != user_id:
            raise InvalidInput(
                "only a request made for the memory's user (?user_id=) can make it private",
                details={"field": "visibility"},
            )
        if _new_content(patch, current):
            if not current["is_latest"]:
                raise _already_superseded(memory_id, "content")
            _check_starts_after(current, {"valid_from": repo.clock(uow.cur)}, "content")
        return current

    def _new_version(
        self, uow: UnitOfWork, current: Mapping[str, Any], patch: MemoryPatch, mentions: Mentions
    ) -> dict[str, Any]:
        old = self._supersedable(uow, current["id"], field="content")
        changed = patch.model_fields_set

        def field(name: str) -> Any:
            return getattr(patch, name) if name in changed else old[name]

        assert patch.content is not None
        version = NewMemory(
            content=patch.content,
            container=old["container"],
            memory_type=field("memory_type"),
            owner=Owner(old["user_id"], field("visibility")),
            agent_id=old["agent_id"],
            conversation_id=old["conversation_id"],
            tags=field("tags"),
            metadata=field("metadata"),
            confidence=old["confidence"],
            expires_at=field("expires_at"),
            mentions=mentions,
        )
        row = self._insert(uow, version)
        _check_starts_after(old, row, "content")
        self._retire(uow, old["id"], row["id"], row["valid_from"], 1.0, {"by": "patch"})
        return row

    def delete(self, uow: UnitOfWork, memory_id: UUID, *, user_id: str | None) -> None:
        """DELETE, made for `user_id` (`_changeable`); the version chain is mended, and the extracted
        entities nothing refers to any more go with it (`remove`)."""
        memory = repo.lock_memory(uow.cur, uow.tenant_id, memory_id)
        if memory is None:
            raise _not_found(memory_id)
        self._changeable(uow, memory, user_id)
        remove(uow, [memory_id], drop_orphaned_entities=True)

    def revert(self, uow: UnitOfWork, memory_id: UUID, *, user_id: str | None) -> dict[str, Any]:
        """Undo the supersession that retired `memory_id`: it is current again, and the memory that
        replaced it is marked reverted (kept, never current again). Made for `user_id`, both must be
        that user's (`_changeable`). An expired memory is not found, as to GET: it is never current again."""
        cur, tenant_id = uow.cur, uow.tenant_id
        memory = repo.lock_memory(cur, tenant_id, memory_id, live=True)
        if memory is None:
            raise _not_found(memory_id)
        self._changeable(uow, memory, user_id)
        if memory["is_latest"]:
            raise Conflict(f"memory {memory_id} is current: there is no supersession to revert")
        replacement_id = relationships.replacement_of(cur, tenant_id, memory_id)
        if replacement_id is None:
            raise Conflict(f"memory {memory_id} was not superseded by another memory")
        replacement = repo.lock_memory(cur, tenant_id, replacement_id)
        if replacement is None or not replacement["is_latest"]:
            raise Conflict(
                f"memory {replacement_id}, which replaced {memory_id}, has itself been superseded: "
                "revert the newer version first"
            )
        self._changeable(uow, replacement, user_id)
        repo.mark_reverted(cur, tenant_id, replacement_id)
        relationships.mark_update_reverted(cur, tenant_id, replacement_id, memory_id)
        (row,) = repo.make_current(cur, tenant_id, [memory_id])
        return row

    # --- restoring an export --------------------------------------------------------------------

    def restore(self, uow: UnitOfWork, kind: RestoredKind, row: dict[str, Any]) -> bool:
        """A memory, or one of its links (a relationship to another memory, an entity mention, a relation
        it states), exactly as exported: ids, versions, validity and vectors as they were, nothing
        embedded or linked anew (a memory's periods are derived again). The import's way in, in its unit of
        work; False when it was already there."""
        restorer = {
            "memory": repo.restore_memory,
            "relationship": relationships.restore,
            "mention": graph_repo.restore_mention,
            "relation": graph_repo.restore_relation,
        }[kind]
        restored = restorer(uow.cur, uow.tenant_id, row)
        if restored and kind == "memory":
            _date(uow, row)  # its periods are derived from it, as on every write
        return restored

    # --- helpers ------------------------------------------------------------------------------

    def _changeable(self, uow: UnitOfWork, memory: Mapping[str, Any], user_id: str | None) -> None:
        """A request made for a user (`user_id`) changes (PATCH, DELETE, revert) only that user's
        memories: another user's, or a shared one (no user_id), is a 409 naming whose it is, as a write
        never retires another owner's memory (`_supersedable`). A request made for no user, the tenant's
        own caller, may change every memory it sees."""
        if user_id is None or repo.owned_by(uow.cur, uow.tenant_id, memory["id"], user_id):
            return
        owner = memory["user_id"]
        whose = (
            "a shared memory (it has no user_id); make it without user_id"
            if owner is None
            else f"a memory of user {owner!r}; make it without user_id, or for user {owner!r}"
        )
        raise Conflict(
            f"a request made for user {user_id!r} cannot change {whose}", details={"field": "user_id"}
        )

    def _supersedable(
        self, uow: UnitOfWork, memory_id: UUID, *, field: str = "supersedes", owner: Owner | None = None
    ) -> dict[str, Any]:
        """The current memory a write replaces, locked. With `owner` (the new memory's), only one of
        that owner: a write never retires another user's memory, nor a shared one (as graph-link). An
        expired memory is not found, as to GET."""
        old = repo.lock_memory(uow.cur, uow.tenant_id, memory_id, live=True)
        if old is None:
            raise InvalidInput(f"supersedes: memory {memory_id} not found", details={"field": "supersedes"})
        if not old["is_latest"]:
            raise _already_superseded(memory_id, field)
        if owner is not None and not repo.owned_by(
            uow.cur, uow.tenant_id, memory_id, owner.user_id, owner.visibility
        ):
            raise Conflict(
                f"memory {memory_id} belongs to {_owner(old['user_id'], old['visibility'])} and this one to "
                f"{_owner(owner.user_id, owner.visibility)}: only a memory of the same owner and visibility "
                "can supersede it (a write never retires another user's memory, nor a shared one)",
                details={"field": "supersedes"},
            )
        return old

    def _link(self, uow: UnitOfWork, memory: Mapping[str, Any], peers: Peers) -> list[Link]:
        """The graph-link decisions for one new memory that took effect."""
        links = nearest_links(
            uow.cur,
            uow.tenant_id,
            self.linker,
            memory,
            same_owner=peers.same_owner,
            document_id=peers.document_id,
        )
        return [link for link in links if self._apply(uow, link, memory["valid_from"], peers.provenance)]

    def _apply(
        self, uow: UnitOfWork, link: Link, valid_from: datetime, provenance: Mapping[str, Any]
    ) -> bool:
        """Record one graph-link decision; `updates` only while the older memory is still current."""
        meta = {"linker": self.linker.name, **provenance, "reason": link.reason}
        if link.relationship != "updates":
            return relationships.add(
                uow.cur,
                uow.tenant_id,
                link.source_id,
                link.target_id,
                link.relationship,
                link.confidence,
                meta,
            )
        older = repo.lock_memory(uow.cur, uow.tenant_id, link.target_id)
        if older is None or not older["is_latest"]:
            return False
        self._retire(uow, link.target_id, link.source_id, valid_from, link.confidence, meta)
        return True

    def _retire(
        self,
        uow: UnitOfWork,
        older: UUID,
        newer: UUID,
        valid_to: datetime | None,
        confidence: float,
        metadata: Mapping[str, Any],
    ) -> None:
        """`newer` updates `older`: the older stays as history, valid until `valid_to` (None: now),
        no longer current, and the `updates` link records it."""
        repo.end_version(uow.cur, uow.tenant_id, older, valid_to)
        relationships.add(uow.cur, uow.tenant_id, newer, older, "updates", confidence, metadata)

    def _embedding(self, uow: UnitOfWork, memory: NewMemory) -> Embedding:
        """The memory's vector: the caller's (checked against the size of the model's stored vectors),
        or the embedder's for its text. A tenant moved to another model (`engram reembed`) has its
        memories embedded with that model, a vector of the configured model made again with it."""
        given = memory.embedding
        embedder = embedder_for(self.embedder, uow.cur, uow.tenant_id, writing=True)
        if given is None or (given.model == self.embedder.model_id != embedder.model_id):
            return Embedding(embedder.embed_documents([memory.content])[0], embedder.model_id)
        if given.model == self.embedder.model_id:
            check_dimensions(given.vector, self.embedder.dimensions)
        else:
            # A model of the caller's own: every vector stored under one name must agree in size.
            dims = repo.stored_dimensions(uow.cur, uow.tenant_id, given.model)
            if dims is not None:
                check_dimensions(given.vector, dims)
        return given

    def _insert(self, uow: UnitOfWork, memory: NewMemory) -> dict[str, Any]:
        row = repo.insert_memory(uow.cur, uow.tenant_id, memory, self._embedding(uow, memory))
        _date(uow, row)
        if memory.mentions:
            m = memory.mentions
            link_memory(uow.cur, uow.tenant_id, row["id"], m.entities, m.relations, m.subject)
        return row


def remove(uow: UnitOfWork, memory_ids: Sequence[UUID], *, drop_orphaned_entities: bool) -> int:
    """Delete these memories (DELETE /v1/memories/{id}, a document's, an erased user's) and mend the
    version chains they were part of: a memory one of them had retired is current again when none of
    them had a replacement that stays (deleting the current version undoes its supersession), and is
    retired by that replacement otherwise (deleting v2 of v1 -> v2 -> v3: v3 `updates` v1, whose
    valid_to stays). What something else still retires stays retired. Returns how many went.

    `drop_orphaned_entities` (a DELETE of a memory or a document): the uncurated entities these
    memories mention that nothing mentions or relates to once they are gone are deleted too, so a name
    extraction found in them does not outlive them. Without it (a document's re-ingest, a failed or
    retried run: the next links may name the same entities, which keep their ids; an erasure, which
    deletes its users' entities itself) they stay, and `engram cleanup` takes those left unreferenced."""
    cur, tenant_id = uow.cur, uow.tenant_id
    mentioned = (
        graph_repo.extracted_from(cur, tenant_id, memory_ids)["entities"] if drop_orphaned_entities else []
    )
    mended = relationships.mended_over(cur, tenant_id, memory_ids)
    repo.make_current(cur, tenant_id, [target for target, successor in mended if successor is None])
    for target, successor in mended:
        if successor is not None:
            relationships.add(cur, tenant_id, successor, target, "updates", 1.0, {"by": "delete"})
    deleted = repo.delete_memories(cur, tenant_id, memory_ids)
    graph_repo.delete_orphaned(cur, tenant_id, mentioned)
    return deleted


def _date(uow: UnitOfWork, row: Mapping[str, Any]) -> None:
    """Record the periods a new memory is about (search's time leg: engram.memories.periods)."""
    periods = memory_periods(row["content"], row["metadata"], row["valid_from"])
    repo.add_periods(uow.cur, uow.tenant_id, row["id"], periods)


def _redate(uow: UnitOfWork, row: Mapping[str, Any]) -> None:
    """The periods of a memory changed in place, in place of those it had."""
    periods = memory_periods(row["content"], row["metadata"], row["valid_from"])
    repo.replace_periods(uow.cur, uow.tenant_id, row["id"], periods)


def _check_starts_after(old: Mapping[str, Any], new: Mapping[str, Any], field: str) -> None:
    """An explicit replacement (`supersedes`, a PATCH of content) starts when or after the memory it
    replaces started: the old one stays valid until the new one's valid_from, so an earlier start would
    leave it a period that ends before it begins. Refused, never clamped (raised after the insert, the
    caller's unit of work rolls it back). graph-link and upsert, which pick what they retire themselves,
    retire such a memory as of its own valid_from instead (repo.end_version)."""
    if new["valid_from"] >= old["valid_from"]:
        return
    starts, started = utc_text(new["valid_from"]), utc_text(old["valid_from"])
    if field == "valid_from":
        raise InvalidInput(
            f"valid_from: a replacement cannot start before the memory it replaces started: {starts} is "
            f"before {started}, when memory {old['id']} became valid",
            details={"field": "valid_from"},
        )
    raise Conflict(
        f"memory {old['id']} is valid from {started}, and a new version made now would start before it "
        f"({starts}): to replace it, POST /v1/memories with supersedes and a valid_from from {started} on",
        details={"field": "content"},
    )


def _new_content(patch: MemoryPatch, current: Mapping[str, Any]) -> bool:
    """Whether the PATCH makes a new version: content other than the memory's."""
    return patch.content is not None and patch.content != current["content"]


def _already_superseded(memory_id: UUID, field: str) -> Conflict:
    what = "supersede" if field == "supersedes" else "change the content of"
    return Conflict(
        f"memory {memory_id} is already superseded; {what} its current version instead",
        details={"field": field},
    )


def _owner(user_id: str | None, visibility: str) -> str:
    who = "no user (shared)" if user_id is None else f"user {user_id!r}"
    return f"{who}, visibility {visibility!r}"


def _not_found(memory_id: UUID) -> NotFound:
    return NotFound(f"memory {memory_id} not found")
