-- The ids of every memory a search's scope takes (0012's memory_scope_sql: time, party, container,
-- types, tags, agent, conversation, metadata, owner), of any embedding model or none: the text leg of
-- a search whose tag or metadata filter leaves few rows scores those of them its terms reach
-- (engram.memories.search.repo), rather than checking the best-scoring rows of the whole container
-- one by one until enough pass (at 100K memories a 1 % tag filter checked ~3,900 rows, 50 ms).
-- Like memory_filter_candidates it runs as engram_search, so that the tags' and metadata's GIN
-- indexes serve the filters (RLS keeps them from the app: @> is not leakproof), for the tenant of the
-- transaction only (engram.tenant_id) and under the request's user rule. At most p_limit ids.
CREATE FUNCTION memory_scope_ids(
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
    p_user_id text DEFAULT NULL
)
RETURNS TABLE (id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER
ROWS 1000
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
BEGIN
    IF v_tenant IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    -- memory_scope_sql's parameters by number ($1, $4, $11 and $14 are not read here).
    RETURN QUERY EXECUTE
        'SELECT m.id FROM memories m WHERE m.tenant_id = $2'
        || memory_scope_sql(p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
                            p_conversation_id, p_metadata, p_as_of, p_include_history, p_user_id)
        || ' LIMIT $13'
        USING NULL::text, v_tenant, p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
              p_conversation_id, p_metadata, p_as_of, p_include_history, engram_request_user(), p_limit,
              NULL::vector, p_user_id;
END
$$;
ALTER FUNCTION memory_scope_ids(integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_scope_ids(integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_scope_ids(integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    TO engram_app;
