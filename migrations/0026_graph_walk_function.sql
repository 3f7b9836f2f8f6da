-- The graph walk as a function, so that a database session plans it once.
--
-- engram.graph.repo.walk sent the walk as one statement per request. The app prepares nothing
-- (a named prepared statement pins the session to one RDS Proxy connection), so PostgreSQL parsed
-- and planned it on every call: on make bench's graph data (100K entities, 1M relations) parse 0.7
-- ms and bind, where an unnamed statement is planned, 2.5-2.7 ms, around 2.7 ms of execution.
-- PL/pgSQL keeps the plans of a function's statements for the session, as a prepared statement
-- would, without any session state a proxy can see.
--
-- relation_counts is the one source of which relations a request sees, and relation_end of when a
-- relation ends; engram.graph.repo calls them too. They are plain SQL, so the planner inlines them
-- wherever they are used, and folds relation_counts to the branch its arguments select when they
-- are constants.

-- When a relation stops holding: at the first of its own end and its source memory's end or expiry.
CREATE FUNCTION relation_end(
    p_valid_to timestamptz,
    p_memory_valid_to timestamptz,
    p_memory_expires_at timestamptz
)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT LEAST(p_valid_to, p_memory_valid_to, p_memory_expires_at)
$$;

-- Which relations count, from a relation's columns and those of its source memory (all NULL when it
-- has none, or when RLS hides it from the request: the relation is then hidden too). Current ones
-- by default; those valid at `as_of`; or, with `include_history`, all of them.
CREATE FUNCTION relation_counts(
    p_valid_from timestamptz,
    p_valid_to timestamptz,
    p_source_memory_id uuid,
    p_memory_id uuid,
    p_memory_valid_to timestamptz,
    p_memory_expires_at timestamptz,
    p_memory_is_latest boolean,
    p_as_of timestamptz,
    p_include_history boolean
)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT (p_source_memory_id IS NULL OR p_memory_id IS NOT NULL)
       AND CASE
               WHEN p_as_of IS NOT NULL THEN
                   p_valid_from <= p_as_of
                   AND (relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) IS NULL
                        OR relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) > p_as_of)
               WHEN p_include_history THEN true
               ELSE (relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) IS NULL
                     OR relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) > now())
                    AND coalesce(p_memory_is_latest, true)
           END
$$;

-- Breadth-first from p_root: one row per level (depth, its entities' ids in id order, whether the
-- level was cut at p_cap entities in all). engram.graph.repo.walk documents the paging (p_wanted
-- entities after the cursor (p_cursor_depth, p_cursor_id)); no rows: p_root is not an entity of
-- the tenant. It runs as its caller, under the caller's row-level security.
CREATE FUNCTION graph_walk(
    p_tenant uuid,
    p_root uuid,
    p_depth integer,
    p_cap integer,
    p_cursor_depth integer,
    p_cursor_id uuid,
    p_wanted integer,
    p_as_of timestamptz,
    p_include_history boolean
)
RETURNS TABLE (depth integer, ids uuid[], cut boolean)
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE level(depth, ids, seen, ahead, cut) AS (
        SELECT 0, ARRAY[p_root], ARRAY[p_root],
               (CASE WHEN (0, p_root) > (p_cursor_depth, p_cursor_id) THEN 1 ELSE 0 END)::bigint,
               false
        FROM entities e WHERE e.tenant_id = p_tenant AND e.id = p_root  -- none: no such entity
      UNION ALL
        SELECT l.depth + 1, n.ids, l.seen || n.ids,
               l.ahead + (SELECT count(*) FROM unnest(n.ids) x
                          WHERE (l.depth + 1, x) > (p_cursor_depth, p_cursor_id)),
               n.cut
        FROM level l
        CROSS JOIN LATERAL (
            SELECT CASE WHEN p_wanted IS NULL OR l.depth + 1 <= p_cursor_depth THEN p_cap
                        ELSE p_wanted + 1 - l.ahead + cardinality(l.seen) END AS per_list
        ) k
        CROSS JOIN LATERAL (
            WITH lists AS (
                SELECT ARRAY(
                           SELECT DISTINCT r.target_entity
                           FROM entity_relations r
                           LEFT JOIN memories sm ON sm.id = r.source_memory_id
                           WHERE r.tenant_id = p_tenant AND r.source_entity = f.id
                             AND relation_counts(r.valid_from, r.valid_to, r.source_memory_id, sm.id,
                                                 sm.valid_to, sm.expires_at, sm.is_latest,
                                                 p_as_of, p_include_history)
                           ORDER BY 1 LIMIT k.per_list) AS xs
                FROM unnest(l.ids) AS f(id)
              UNION ALL
                SELECT ARRAY(
                           SELECT DISTINCT r.source_entity
                           FROM entity_relations r
                           LEFT JOIN memories sm ON sm.id = r.source_memory_id
                           WHERE r.tenant_id = p_tenant AND r.target_entity = f.id
                             AND relation_counts(r.valid_from, r.valid_to, r.source_memory_id, sm.id,
                                                 sm.valid_to, sm.expires_at, sm.is_latest,
                                                 p_as_of, p_include_history)
                           ORDER BY 1 LIMIT k.per_list)
                FROM unnest(l.ids) AS f(id)),
            fresh AS (SELECT unnest(xs) AS x FROM lists EXCEPT SELECT unnest(l.seen)),
            ranked AS (SELECT x, row_number() OVER (ORDER BY x) AS rank FROM fresh)
            SELECT coalesce(array_agg(x ORDER BY x) FILTER (WHERE rank <= p_cap - cardinality(l.seen)),
                            '{}') AS ids,
                   count(*) > p_cap - cardinality(l.seen) AS cut
            FROM ranked) n
        WHERE l.depth < p_depth AND NOT l.cut AND cardinality(l.ids) > 0
          AND (p_wanted IS NULL OR l.ahead <= p_wanted))
    SELECT level.depth, level.ids, level.cut FROM level ORDER BY level.depth;
END
$$;
