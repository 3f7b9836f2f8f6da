"""The only code that runs SQL on entities, their keys, mentions and relations (with the database
functions it calls: graph_walk, relation_counts and relation_end, migrations/0026 and 0032;
graph_edges_among, 0028).

Every function takes a cursor from `Database.tenant(...)`, so RLS limits it to one tenant; the queries
name the tenant too, which lets the planner use the (tenant_id, ...) indexes.

A relation's effective end is the earliest of its own `valid_to` and, when it was extracted from a
memory, that memory's `valid_to` and `expires_at`: when "Alice lives in Paris" is superseded, the
lives_in edge it produced ends with it. It is current when that end is in the future and its memory
(if any) is still the latest version (relation_end and relation_counts say both).

A relation extracted from a memory the request cannot see (another user's private memory) is not
shown: `sm`, its source memory, is read under RLS like every memory. Nor is one from a memory that has
expired, history included (only `as_of` a time before the expiry reads it, as search reads the memory);
observations, like every read of memories, leave expired ones out (predicates.live).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db import restore
from engram.db.database import TenantTx
from engram.memories import predicates
from engram.memories.repo import LINK_COLUMNS

ENTITY_COLUMNS = sql.SQL(
    "e.id, e.name, e.normalized_name, e.entity_type, e.aliases, e.created_at, e.updated_at"
)
PREFIX_END = chr(0x10FFFF)  # sorts after every character: [q, q || PREFIX_END) is "starts with q"

# --- entities ---------------------------------------------------------------------------------


def entities_by_key(cur: TenantTx, tenant_id: UUID, key: str, *, lock: bool) -> list[dict[str, Any]]:
    """Entities whose name or an alias normalizes to `key`, of any type, oldest first. `lock`: those
    found cannot be deleted until the transaction ends (they are about to be linked: see
    delete_unreferenced); one deleted meanwhile is not found."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
            "WHERE k.tenant_id = %s AND k.key = %s ORDER BY e.created_at, e.id {lock}"
        ).format(columns=ENTITY_COLUMNS, lock=sql.SQL("FOR KEY SHARE OF e" if lock else "")),
        (tenant_id, key),
    ).fetchall()


def insert_entity(
    cur: TenantTx, tenant_id: UUID, name: str, key: str, entity_type: str, *, curated: bool
) -> tuple[dict[str, Any], bool]:
    """The entity (tenant, key, type), created if missing; and whether this call created it. The
    unique constraint settles races between concurrent ingestions. `curated` (migrations/0033): asked
    for by name through the API, not found by extraction; an entity already there becomes curated
    when it is, and stays curated when it was."""
    row = cur.execute(
        sql.SQL(
            """INSERT INTO entities AS e (tenant_id, name, normalized_name, entity_type, curated)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (tenant_id, normalized_name, entity_type)
               DO UPDATE SET updated_at = e.updated_at, curated = e.curated OR excluded.curated
               RETURNING {columns}, (xmax = 0) AS created"""
        ).format(columns=ENTITY_COLUMNS),
        (tenant_id, name, key, entity_type, curated),
    ).fetchone()
    assert row is not None
    created = bool(row.pop("created"))
    if created:
        add_keys(cur, tenant_id, row["id"], entity_type, [key])
    return row, created


def mark_curated(cur: TenantTx, tenant_id: UUID, entity_id: UUID) -> bool:
    """The entity was asked for through the API: it stays when nothing refers to it any more. False
    when it already was curated."""
    cur.execute(
        "UPDATE entities SET curated = true WHERE tenant_id = %s AND id = %s AND NOT curated",
        (tenant_id, entity_id),
    )
    return cur.rowcount == 1


def add_keys(
    cur: TenantTx, tenant_id: UUID, entity_id: UUID, entity_type: str, keys: Sequence[str]
) -> set[str]:
    """Register keys for the entity; returns those that were free (a key already naming another
    entity of the type stays with it)."""
    if not keys:
        return set()
    rows = cur.execute(
        """INSERT INTO entity_keys (tenant_id, key, entity_type, entity_id)
           SELECT %s, k, %s, %s FROM unnest(%s::text[]) AS k
           ON CONFLICT (tenant_id, key, entity_type) DO NOTHING RETURNING key""",
        (tenant_id, entity_type, entity_id, list(dict.fromkeys(keys))),
    ).fetchall()
    return {row["key"] for row in rows}


