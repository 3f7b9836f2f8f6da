-- A relation extracted from a memory that has expired is gone with it, history included.
--
-- 0026's relation_counts let every relation through with p_include_history: one whose source memory
-- had expired still showed in GET /v1/graph?include_history=true and in an entity's relations
-- (GET /v1/entities/{id} reads them all, of any time), while the memory itself was a 404 and gone
-- from every search, include_history too. Now that branch asks what engram.memories.predicates.live
-- asks of the memory (no expires_at, or one still to come); current relations already ended at the
-- expiry (relation_end), and `as_of` still reads a relation as it was then, as a search's `as_of`
-- reads the memory (valid_from, valid_to and expires_at against that time).
--
-- Same signature: graph_walk and graph_edges_among (0026, 0028) call it by name and pick it up.

CREATE OR REPLACE FUNCTION relation_counts(
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
               WHEN p_include_history THEN
                   p_memory_expires_at IS NULL OR p_memory_expires_at > now()
               ELSE (relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) IS NULL
                     OR relation_end(p_valid_to, p_memory_valid_to, p_memory_expires_at) > now())
                    AND coalesce(p_memory_is_latest, true)
           END
$$;
