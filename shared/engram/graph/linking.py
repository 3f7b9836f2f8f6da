"""Entity resolution and linking a memory into the graph, inside the caller's transaction.

An entity is found by its key (`normalize_name`) and type, through its name or any alias; the unique
keys in the database make this race-free. An `unknown`-typed name (the offline heuristic cannot type)
joins an existing entity of any type with that key, and a typed name that only matches an `unknown`
entity gives it the type: one person stays one entity whether the heuristic or an LLM saw them first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from engram.db.database import TenantTx
from engram.errors import Conflict, InvalidInput, NotFound
from engram.graph import repo
from engram.graph.models import LinkResult
from engram.graph.names import display_name, normalize_name, normalize_type
from engram.memory_extraction.schema import ExtractedEntity, ExtractedRelation

UNKNOWN = "unknown"
MAX_ALIASES = 50  # per entity, as the table's CHECK says


def link_memory(
    cur: TenantTx,
    tenant_id: UUID,
    memory_id: UUID,
    entities: Sequence[ExtractedEntity],
    relations: Sequence[ExtractedRelation],
    subject: str | None,
) -> LinkResult:
    memory = repo.memory_header(cur, tenant_id, memory_id)
    if memory is None:
        raise NotFound(f"memory {memory_id} not found")
    by_key: dict[str, UUID] = {}
    resolved: list[UUID] = []
    created = 0
    for extracted in entities:
        row, was_created = resolve_entity(
            cur, tenant_id, extracted.name, extracted.type, extracted.aliases, curated=False
        )
        created += was_created
        resolved.append(row["id"])
        for name in (extracted.name, *extracted.aliases):
            by_key.setdefault(normalize_name(name), row["id"])

    def named(name: str) -> UUID:
        """An entity the memory names in its subject or a relation (normally one of its entities)."""
        nonlocal created
        key = normalize_name(name)
        if key not in by_key:
            row, was_created = resolve_entity(cur, tenant_id, name, UNKNOWN, curated=False)
            created += was_created
            by_key[key] = row["id"]
            resolved.append(row["id"])
        return by_key[key]

    subject_id = named(subject) if subject else None
    relation_ends = [(named(r.source), named(r.target)) for r in relations]
    entity_ids = list(dict.fromkeys(resolved))
    for entity_id in entity_ids:
        repo.add_mention(cur, tenant_id, entity_id, memory_id, entity_id == subject_id)
    relation_ids = []
    for relation, (source, target) in zip(relations, relation_ends, strict=True):
        if source == target:
            continue  # two names of one entity: not a relation
        stored, _ = repo.insert_relation(
            cur,
            tenant_id,
            {
                "source_entity": source,
                "target_entity": target,
                "relation_type": relation.relation,
                "valid_from": relation.valid_from or memory["valid_from"],
                "valid_to": relation.valid_to,
                "confidence": memory["confidence"] if relation.confidence is None else relation.confidence,
                "source_memory_id": memory_id,
            },
        )
        relation_ids.append(stored["id"])
    return LinkResult(entity_ids, relation_ids, subject_id, created)


def resolve_entity(
    cur: TenantTx,
    tenant_id: UUID,
    name: str,
    entity_type: str,
    aliases: Sequence[str] = (),
    *,
    curated: bool,
) -> tuple[dict[str, Any], bool]:
    """The entity this name and type denote, created if there is none; new aliases are added when
    free. Returns the entity's row and whether it was created. The entity cannot be deleted until the
    transaction ends.

    `curated`: the API was asked for it by name (POST /v1/entities, a relation end given by name),
    so it stays when nothing mentions or relates to it any more; extraction (link_memory) passes
    False: an entity it creates goes with the last memory that refers to it, and one it finds keeps
    what it was (migrations/0033)."""
    shown, key = display_name(name), normalize_name(name)
    if not key:
        raise InvalidInput(f"entity name {name[:100]!r} has no letters or digits", details={"field": "name"})
    entity_type = normalize_type(entity_type) or UNKNOWN
    matches = repo.entities_by_key(cur, tenant_id, key, lock=True)
    row: dict[str, Any] | None
    created = False
    if entity_type == UNKNOWN:
        row = _best(matches, key)
    else:
        row = _best([m for m in matches if m["entity_type"] == entity_type], key)
        untyped = _best([m for m in matches if m["entity_type"] == UNKNOWN], key)
        if row is None and untyped is not None:
            row = repo.retype_entity(cur, tenant_id, untyped["id"], entity_type)
    if row is None:
        row, created = repo.insert_entity(cur, tenant_id, shown, key, entity_type, curated=curated)
    elif curated:
        repo.mark_curated(cur, tenant_id, row["id"])
    if aliases:
        row = add_aliases(cur, tenant_id, row, aliases, strict=False)
    return row, created


def add_aliases(
    cur: TenantTx, tenant_id: UUID, row: dict[str, Any], aliases: Sequence[str], *, strict: bool
) -> dict[str, Any]:
    """Add the aliases the entity lacks. An alias that already names another entity of the type, or
    one past the limit, is a Conflict / InvalidInput when `strict` (the API), skipped otherwise."""
    known = {row["normalized_name"], *(normalize_name(alias) for alias in row["aliases"])}
    wanted: dict[str, str] = {}
    for alias in aliases:
        key = normalize_name(alias)
        if key and key not in known:
            wanted.setdefault(key, display_name(alias))
    if not wanted:
        return row
    owners = repo.owners_of_keys(cur, tenant_id, row["entity_type"], list(wanted))
    taken = {key: owner for key, owner in owners.items() if owner != row["id"]}
    room = MAX_ALIASES - len(row["aliases"])
    if strict and taken:
        key, owner = next(iter(taken.items()))
        raise Conflict(
            f"alias {wanted[key]!r} already names entity {owner} ({row['entity_type']})",
            details={"field": "aliases"},
        )
    if strict and len(wanted) > room:
        raise InvalidInput(f"an entity holds at most {MAX_ALIASES} aliases", details={"field": "aliases"})
    candidates = [key for key in wanted if key not in taken][: max(room, 0)]
    free = repo.add_keys(cur, tenant_id, row["id"], row["entity_type"], candidates)
    added = [wanted[key] for key in candidates if key in free or owners.get(key) == row["id"]]
    return repo.append_aliases(cur, tenant_id, row["id"], added) if added else row


def _best(matches: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """Of the entities a key finds, the one it names (rather than one of its aliases), oldest first."""
    named = [m for m in matches if m["normalized_name"] == key]
    return (named or matches)[0] if matches else None