def owners_of_keys(cur: TenantTx, tenant_id: UUID, entity_type: str, keys: Sequence[str]) -> dict[str, UUID]:
    rows = cur.execute(
        "SELECT key, entity_id FROM entity_keys WHERE tenant_id = %s AND entity_type = %s AND key = ANY(%s)",
        (tenant_id, entity_type, list(keys)),
    ).fetchall()
    return {row["key"]: row["entity_id"] for row in rows}


def append_aliases(cur: TenantTx, tenant_id: UUID, entity_id: UUID, aliases: Sequence[str]) -> dict[str, Any]:
    row = cur.execute(
        sql.SQL(
            """UPDATE entities AS e SET aliases = e.aliases || %s::text[], updated_at = now()
               WHERE e.tenant_id = %s AND e.id = %s RETURNING {columns}"""
        ).format(columns=ENTITY_COLUMNS),
        (list(aliases), tenant_id, entity_id),
    ).fetchone()
    assert row is not None
    return row


def retype_entity(cur: TenantTx, tenant_id: UUID, entity_id: UUID, entity_type: str) -> dict[str, Any] | None:
    """Give an `unknown` entity a type, unless one of its keys already names an entity of that type."""
    clash = cur.execute(
        """SELECT 1 FROM entity_keys mine JOIN entity_keys theirs
               ON theirs.tenant_id = mine.tenant_id AND theirs.key = mine.key AND theirs.entity_type = %s
           WHERE mine.tenant_id = %s AND mine.entity_id = %s LIMIT 1""",
        (entity_type, tenant_id, entity_id),
    ).fetchone()
    if clash is not None:
        return None
    cur.execute(
        "UPDATE entity_keys SET entity_type = %s WHERE tenant_id = %s AND entity_id = %s",
        (entity_type, tenant_id, entity_id),
    )
    return cur.execute(
        sql.SQL(
            "UPDATE entities AS e SET entity_type = %s, updated_at = now() "
            "WHERE e.tenant_id = %s AND e.id = %s RETURNING {columns}"
        ).format(columns=ENTITY_COLUMNS),
        (entity_type, tenant_id, entity_id),
    ).fetchone()


def get_entity(
    cur: TenantTx, tenant_id: UUID, entity_id: UUID, *, lock: bool = False
) -> dict[str, Any] | None:
    """`lock`: the entity cannot be deleted until the transaction ends (it is about to be linked)."""
    return cur.execute(
        sql.SQL("SELECT {columns} FROM entities e WHERE e.tenant_id = %s AND e.id = %s {lock}").format(
            columns=ENTITY_COLUMNS, lock=sql.SQL("FOR KEY SHARE" if lock else "")
        ),
        (tenant_id, entity_id),
    ).fetchone()


def delete_entity(cur: TenantTx, tenant_id: UUID, entity_id: UUID) -> bool:
    cur.execute("DELETE FROM entities WHERE tenant_id = %s AND id = %s", (tenant_id, entity_id))
    return cur.rowcount == 1


def search_entities(
    cur: TenantTx,
    tenant_id: UUID,
    key: str | None,
    entity_type: str | None,
    limit: int,
    after: tuple[str, str] | None,
) -> list[dict[str, Any]]:
    """Entities in (normalized name, type) order. With `key`: those whose name or an alias starts
    with it, or has a word that does ("smith" finds "alice smith")."""
    clauses: list[sql.Composable] = [sql.SQL("e.tenant_id = {}").format(sql.Literal(tenant_id))]
    if key:
        clauses.append(
            sql.SQL(
                "EXISTS (SELECT 1 FROM entity_keys k WHERE k.tenant_id = e.tenant_id AND k.entity_id = e.id "
                "AND ((k.key >= {q} AND k.key < {q_end}) OR strpos(k.key, {word}) > 0))"
            ).format(q=sql.Literal(key), q_end=sql.Literal(key + PREFIX_END), word=sql.Literal(" " + key))
        )
    if entity_type:
        clauses.append(sql.SQL("e.entity_type = {}").format(sql.Literal(entity_type)))
    if after is not None:
        clauses.append(
            sql.SQL("(e.normalized_name, e.entity_type) > ({}, {})").format(
                sql.Literal(after[0]), sql.Literal(after[1])
            )
        )
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM entities e WHERE {where} "
            "ORDER BY e.normalized_name, e.entity_type LIMIT {n}"
        ).format(columns=ENTITY_COLUMNS, where=sql.SQL(" AND ").join(clauses), n=sql.Literal(limit))
    ).fetchall()


