-- Filtered vector search, continued from 0005 (whose memory_filter_candidates this replaces).
--
-- 1. memory_filter_candidates learns the time scope (as_of / include_history) and the user rule of
--    0002's party_scope policy, exactly as memory_text_candidates has them in 0005, so the vector leg
--    can use it for every time scope and other users' private rows take no candidate slots.
-- 2. Given the query vector, it runs the exact scan itself and returns ids with their cosine
--    distances, nearest first. Through the app role (under RLS) the filtered rows could only be reached
--    id by id through the primary key; here the (tenant_id, tags) GIN index reaches them in one bitmap
--    heap scan. Like 0005's version it returns no content and only the transaction tenant's rows: the
--    app still reads the rows themselves through RLS.
--
-- The result type changes (a distance column), which CREATE OR REPLACE cannot do, and an overload
-- with more defaulted arguments would make every 9-argument call ambiguous: the old function is
-- dropped and the new one created in this migration's transaction.
DROP FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb);

CREATE FUNCTION memory_filter_candidates(
    p_model text,
    p_limit integer,
    p_container text DEFAULT NULL,
    p_include_children boolean DEFAULT false,
    p_memory_types text[] DEFAULT NULL,
    p_tags text[] DEFAULT NULL,
    p_agent_id text DEFAULT NULL,
    p_conversation_id text DEFAULT NULL,
    p_metadata jsonb DEFAULT NULL,
    p_as_of timestamptz DEFAULT NULL,
    p_include_history boolean DEFAULT false,
    p_query vector DEFAULT NULL
)
RETURNS TABLE (id uuid, distance float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER
ROWS 100
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
    v_user text := engram_request_user();
    v_sql text;
BEGIN
    IF v_tenant IS NULL OR p_model IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    -- The uncast column does not match the HNSW index expression: with a query, an exact scan.
    v_sql := 'SELECT m.id, (m.embedding <=> $12)::float8 AS distance FROM memories m '
          || 'WHERE m.tenant_id = $2 AND m.embedding_model = $1';
    -- Time: as in memory_text_candidates (0005) and repo._time_sql.
    IF p_as_of IS NOT NULL THEN
        v_sql := v_sql || ' AND m.reverted_at IS NULL AND m.valid_from <= $10'
                       || ' AND (m.valid_to IS NULL OR m.valid_to > $10)'
                       || ' AND (m.expires_at IS NULL OR m.expires_at > $10)';
    ELSIF p_include_history THEN
        v_sql := v_sql || ' AND m.reverted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())';
    ELSE
        v_sql := v_sql || ' AND m.is_latest AND (m.expires_at IS NULL OR m.expires_at > now())';
    END IF;
    -- The user rule of party_scope (0002), which does not restrict engram_search.
    IF NOT engram_all_users() THEN
        v_sql := v_sql || ' AND (m.visibility = ''tenant'' OR m.user_id = $13)';
    END IF;
    -- 'a.b.*' is a.b and everything below it: a range on the "C"-collated name ('.' + 1 = '/').
    IF p_container IS NOT NULL AND p_include_children THEN
        v_sql := v_sql || ' AND (m.container = $3 OR (m.container > $3 || ''.'' AND m.container < $3 || ''/''))';
    ELSIF p_container IS NOT NULL THEN
        v_sql := v_sql || ' AND m.container = $3';
    END IF;
    IF p_memory_types IS NOT NULL THEN v_sql := v_sql || ' AND m.memory_type = ANY($5)'; END IF;
    IF p_tags IS NOT NULL THEN v_sql := v_sql || ' AND m.tags @> $6'; END IF;
    IF p_agent_id IS NOT NULL THEN v_sql := v_sql || ' AND m.agent_id = $7'; END IF;
    IF p_conversation_id IS NOT NULL THEN v_sql := v_sql || ' AND m.conversation_id = $8'; END IF;
    IF p_metadata IS NOT NULL THEN v_sql := v_sql || ' AND m.metadata @> $9'; END IF;
    IF p_query IS NOT NULL THEN v_sql := v_sql || ' ORDER BY distance, m.id'; END IF;
    v_sql := v_sql || ' LIMIT $11';
    RETURN QUERY EXECUTE v_sql
        USING p_model, v_tenant, p_container, p_include_children, p_memory_types, p_tags,
              p_agent_id, p_conversation_id, p_metadata, p_as_of, p_limit, p_query, v_user;
END
$$;
ALTER FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector)
    TO engram_app;

-- Search counts a tenant's (or container's) embedded rows, up to a cap, before choosing an exact scan
-- or HNSW. With (tenant_id, embedding_model) every counted row was read from the heap (is_latest,
-- expiry, container, and the visibility and user_id that RLS's party_scope policy reads): ~2K pages for
-- 5.6K rows at 10K memories per tenant. The count now takes versions of every time (an upper bound,
-- enough to choose a plan), and this index holds everything it reads, so it is an index-only scan.
-- It replaces (tenant_id, embedding_model), its prefix.
CREATE INDEX memories_tenant_model_container_idx ON memories (tenant_id, embedding_model, container)
    INCLUDE (visibility, user_id);
DROP INDEX memories_tenant_model_idx;
