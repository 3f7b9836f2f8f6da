-- The relations of a page of GET /v1/graph as a function, so that a database session plans it once
-- (as 0026 did for the walk that finds the page, for the same reason: the app prepares nothing).
-- Sent each time, the statement was planned on every call, and the planner weighs each element of
-- its two 50-id arrays against the statistics: planning 1.6 ms beside 2.4 ms of execution on make
-- bench's graph data (100K entities, 1M relations).
--
-- Relations between entities in p_seen that touch at least one entity of p_page (NULL: p_page is all
-- of p_seen), over the relations that count (relation_counts: current ones, those valid at p_as_of,
-- or all with p_include_history), oldest first, at most p_limit. It runs as its caller, under the
-- caller's row-level security: a relation whose source memory the caller may not see is not returned.
CREATE FUNCTION graph_edges_among(
    p_tenant uuid,
    p_seen uuid[],
    p_page uuid[],
    p_as_of timestamptz,
    p_include_history boolean,
    p_limit integer
)
RETURNS TABLE (
    id uuid,
    relation_type text,
    valid_from timestamptz,
    valid_to timestamptz,
    confidence double precision,
    source_memory_id uuid,
    created_at timestamptz,
    current boolean,
    source_id uuid,
    source_name text,
    source_type text,
    target_id uuid,
    target_name text,
    target_type text
)
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.id, r.relation_type, r.valid_from,
           relation_end(r.valid_to, sm.valid_to, sm.expires_at), r.confidence,
           r.source_memory_id, r.created_at,
           relation_counts(r.valid_from, r.valid_to, r.source_memory_id, sm.id, sm.valid_to,
                           sm.expires_at, sm.is_latest, NULL, false),
           s.id, s.name, s.entity_type, t.id, t.name, t.entity_type
    FROM entity_relations r
    JOIN entities s ON s.id = r.source_entity
    JOIN entities t ON t.id = r.target_entity
    LEFT JOIN memories sm ON sm.id = r.source_memory_id
    WHERE r.tenant_id = p_tenant
      AND relation_counts(r.valid_from, r.valid_to, r.source_memory_id, sm.id, sm.valid_to,
                          sm.expires_at, sm.is_latest, p_as_of, p_include_history)
      AND r.source_entity = ANY(p_seen) AND r.target_entity = ANY(p_seen)
      AND (p_page IS NULL OR r.source_entity = ANY(p_page) OR r.target_entity = ANY(p_page))
    ORDER BY r.created_at, r.id
    LIMIT p_limit;
END
$$;
