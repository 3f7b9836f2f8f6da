"""Entities, observations, relations and traversal: the logic. No SQL here (see repo.py); entity
resolution and deduplication live in linking.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from engram import pagination
from engram.db.database import Database, Party, TenantTx
from engram.errors import Conflict, InvalidInput, NotFound
from engram.fields import utc_text
from engram.graph import linking, relationships, repo
from engram.graph.models import (
    MAX_DEPTH,
    Entity,
    EntityCreate,
    EntityDetail,
    EntityPage,
    EntityRef,
    EntitySummary,
    GraphNode,
    Observation,
    ObservationCreate,
    Relation,
    RelationCreate,
    Subgraph,
)
from engram.graph.names import normalize_name, normalize_type
from engram.memories import repo as memories_repo
from engram.memories.models import RelatedLink, RelatedMemories, SearchResponse
from engram.memories.new_memory import NewMemory
from engram.memories.writer import MemoryWriter
from engram.observability import tracer

MAX_WALK_ROWS = 10_000  # (entity, depth) rows one walk may visit before it reports `truncated`
EDGES_PER_NODE = 10  # a page of n entities carries at most 10 n relations


class GraphService:
    def __init__(self, db: Database, writer: MemoryWriter) -> None:
        self.db = db
        self.writer = writer  # stores the new memory of an observation

    # --- related memories ---------------------------------------------------------------------

    @tracer.capture_method
    def related(
        self, tenant_id: UUID, memory_id: UUID, depth: int = 1, limit: int = 50, *, user_id: str | None = None
    ) -> RelatedMemories:
        """GET /v1/memories/{id}/related: memories reached over memory relationships (up to `depth`
        steps) and memories that mention the same entities, as the request's user may see them."""
        depth = max(1, min(depth, MAX_DEPTH))
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            if memories_repo.get_memory(cur, tenant_id, memory_id) is None:
                raise NotFound(f"memory {memory_id} not found")
            related = self._related(cur, tenant_id, memory_id, depth, limit)
        return RelatedMemories(id=memory_id, related=related)

    def attach_related(
        self, tenant_id: UUID, response: SearchResponse, limit: int = 10, *, user_id: str | None = None
    ) -> SearchResponse:
        """include_related in search: each memory result gets its neighbours at depth 1."""
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            results = [
                r.model_copy(update={"related": self._related(cur, tenant_id, r.id, 1, limit)})
                if r.kind == "memory"
                else r
                for r in response.results
            ]
        return response.model_copy(update={"results": results})

    @staticmethod
    def _related(
        cur: TenantTx, tenant_id: UUID, memory_id: UUID, depth: int, limit: int
    ) -> list[RelatedLink]:
        links = [
            RelatedLink(
                **_link_fields(row),
                relationship=row["relationship"],
                direction=row["direction"],
                depth=row["depth"],
                via=row["via"] if row["depth"] > 1 else None,
            )
            for row in relationships.related_memories(cur, tenant_id, memory_id, depth, limit)
        ]
        seen = {link.id for link in links}
        for row in repo.memories_with_shared_entities(cur, tenant_id, memory_id, limit):
            if row["id"] not in seen and len(links) < limit:
                links.append(
                    RelatedLink(
                        **_link_fields(row),
                        relationship="shares_entity",
                        direction="shared",
                        depth=1,
                        shared_entities=list(row["shared_entities"]),
                    )
                )
        return links

    # --- entities -----------------------------------------------------------------------------

    def create_entity(self, tenant_id: UUID, request: EntityCreate) -> tuple[Entity, bool]:
        """The entity for this name and type: an existing one (with the new aliases added) or a new one."""
        with self.db.tenant(tenant_id) as cur:
            row, created = linking.resolve_entity(
                cur, tenant_id, request.name, request.entity_type, curated=True
            )
            row = linking.add_aliases(cur, tenant_id, row, request.aliases, strict=True)
        return _entity(row), created

    def search_entities(
        self, tenant_id: UUID, q: str | None, entity_type: str | None, limit: int, cursor: str | None
    ) -> EntityPage:
        key = normalize_name(q) if q else None
        if q and not key:
            raise InvalidInput("q has no letters or digits to search for", details={"field": "q"})
        kind = normalize_type(entity_type) if entity_type else None
        if entity_type and not kind:
            raise InvalidInput("type must be a word such as person or place", details={"field": "type"})
        pages = pagination.listing("entities", q=key, type=kind)
        after = _name_cursor(cursor, pages)
        with self.db.tenant(tenant_id) as cur:
            rows = repo.search_entities(cur, tenant_id, key, kind, limit + 1, after)
        entities = [_entity(row) for row in rows[:limit]]
        last = rows[limit - 1] if len(rows) > limit else None
        return EntityPage(
            entities=entities,
            next_cursor=pagination.encode(pages, last["normalized_name"], last["entity_type"])
            if last
            else None,
        )

    def get_entity(
        self,
        tenant_id: UUID,
        entity_id: UUID,
        limit: int,
        observations_cursor: str | None = None,
        relations_cursor: str | None = None,
        *,
        user_id: str | None = None,
    ) -> EntityDetail:
        """The entity, with the observations and relations the request's user may see."""
        observation_pages = pagination.listing("observations", entity_id=entity_id, user_id=user_id)
        relation_pages = pagination.listing("relations", entity_id=entity_id, user_id=user_id)
        obs_after = pagination.decode_cursor(
            observations_cursor, observation_pages, field="observations_cursor"
        )
        rel_after = pagination.decode_cursor(relations_cursor, relation_pages, field="relations_cursor")
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            row = repo.get_entity(cur, tenant_id, entity_id)
            if row is None:
                raise _entity_not_found(entity_id)
            observed = repo.observations(cur, tenant_id, entity_id, limit + 1, obs_after)
            related = repo.relations_of(cur, tenant_id, entity_id, limit + 1, rel_after)
        return EntityDetail(
            entity=_entity(row),
            observations=[Observation(**o) for o in observed[:limit]],
            observations_next_cursor=_next(observation_pages, observed, limit, "linked_at", "memory_id"),
            relations=[_relation(r) for r in related[:limit]],
            relations_next_cursor=_next(relation_pages, related, limit, "created_at", "id"),
        )

    def delete_entity(self, tenant_id: UUID, entity_id: UUID) -> None:
        """Deletes the entity, its keys, mentions and relations; the memories stay."""
        with self.db.tenant(tenant_id) as cur:
            if not repo.delete_entity(cur, tenant_id, entity_id):
                raise _entity_not_found(entity_id)

    # --- observations -------------------------------------------------------------------------

    def add_observation(self, tenant_id: UUID, entity_id: UUID, request: ObservationCreate) -> Observation:
        """Link a memory to the entity: an existing one (as GET finds it: an expired memory is not
        found), or a new one stored here. One transaction: a new memory is never left behind without
        its link. The entity is curated from then on: it stays when its observations go."""
        with self.db.unit_of_work(tenant_id) as uow:
            cur = uow.cur
            if repo.get_entity(cur, tenant_id, entity_id, lock=True) is None:
                raise _entity_not_found(entity_id)
            repo.mark_curated(cur, tenant_id, entity_id)  # observed on purpose: it stays without them
            if request.memory_id is None:
                assert request.content is not None
                new = NewMemory(request.content, request.container, request.memory_type)
                memory_id = self.writer.create(uow, new)["id"]
            elif memories_repo.get_memory(cur, tenant_id, request.memory_id) is None:
                raise NotFound(f"memory {request.memory_id} not found", details={"field": "memory_id"})
            else:
                memory_id = request.memory_id
            repo.add_mention(cur, tenant_id, entity_id, memory_id, request.is_subject)
            row = repo.observation(cur, tenant_id, entity_id, memory_id)
        return Observation(**row)

    def delete_observation(
        self, tenant_id: UUID, entity_id: UUID, memory_id: UUID, *, user_id: str | None = None
    ) -> None:
        """Unlinks the memory from the entity; the memory itself stays. An observation the request's
        user may not see (another user's private memory, an expired one) is not found, as to get_entity."""
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            if not repo.delete_mention(cur, tenant_id, entity_id, memory_id):
                raise NotFound(f"memory {memory_id} is not an observation of entity {entity_id}")

    # --- relations ----------------------------------------------------------------------------

    def create_relation(self, tenant_id: UUID, request: RelationCreate) -> tuple[Relation, bool]:
        """The relation, created; or the one already stored for the triple (and source memory), when
        the request says what it holds. One that holds other values is a Conflict (the table keeps one
        row per triple and source memory): stored as sent, or refused."""
        with self.db.tenant(tenant_id) as cur:
            ends = [
                self._end(cur, tenant_id, end, name)
                for end, name in ((request.source, "source"), (request.target, "target"))
            ]
            if ends[0] == ends[1]:
                raise InvalidInput("a relation links two different entities", details={"field": "target"})
            if (
                request.source_memory_id
                and memories_repo.get_memory(cur, tenant_id, request.source_memory_id) is None
            ):
                raise NotFound(
                    f"memory {request.source_memory_id} not found", details={"field": "source_memory_id"}
                )
            stored, created = repo.insert_relation(
                cur,
                tenant_id,
                {
                    "source_entity": ends[0],
                    "target_entity": ends[1],
                    "relation_type": request.relation_type,
                    "valid_from": request.valid_from,
                    "valid_to": request.valid_to,
                    "confidence": request.confidence,
                    "source_memory_id": request.source_memory_id,
                },
            )
            if not created:
                _refuse_other_values(stored, request)
            (row,) = repo.get_relations(cur, tenant_id, [stored["id"]])
        return _relation(row), created

    def _end(self, cur: TenantTx, tenant_id: UUID, end: UUID | EntityRef, field: str) -> UUID:
        if isinstance(end, EntityRef):
            row, _ = linking.resolve_entity(cur, tenant_id, end.name, end.entity_type, curated=True)
            return UUID(str(row["id"]))
        if repo.get_entity(cur, tenant_id, end, lock=True) is None:
            raise NotFound(f"entity {end} not found", details={"field": field})
        return end

    def delete_relation(self, tenant_id: UUID, relation_id: UUID, *, user_id: str | None = None) -> None:
        """Deletes the relation. One the request's user may not see (extracted from another user's
        private memory) is not found, as to get_entity and graph."""
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            if not repo.delete_relation(cur, tenant_id, relation_id):
                raise NotFound(f"relation {relation_id} not found")

    # --- traversal ----------------------------------------------------------------------------

    @tracer.capture_method
    def graph(
        self,
        tenant_id: UUID,
        entity: str,
        *,
        depth: int = 2,
        limit: int = 50,
        cursor: str | None = None,
        as_of: datetime | None = None,
        include_history: bool = False,
        max_rows: int = MAX_WALK_ROWS,
        user_id: str | None = None,
    ) -> Subgraph:
        """One page of the subgraph around `entity` (an id, or a name that names one entity), over
        the relations the request's user may see."""
        depth = max(1, min(depth, MAX_DEPTH))
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            root = self._root(cur, tenant_id, entity)
            pages = pagination.listing(
                "graph",
                root=root,
                depth=depth,
                as_of=as_of,
                include_history=include_history,
                user_id=user_id,
            )
            after = _graph_cursor(cursor, pages)
            order, truncated = repo.walk(
                cur,
                tenant_id,
                root,
                depth,
                max_rows,
                as_of=as_of,
                include_history=include_history,
                after=after,
                wanted=limit,
            )
            if not order:
                raise _entity_not_found(root)
            start = (
                0 if after is None else next((i for i, mark in enumerate(order) if mark > after), len(order))
            )
            page = order[start : start + limit]
            page_ids = [entity_id for _, entity_id in page]
            rows = repo.entities_by_id(cur, tenant_id, page_ids)
            # Relations between this page's entities and any entity up to it: each relation is then
            # reported once, on the page of whichever end the walk reached later.
            seen_ids = [entity_id for _, entity_id in order[: start + len(page)]]
            edge_cap = limit * EDGES_PER_NODE
            found = (
                repo.edges_among(
                    cur,
                    tenant_id,
                    seen_ids,
                    page_ids,
                    as_of=as_of,
                    include_history=include_history,
                    limit=edge_cap + 1,
                )
                if page
                else []
            )
        more = start + limit < len(order)
        return Subgraph(
            root=root,
            depth=depth,
            nodes=[_node(rows[entity_id], d) for d, entity_id in page if entity_id in rows],
            edges=[_relation(r) for r in found[:edge_cap]],
            next_cursor=pagination.encode(pages, page[-1][0], str(page[-1][1])) if more and page else None,
            truncated=truncated,
            edges_truncated=len(found) > edge_cap,
        )

    def _root(self, cur: TenantTx, tenant_id: UUID, entity: str) -> UUID:
        """The entity's id; an id is taken as it is (the walk finds out whether it exists)."""
        try:
            return UUID(entity)
        except ValueError:
            key = normalize_name(entity)
            matches = repo.entities_by_key(cur, tenant_id, key, lock=False) if key else []
            if not matches:
                raise NotFound(f"no entity named {entity[:100]!r}", details={"field": "entity"}) from None
            exact = [m for m in matches if m["normalized_name"] == key]
            if len({m["id"] for m in exact or matches}) > 1:
                kinds = ", ".join(sorted({f"{m['entity_type']} {m['id']}" for m in exact or matches}))
                raise Conflict(
                    f"{entity[:100]!r} names several entities ({kinds}); pass an id",
                    details={"field": "entity"},
                ) from None
            return UUID(str((exact or matches)[0]["id"]))