def entities_named_query(tenant_id: UUID, keys: Sequence[str], named_keys: Sequence[str]) -> sql.Composable:
    """The entities a search query names, by key (names and aliases, engram.graph.names.query_keys);
    those the offline heuristic guessed (type `unknown`) only when the query writes them as names.
    Usually none: then search runs without a graph leg. A query (entity_id), for search's statement."""
    return sql.SQL(
        "SELECT DISTINCT k.entity_id FROM entity_keys k WHERE k.tenant_id = {t} "
        "AND k.key = ANY({keys}::text[]) AND (k.entity_type <> 'unknown' OR k.key = ANY({named}::text[]))"
    ).format(t=sql.Literal(tenant_id), keys=sql.Literal(list(keys)), named=sql.Literal(list(named_keys)))


def any_entities_query(tenant_id: UUID) -> sql.Composable:
    """(any): whether the tenant has any entity key (entities_named_query finds none without one)."""
    return sql.SQL("SELECT EXISTS (SELECT 1 FROM entity_keys k WHERE k.tenant_id = {}) AS any").format(
        sql.Literal(tenant_id)
    )


# --- mentions (observations) ------------------------------------------------------------------


def memory_header(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> dict[str, Any] | None:
    """The few columns of a memory the graph needs, if the memory exists in this tenant: expired or
    not, as linking needs it (a document's fact that expired in the past is linked, for `as_of`). What
    the API lets a request observe or cite is what GET reads (engram.memories.repo.get_memory)."""
    return cur.execute(
        "SELECT id, valid_from, confidence FROM memories WHERE tenant_id = %s AND id = %s",
        (tenant_id, memory_id),
    ).fetchone()


def add_mention(cur: TenantTx, tenant_id: UUID, entity_id: UUID, memory_id: UUID, is_subject: bool) -> None:
    cur.execute(
        """INSERT INTO entity_mentions AS m (tenant_id, entity_id, memory_id, is_subject)
           VALUES (%s, %s, %s, %s)
           ON CONFLICT (tenant_id, entity_id, memory_id)
           DO UPDATE SET is_subject = m.is_subject OR excluded.is_subject""",
        (tenant_id, entity_id, memory_id, is_subject),
    )


def delete_mention(cur: TenantTx, tenant_id: UUID, entity_id: UUID, memory_id: UUID) -> bool:
    """Unlinks the memory from the entity, if the request may read the memory: an observation is its
    memory joined under RLS and unexpired, here as in `observations`, so one it cannot read it cannot
    delete."""
    cur.execute(
        sql.SQL(
            """DELETE FROM entity_mentions em USING memories m
               WHERE em.tenant_id = %(t)s AND em.entity_id = %(e)s AND em.memory_id = %(m)s
                 AND m.tenant_id = %(t)s AND m.id = em.memory_id AND {live}"""
        ).format(live=predicates.live()),
        {"t": tenant_id, "e": entity_id, "m": memory_id},
    )
    return cur.rowcount == 1


def observations(
    cur: TenantTx, tenant_id: UUID, entity_id: UUID, limit: int, after: tuple[datetime, UUID] | None
) -> list[dict[str, Any]]:
    """The memories that mention the entity (those the request may read: not expired), most recently
    linked first."""
    page: sql.Composable = sql.SQL("")
    if after is not None:
        page = sql.SQL("AND (em.created_at, em.memory_id) < ({}, {})").format(
            sql.Literal(after[0]), sql.Literal(after[1])
        )
    return cur.execute(
        sql.SQL(
            """SELECT em.memory_id, em.is_subject, em.created_at AS linked_at, m.content, m.container,
                      m.memory_type, m.is_latest, m.valid_from, m.valid_to, m.created_at
               FROM entity_mentions em JOIN memories m ON m.id = em.memory_id AND {live}
               WHERE em.tenant_id = %s AND em.entity_id = %s {page}
               ORDER BY em.created_at DESC, em.memory_id DESC LIMIT %s"""
        ).format(live=predicates.live(), page=page),
        (tenant_id, entity_id, limit),
    ).fetchall()


def observation(cur: TenantTx, tenant_id: UUID, entity_id: UUID, memory_id: UUID) -> dict[str, Any]:
    row = cur.execute(
        sql.SQL(
            """SELECT em.memory_id, em.is_subject, m.content, m.container, m.memory_type, m.is_latest,
                      m.valid_from, m.valid_to, m.created_at
               FROM entity_mentions em JOIN memories m ON m.id = em.memory_id AND {live}
               WHERE em.tenant_id = %s AND em.entity_id = %s AND em.memory_id = %s"""
        ).format(live=predicates.live()),
        (tenant_id, entity_id, memory_id),
    ).fetchone()
    assert row is not None
    return row


def subject_entities(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> list[UUID]:
    rows = cur.execute(
        "SELECT entity_id FROM entity_mentions WHERE tenant_id = %s AND memory_id = %s AND is_subject "
        "ORDER BY created_at, entity_id",
        (tenant_id, memory_id),
    ).fetchall()
    return [row["entity_id"] for row in rows]


def mentions_of(cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    """The entities these memories mention (memory_id, entity_id, is_subject), in one round trip."""
    return cur.execute(
        "SELECT memory_id, entity_id, is_subject FROM entity_mentions "
        "WHERE tenant_id = %s AND memory_id = ANY(%s)",
        (tenant_id, list(memory_ids)),
    ).fetchall()


# `o` is a graph-link candidate for the new memory `n`: another, current memory created before it,
# not from document %(d)s, and with %(owner)s only one of the same user and visibility.
_OLDER_PEER = sql.SQL(
    """o.id <> n.id AND {current} AND o.created_at < n.created_at
       AND NOT EXISTS (SELECT 1 FROM memory_sources s WHERE s.memory_id = o.id AND s.document_id = %(d)s)
       AND (NOT %(owner)s OR ({same_owner}))"""
).format(current=predicates.current("o"), same_owner=predicates.same_owner(*predicates.owner_of("n"), "o"))


def nearest_older_memories(
    cur: TenantTx,
    tenant_id: UUID,
    memory_id: UUID,
    limit: int,
    *,
    document_id: UUID | None = None,
    same_owner: bool = False,
) -> list[dict[str, Any]]:
    """Current, older memories of the same container and embedding model closest to `memory_id`,
    leaving out every memory that came from `document_id` itself; with `same_owner`, only those of the
    same user and visibility (a user's conversation never retires someone else's memory)."""
    return cur.execute(
        sql.SQL(
            """SELECT o.id, o.content, 1 - (o.embedding <=> n.embedding) AS similarity
               FROM memories n
               JOIN memories o ON o.tenant_id = n.tenant_id AND o.container = n.container
                              AND o.embedding_model = n.embedding_model
               WHERE n.tenant_id = %(t)s AND n.id = %(m)s AND n.embedding IS NOT NULL
                 AND {peer}
               ORDER BY o.embedding <=> n.embedding, o.id
               LIMIT %(k)s"""
        ).format(peer=_OLDER_PEER),
        {"t": tenant_id, "m": memory_id, "d": document_id, "owner": same_owner, "k": limit},
    ).fetchall()


def memories_sharing_entities(
    cur: TenantTx,
    tenant_id: UUID,
    memory_id: UUID,
    limit: int,
    *,
    document_id: UUID | None = None,
    same_owner: bool = False,
) -> list[dict[str, Any]]:
    """Current, older memories of the same container that mention an entity `memory_id` mentions,
    most shared entities first, leaving out every memory that came from `document_id` itself; with
    `same_owner`, only those of the same user and visibility."""
    return cur.execute(
        sql.SQL(
            """SELECT o.id, o.content, count(*) AS shared,
                      CASE WHEN o.embedding_model = n.embedding_model
                           THEN 1 - (o.embedding <=> n.embedding) ELSE 0 END AS similarity
               FROM memories n
               JOIN entity_mentions nm ON nm.tenant_id = n.tenant_id AND nm.memory_id = n.id
               JOIN entity_mentions om ON om.tenant_id = n.tenant_id AND om.entity_id = nm.entity_id
               JOIN memories o
                 ON o.id = om.memory_id AND o.tenant_id = n.tenant_id AND o.container = n.container
               WHERE n.tenant_id = %(t)s AND n.id = %(m)s AND {peer}
               GROUP BY o.id, o.content, o.embedding_model, o.embedding, n.embedding_model, n.embedding
               ORDER BY count(*) DESC, o.created_at DESC, o.id
               LIMIT %(k)s"""
        ).format(peer=_OLDER_PEER),
        {"t": tenant_id, "m": memory_id, "d": document_id, "owner": same_owner, "k": limit},
    ).fetchall()


def memories_with_shared_entities(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, limit: int
) -> list[dict[str, Any]]:
    """Other memories that mention an entity `memory_id` mentions, and have not expired, as links
    (LINK_COLUMNS) with the names they share, most shared first.

    The shared entities are grouped by memory from the mentions alone (one per entity and memory:
    the key), and their names read for each memory of the answer: with `entities` joined before the
    grouping, the statement took 2.2-2.7 ms to plan and 0.4-0.7 to run (make bench's graph data)."""
    return cur.execute(
        sql.SQL(
            """SELECT {columns},
                      (SELECT array_agg(DISTINCT e.name ORDER BY e.name) FROM entities e
                       WHERE e.tenant_id = %(t)s AND e.id = ANY(s.entity_ids)) AS shared_entities
               FROM (SELECT om.memory_id, array_agg(nm.entity_id) AS entity_ids
                     FROM entity_mentions nm
                     JOIN entity_mentions om ON om.tenant_id = nm.tenant_id AND om.entity_id = nm.entity_id
                     WHERE nm.tenant_id = %(t)s AND nm.memory_id = %(m)s AND om.memory_id <> nm.memory_id
                     GROUP BY om.memory_id) s
               JOIN memories m ON m.id = s.memory_id AND m.tenant_id = %(t)s AND {live}
               ORDER BY cardinality(s.entity_ids) DESC, m.created_at DESC, m.id
               LIMIT %(k)s"""
        ).format(columns=LINK_COLUMNS, live=predicates.live()),
        {"t": tenant_id, "m": memory_id, "k": limit},
    ).fetchall()


def relations_from_memories(
    cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]
) -> list[dict[str, Any]]:
    """The relations these memories state (source_memory_id, source_entity, relation_type,
    target_entity), in one round trip."""
    return cur.execute(
        "SELECT source_memory_id, source_entity, relation_type, target_entity FROM entity_relations "
        "WHERE tenant_id = %s AND source_memory_id = ANY(%s)",
        (tenant_id, list(memory_ids)),
    ).fetchall()


# --- relations --------------------------------------------------------------------------------


def edge_filter(as_of: datetime | None, include_history: bool) -> sql.Composable:
    """Which relations count, over `r` (entity_relations) and `sm` (its source memory, if any):
    current ones (default), those valid at `as_of`, or all of them but those whose memory has expired;
    only those the request may see. The predicate is the database's relation_counts (migrations/0026,
    0032), which the planner inlines."""
    return sql.SQL(
        "relation_counts(r.valid_from, r.valid_to, r.source_memory_id, sm.id, sm.valid_to, sm.expires_at, "
        "sm.is_latest, {}::timestamptz, {})"
    ).format(sql.Literal(as_of), sql.Literal(include_history))


# The relations a request may see, of any time: those of no memory, and those of a memory it can read.
_VISIBLE = edge_filter(None, include_history=True)

_RELATION_SELECT = sql.SQL(
    """SELECT r.id, r.relation_type, r.valid_from,
              relation_end(r.valid_to, sm.valid_to, sm.expires_at) AS valid_to, r.confidence,
              r.source_memory_id, r.created_at, {current} AS current,
              s.id AS source_id, s.name AS source_name, s.entity_type AS source_type,
              t.id AS target_id, t.name AS target_name, t.entity_type AS target_type
       FROM entity_relations r
       JOIN entities s ON s.id = r.source_entity
       JOIN entities t ON t.id = r.target_entity
       LEFT JOIN memories sm ON sm.id = r.source_memory_id"""
).format(current=edge_filter(None, include_history=False))


def insert_relation(cur: TenantTx, tenant_id: UUID, fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Insert the relation; if the same (source, type, target, source memory) exists, keep it (the
    table holds one such row). Returns the row's stored id, valid_from, valid_to and confidence (its
    own, not its source memory's), and whether this call created it."""
    row = cur.execute(
        """INSERT INTO entity_relations (tenant_id, source_entity, target_entity, relation_type,
               valid_from, valid_to, confidence, source_memory_id)
           VALUES (%s, %s, %s, %s, coalesce(%s, now()), %s, %s, %s)
           ON CONFLICT (tenant_id, source_entity, relation_type, target_entity, source_memory_id) DO NOTHING
           RETURNING id, valid_from, valid_to, confidence""",
        (
            tenant_id,
            fields["source_entity"],
            fields["target_entity"],
            fields["relation_type"],
            fields["valid_from"],
            fields["valid_to"],
            fields["confidence"],
            fields["source_memory_id"],
        ),
    ).fetchone()
    if row is not None:
        return row, True
    existing = cur.execute(
        """SELECT id, valid_from, valid_to, confidence FROM entity_relations
           WHERE tenant_id = %s AND source_entity = %s AND relation_type = %s
               AND target_entity = %s AND source_memory_id IS NOT DISTINCT FROM %s""",
        (
            tenant_id,
            fields["source_entity"],
            fields["relation_type"],
            fields["target_entity"],
            fields["source_memory_id"],
        ),
    ).fetchone()
    assert existing is not None
    return existing, False


def get_relations(cur: TenantTx, tenant_id: UUID, relation_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    return cur.execute(
        sql.SQL(
            "{select} WHERE r.tenant_id = %s AND r.id = ANY(%s) AND {visible} ORDER BY r.created_at, r.id"
        ).format(select=_RELATION_SELECT, visible=_VISIBLE),
        (tenant_id, list(relation_ids)),
    ).fetchall()


def delete_relation(cur: TenantTx, tenant_id: UUID, relation_id: UUID) -> bool:
    """Deletes the relation, if the request may see it (as get_relations reads it): one from a memory
    the request cannot read is not found, to a delete as to a read."""
    cur.execute(
        sql.SQL(
            """DELETE FROM entity_relations WHERE tenant_id = %(t)s AND id IN (
                   SELECT r.id FROM entity_relations r LEFT JOIN memories sm ON sm.id = r.source_memory_id
                   WHERE r.tenant_id = %(t)s AND r.id = %(r)s AND {visible})"""
        ).format(visible=_VISIBLE),
        {"t": tenant_id, "r": relation_id},
    )
    return cur.rowcount == 1


def relations_of(
    cur: TenantTx, tenant_id: UUID, entity_id: UUID, limit: int, after: tuple[datetime, UUID] | None
) -> list[dict[str, Any]]:
    """The entity's relations in both directions, newest first."""
    page: sql.Composable = sql.SQL("")
    if after is not None:
        page = sql.SQL("AND (r.created_at, r.id) < ({}, {})").format(
            sql.Literal(after[0]), sql.Literal(after[1])
        )
    return cur.execute(
        sql.SQL(
            """{select}
               WHERE r.tenant_id = %(t)s AND (r.source_entity = %(e)s OR r.target_entity = %(e)s) {page}
                 AND {visible}
               ORDER BY r.created_at DESC, r.id DESC LIMIT %(n)s"""
        ).format(select=_RELATION_SELECT, page=page, visible=_VISIBLE),
        {"t": tenant_id, "e": entity_id, "n": limit},
    ).fetchall()


# --- traversal --------------------------------------------------------------------------------


def walk(
    cur: TenantTx,
    tenant_id: UUID,
    root: UUID,
    depth: int,
    max_rows: int,
    *,
    as_of: datetime | None = None,
    include_history: bool = False,
    after: tuple[int, UUID] | None = None,
    wanted: int | None = None,
) -> tuple[list[tuple[int, UUID]], bool]:
    """Breadth-first from `root`, relations followed both ways, up to `depth` hops, over the relations
    that count (edge_filter's): each reached entity once, at its shortest distance, as (depth, id) in
    that order.

    One level per step of the recursion: the next level is the neighbours of this one minus every
    entity already seen, so an entity is expanded once however many paths reach it.

    With `wanted`, only what a page of that many entities after `after` needs is walked (the
    entities of the page, and one more to prove that another page follows):
    - it stops at the first level that holds more than `wanted` entities after the cursor;
    - past the cursor's level, each entity's neighbours are read in id order, each direction
      through its own index, and at most `need` = `wanted` + 1 - (entities already after the
      cursor) + (entities seen) of them. A level is then complete up to the lowest last id of the
      lists cut this way; below it, one such list alone holds `need` ids, so more than `wanted` new
      ones: the page and its successor lie in the complete part, and the walk ends at this level.
    So a hub's thousands of relations cost a page no more than its first few.

    No rows at all: `root` is not an entity of the tenant.

    At most `max_rows` entities in all: a level that would pass it keeps its lowest ids, and the
    second value is True (the walk was cut short: never silently).

    The statement is the database's graph_walk (migrations/0026): a session plans it once, where a
    statement sent each time was parsed and planned on every call (3.2-3.4 ms of it on make bench's
    graph data)."""
    cursor_depth, cursor_id = after if after is not None else (-1, root)
    rows = cur.execute(
        """SELECT depth, ids, cut FROM graph_walk(%(t)s, %(root)s, %(depth)s, %(cap)s, %(cd)s, %(cid)s,
                                                  %(wanted)s, %(as_of)s, %(history)s)""",
        {
            "root": root,
            "t": tenant_id,
            "depth": depth,
            "cap": max_rows,
            "cd": cursor_depth,
            "cid": cursor_id,
            "wanted": wanted,
            "as_of": as_of,
            "history": include_history,
        },
    ).fetchall()
    # As they come (int, and uuid.UUID for each element of a uuid[]): a walk reaches hundreds of
    # entities to page through fifty, so nothing is converted per entity.
    found = [(row["depth"], e) for row in rows for e in row["ids"]]
    return found, any(row["cut"] for row in rows)


def neighbours_query(tenant_id: UUID, as_of: datetime | None, limit: int = 50) -> sql.Composable:
    """The entities one relation away from those of the CTE `ents` (entities_named_query), either way,
    over the relations valid now (or at `as_of`) that the request may see; at most `limit`, the most
    related first. A query (entity_id), for search's statement."""
    return sql.SQL(
        """SELECT n.entity_id FROM entity_relations r LEFT JOIN memories sm ON sm.id = r.source_memory_id
           CROSS JOIN LATERAL (SELECT CASE WHEN r.source_entity = ANY(ARRAY(SELECT entity_id FROM ents))
                                           THEN r.target_entity ELSE r.source_entity END AS entity_id) n
           WHERE r.tenant_id = {t}
             AND (r.source_entity = ANY(ARRAY(SELECT entity_id FROM ents))
                  OR r.target_entity = ANY(ARRAY(SELECT entity_id FROM ents)))
             AND NOT n.entity_id = ANY(ARRAY(SELECT entity_id FROM ents)) AND {edges}
           GROUP BY n.entity_id ORDER BY count(*) DESC, n.entity_id LIMIT {n}"""
    ).format(t=sql.Literal(tenant_id), edges=edge_filter(as_of, False), n=sql.Literal(limit))


def entities_by_id(cur: TenantTx, tenant_id: UUID, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
    rows = cur.execute(
        # The ids in binary (%b): psycopg writes a uuid[] in text at 3-4 us an element, a page's 50 ids
        # 0.18 ms, and in binary at 0.03 ms.
        sql.SQL("SELECT {columns} FROM entities e WHERE e.tenant_id = %s AND e.id = ANY(%b)").format(
            columns=ENTITY_COLUMNS
        ),
        (tenant_id, list(ids)),
    ).fetchall()
    return {row["id"]: row for row in rows}


def edges_among(
    cur: TenantTx,
    tenant_id: UUID,
    seen: Sequence[UUID],
    page: Sequence[UUID],
    *,
    as_of: datetime | None,
    include_history: bool,
    limit: int,
) -> list[dict[str, Any]]:
    """Relations between entities in `seen` that touch at least one entity of `page` (the tail of
    `seen`), over the relations that count (relation_counts, as edge_filter says it), oldest first.

    The statement is the database's graph_edges_among (migrations/0028), which a session plans once:
    sent each time, its planning weighed every element of its id arrays (1.6 ms at 50 entities)."""
    # On a first page `page` is all of `seen`, and the clause holds for every relation among them.
    whole = len(page) == len(seen)
    return cur.execute(
        # The id arrays in binary, as in entities_by_id.
        "SELECT * FROM graph_edges_among(%(t)s, %(seen)b, %(page)b, %(as_of)s, %(history)s, %(n)s)",
        {
            "t": tenant_id,
            "seen": list(seen),
            "page": None if whole else list(page),
            "as_of": as_of,
            "history": include_history,
            "n": limit,
        },
    ).fetchall()


# --- restoring an export ------------------------------------------------------------------------


def restore_entity(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    """False when the id, or the entity's name and type, is already there (see entity_by_key)."""
    return restore.insert_as_is(cur, "entities", tenant_id, row, conflict="")


def entity_by_key(cur: TenantTx, tenant_id: UUID, normalized_name: str, entity_type: str) -> UUID | None:
    row = cur.execute(
        "SELECT id FROM entities WHERE tenant_id = %s AND normalized_name = %s AND entity_type = %s",
        (tenant_id, normalized_name, entity_type),
    ).fetchone()
    return None if row is None else row["id"]


def restore_entity_key(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "entity_keys", tenant_id, row, conflict="(tenant_id, key, entity_type)")


def restore_mention(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(
        cur, "entity_mentions", tenant_id, row, conflict="(tenant_id, entity_id, memory_id)"
    )


def restore_relation(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "entity_relations", tenant_id, row, conflict="")


# --- erasure and unreferenced entities ---------------------------------------------------------


def extracted_from(cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]) -> dict[str, Any]:
    """What linking stored for these memories: the entities they mention, and how many mentions and
    relations (both go with the memories, ON DELETE CASCADE)."""
    row = cur.execute(
        """SELECT coalesce((SELECT array_agg(DISTINCT em.entity_id) FROM entity_mentions em
                            WHERE em.tenant_id = %(t)s AND em.memory_id = ANY(%(m)s)), '{}') AS entities,
                  (SELECT count(*) FROM entity_mentions em
                   WHERE em.tenant_id = %(t)s AND em.memory_id = ANY(%(m)s)) AS mentions,
                  (SELECT count(*) FROM entity_relations er
                   WHERE er.tenant_id = %(t)s AND er.source_memory_id = ANY(%(m)s)) AS relations""",
        {"t": tenant_id, "m": list(memory_ids)},
    ).fetchone()
    assert row is not None
    return row


def mentioned_in(cur: TenantTx, tenant_id: UUID, scope: predicates.ContainerScope) -> list[UUID]:
    """The entities the memories (every version) of these containers mention: extracted_from for a
    whole container, in one statement however many memories it holds."""
    rows = cur.execute(
        sql.SQL(
            "SELECT DISTINCT em.entity_id FROM entity_mentions em JOIN memories m "
            "ON m.tenant_id = em.tenant_id AND m.id = em.memory_id "
            "WHERE em.tenant_id = %s AND m.tenant_id = %s AND {}"
        ).format(predicates.in_container(scope, "m", "container")),
        (tenant_id, tenant_id),
    ).fetchall()
    return [row["entity_id"] for row in rows]


def delete_orphaned(cur: TenantTx, tenant_id: UUID, mentioned: Sequence[UUID]) -> int:
    """What deleting memories does to the entities they mentioned (DELETE of a memory, a document or a
    container; `mentioned` noted before they went, with extracted_from or mentioned_in): those that are
    uncurated and that nothing mentions or relates to any more are deleted, in the caller's transaction,
    so a name extraction found in a text does not outlive it. Curated ones stay. Returns how many went."""
    return delete_unreferenced(cur, tenant_id, mentioned, curated_too=False, limit=None)


# `e` is referenced: a memory mentions it, or a relation joins it (each end through its own index).
_UNREFERENCED = sql.SQL(
    """NOT EXISTS (SELECT 1 FROM entity_mentions em WHERE em.tenant_id = e.tenant_id AND em.entity_id = e.id)
       AND NOT EXISTS (SELECT 1 FROM entity_relations er
                       WHERE er.tenant_id = e.tenant_id AND er.source_entity = e.id)
       AND NOT EXISTS (SELECT 1 FROM entity_relations er
                       WHERE er.tenant_id = e.tenant_id AND er.target_entity = e.id)"""
)


def delete_unreferenced(
    cur: TenantTx,
    tenant_id: UUID,
    among: Sequence[UUID] | None,
    *,
    curated_too: bool,
    limit: int | None,
) -> int:
    """Delete entities no memory mentions and no relation joins any more (their keys cascade): of
    `among` (None: of every entity of the tenant), at most `limit` (None: all); without `curated_too`,
    only uncurated ones (those extraction made, migrations/0033). Returns how many went.

    The entities are locked first, skipping any another transaction holds (one linking a memory to
    it: engram.graph.linking locks what it resolves), and asked again, in a statement of its own, whether
    they are unreferenced: a mention committed after the first statement began is seen, and none can be
    added while the lock is held. A skipped entity is left for a later run."""
    if among is not None and not among:
        return 0
    clauses: list[sql.Composable] = [sql.SQL("e.tenant_id = {}").format(sql.Literal(tenant_id))]
    if among is not None:
        clauses.append(sql.SQL("e.id = ANY({}::uuid[])").format(sql.Literal(list(among))))
    if not curated_too:
        clauses.append(sql.SQL("NOT e.curated"))
    clauses.append(_UNREFERENCED)
    candidates = cur.execute(
        sql.SQL("SELECT e.id FROM entities e WHERE {where} {limit} FOR UPDATE SKIP LOCKED").format(
            where=sql.SQL(" AND ").join(clauses),
            limit=sql.SQL("LIMIT {}").format(sql.Literal(limit)) if limit is not None else sql.SQL(""),
        )
    ).fetchall()
    if not candidates:
        return 0
    cur.execute(
        sql.SQL("DELETE FROM entities e WHERE e.tenant_id = %s AND e.id = ANY(%s) AND {}").format(
            _UNREFERENCED
        ),
        (tenant_id, [row["id"] for row in candidates]),
    )
    return cur.rowcount
