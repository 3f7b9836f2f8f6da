-- Reads scoped to their owner, and sessions reachable by their id.
--
-- 1. `filters.user_id` (search, list): only the memories of that owner. The memory predicates gain it
--    in Python (engram.memories.predicates) and here, in memory_scope_sql, which both candidate
--    functions call; tests/integration/test_predicate_parity.py checks that both select the same rows.
--    memory_scope_sql binds it as $15 (its callers bind $1..$14 as in 0010). A new argument changes
--    each function's signature, which CREATE OR REPLACE cannot do, and an overload with one more
--    defaulted argument would make every existing call ambiguous: each old function is dropped and
--    the new one created in this migration's transaction, with the same owner and grants.
-- 2. Sessions: 0002's party_scope showed a conversation only to a request made for its exact
--    user/agent pair, so a session's own id answered 404 unless every call repeated ?user_id=, and an
--    agent could not list its sessions across users. Now a request sees a session (and its messages)
--    unless it is made for someone else: a request naming a user sees only that user's sessions, one
--    naming an agent only that agent's, one naming neither reaches any session of the tenant by id.
--    The tenant boundary is unchanged (tenant_isolation); within a tenant the party is what an honest
--    caller asserts, as before.

DROP FUNCTION memory_text_candidates(
    tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean);
DROP FUNCTION memory_filter_candidates(
    text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector);
DROP FUNCTION memory_scope_sql(text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean);

-- Parameters by number, bound alike by every caller:
--   $2 tenant, $3 container, $5 memory types, $6 tags, $7 agent, $8 conversation, $9 metadata,
--   $10 as_of, $12 the request's user, $15 the owner filter
-- ($1, $4, $11, $13 and $14 are the caller's own: the query or model, include_children,
-- include_history, the limit, the query vector).
CREATE FUNCTION memory_scope_sql(
    p_container text,
    p_include_children boolean,
    p_memory_types text[],
    p_tags text[],
    p_agent_id text,
    p_conversation_id text,
    p_metadata jsonb,
    p_as_of timestamptz,
    p_include_history boolean,
    p_user_id text
)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
DECLARE
    v_sql text;
BEGIN
    -- Only the filters asked for go into the statement, so the planner sees a specific query.
    -- Time: current memories by default; what was valid at $10; or everything not reverted.
    IF p_as_of IS NOT NULL THEN
        v_sql := ' AND m.reverted_at IS NULL AND m.valid_from <= $10'
              || ' AND (m.valid_to IS NULL OR m.valid_to > $10)'
              || ' AND (m.expires_at IS NULL OR m.expires_at > $10)';
    ELSIF p_include_history THEN
        v_sql := ' AND m.reverted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())';
    ELSE
        v_sql := ' AND m.is_latest AND (m.expires_at IS NULL OR m.expires_at > now())';
    END IF;
    -- The user rule of party_scope (0002).
    IF NOT engram_all_users() THEN
        v_sql := v_sql || ' AND (m.visibility = ''tenant'' OR m.user_id = $12)';
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
    IF p_user_id IS NOT NULL THEN v_sql := v_sql || ' AND m.user_id = $15'; END IF;
    RETURN v_sql;
END
$$;
ALTER FUNCTION memory_scope_sql(text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_scope_sql(text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    FROM PUBLIC;

CREATE FUNCTION memory_text_candidates(
    p_query tsquery,
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
RETURNS TABLE (id uuid, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
BEGIN
    IF v_tenant IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT m.id, ts_rank(m.fts, $1, 33)::real AS rank FROM memories m '
        || 'WHERE m.tenant_id = $2 AND m.fts @@ $1'
        || memory_scope_sql(p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
                            p_conversation_id, p_metadata, p_as_of, p_include_history, p_user_id)
        || ' ORDER BY rank DESC, m.id LIMIT $13'
        USING p_query, v_tenant, p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
              p_conversation_id, p_metadata, p_as_of, p_include_history, engram_request_user(), p_limit,
              NULL::text, p_user_id;
END
$$;
ALTER FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text)
    TO engram_app;

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
    p_query vector DEFAULT NULL,
    p_user_id text DEFAULT NULL
)
RETURNS TABLE (id uuid, distance float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER
ROWS 100
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
BEGIN
    IF v_tenant IS NULL OR p_model IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    -- The uncast column does not match the HNSW index expression: with a query, an exact scan.
    RETURN QUERY EXECUTE
        'SELECT m.id, (m.embedding <=> $14)::float8 AS distance FROM memories m '
        || 'WHERE m.tenant_id = $2 AND m.embedding_model = $1'
        || memory_scope_sql(p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
                            p_conversation_id, p_metadata, p_as_of, p_include_history, p_user_id)
        || CASE WHEN p_query IS NOT NULL THEN ' ORDER BY distance, m.id' ELSE '' END
        || ' LIMIT $13'
        USING p_model, v_tenant, p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
              p_conversation_id, p_metadata, p_as_of, p_include_history, engram_request_user(), p_limit,
              p_query, p_user_id;
END
$$;
ALTER FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector, text)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, vector, text)
    TO engram_app;

-- --- sessions: reachable by id, unless the request is made for someone else ---------------------

DROP POLICY party_scope ON sessions;
CREATE POLICY party_scope ON sessions AS RESTRICTIVE TO engram_app
    USING ((SELECT engram_all_users())
           OR (((SELECT engram_request_user()) IS NULL OR user_id = (SELECT engram_request_user()))
               AND ((SELECT engram_request_agent()) IS NULL OR agent_id = (SELECT engram_request_agent()))));

DROP POLICY party_scope ON session_messages;
CREATE POLICY party_scope ON session_messages AS RESTRICTIVE TO engram_app
    USING ((SELECT engram_all_users())
           OR (((SELECT engram_request_user()) IS NULL OR user_id = (SELECT engram_request_user()))
               AND ((SELECT engram_request_agent()) IS NULL OR agent_id = (SELECT engram_request_agent()))));
