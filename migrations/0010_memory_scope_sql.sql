-- One source for the predicates of the memory candidate functions.
--
-- memory_text_candidates (0005) and memory_filter_candidates (0009) each built the same WHERE clause:
-- the time scope (current / valid at as_of / history), the user rule of 0002's party_scope policy
-- (they run as engram_search, which that policy does not restrict), the container scope and the
-- search filters. memory_scope_sql builds it once; both functions are replaced by bodies that call
-- it, with the same signatures, results, owner and grants. The Python side builds the same
-- predicates in engram.memories.predicates; tests/integration/test_predicate_parity.py checks that
-- both select the same rows.
--
-- The clause refers to parameters by number, and every caller binds them the same way:
--   $2 tenant, $3 container, $5 memory types, $6 tags, $7 agent, $8 conversation, $9 metadata,
--   $10 as_of, $12 the request's user
-- ($1, $4, $11 and $13.. are the caller's own: the query or model, include_children, include_history,
-- the limit, the query vector).
CREATE FUNCTION memory_scope_sql(
    p_container text,
    p_include_children boolean,
    p_memory_types text[],
    p_tags text[],
    p_agent_id text,
    p_conversation_id text,
    p_metadata jsonb,
    p_as_of timestamptz,
    p_include_history boolean
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
    RETURN v_sql;
END
$$;
ALTER FUNCTION memory_scope_sql(text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_scope_sql(text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean)
    FROM PUBLIC;

CREATE OR REPLACE FUNCTION memory_text_candidates(
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
    p_include_history boolean DEFAULT false
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
                            p_conversation_id, p_metadata, p_as_of, p_include_history)
        || ' ORDER BY rank DESC, m.id LIMIT $13'
        USING p_query, v_tenant, p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
              p_conversation_id, p_metadata, p_as_of, p_include_history, engram_request_user(), p_limit;
END
$$;

CREATE OR REPLACE FUNCTION memory_filter_candidates(
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
BEGIN
    IF v_tenant IS NULL OR p_model IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    -- The uncast column does not match the HNSW index expression: with a query, an exact scan.
    RETURN QUERY EXECUTE
        'SELECT m.id, (m.embedding <=> $14)::float8 AS distance FROM memories m '
        || 'WHERE m.tenant_id = $2 AND m.embedding_model = $1'
        || memory_scope_sql(p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
                            p_conversation_id, p_metadata, p_as_of, p_include_history)
        || CASE WHEN p_query IS NOT NULL THEN ' ORDER BY distance, m.id' ELSE '' END
        || ' LIMIT $13'
        USING p_model, v_tenant, p_container, p_include_children, p_memory_types, p_tags, p_agent_id,
              p_conversation_id, p_metadata, p_as_of, p_include_history, engram_request_user(), p_limit,
              p_query;
END
$$;