# --- helpers ----------------------------------------------------------------------------------


def _link_fields(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "content", "memory_type", "is_latest", "valid_from", "valid_to")
    return {key: row[key] for key in keys}


def _entity(row: dict[str, Any]) -> Entity:
    return Entity(**{k: v for k, v in row.items() if k != "normalized_name"})


def _node(row: dict[str, Any], depth: int) -> GraphNode:
    return GraphNode(
        id=row["id"], name=row["name"], entity_type=row["entity_type"], aliases=row["aliases"], depth=depth
    )


def _relation(row: dict[str, Any]) -> Relation:
    return Relation(
        id=row["id"],
        source=EntitySummary(id=row["source_id"], name=row["source_name"], entity_type=row["source_type"]),
        relation_type=row["relation_type"],
        target=EntitySummary(id=row["target_id"], name=row["target_name"], entity_type=row["target_type"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        current=bool(row["current"]),
        confidence=float(row["confidence"]),
        source_memory_id=row["source_memory_id"],
        created_at=row["created_at"],
    )


def _refuse_other_values(stored: dict[str, Any], request: RelationCreate) -> None:
    """A triple sent again must say what its stored relation holds: the same valid_to and confidence,
    and the same valid_from when it sends one (without one it began when it was stored, which a retry
    cannot repeat). Otherwise a Conflict names the relation, each value that differs, and the way to
    change it (there is no PATCH of a relation)."""
    sent = {"valid_to": request.valid_to, "confidence": request.confidence}
    if request.valid_from is not None:
        sent = {"valid_from": request.valid_from, **sent}
    differing = [name for name, value in sent.items() if value != stored[name]]
    if not differing:
        return
    what = "; ".join(f"{name} {_shown(stored[name])}, not {_shown(sent[name])}" for name in differing)
    raise Conflict(
        f"relation {stored['id']} already states this triple, with {what}: a triple (with its source "
        f"memory) is stored once; to change it, DELETE /v1/relations/{stored['id']} and POST it again",
        details={"field": differing[0]},
    )


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return utc_text(value)
    return repr(value)


def _entity_not_found(entity_id: UUID) -> NotFound:
    return NotFound(f"entity {entity_id} not found")


def _name_cursor(cursor: str | None, pages: pagination.Listing) -> tuple[str, str] | None:
    values = pagination.decode(cursor, pages, 2)
    if values is None:
        return None
    name, kind = values
    if not isinstance(name, str) or not isinstance(kind, str):
        raise pagination.not_ours("cursor")
    return name, kind


def _graph_cursor(cursor: str | None, pages: pagination.Listing) -> tuple[int, UUID] | None:
    values = pagination.decode(cursor, pages, 2)
    if values is None:
        return None
    depth, ident = values
    try:
        return int(depth), UUID(str(ident))
    except (TypeError, ValueError):
        raise pagination.not_ours("cursor") from None


def _next(
    pages: pagination.Listing, rows: list[dict[str, Any]], limit: int, time_column: str, id_column: str
) -> str | None:
    if len(rows) <= limit:
        return None
    last = rows[limit - 1]
    return pagination.encode(pages, last[time_column], str(last[id_column]))
