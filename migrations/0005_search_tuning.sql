-- Keep embeddings in the row, next to the columns search filters on.
--
-- pgvector's `vector` type defaults to STORAGE EXTERNAL, and a memory row with a 384-d embedding
-- (1.5 KB), its text and its tsvector passes PostgreSQL's 2 KB TOAST threshold: the embedding was
-- moved out of line. Every exact-scan distance then cost a TOAST index lookup and fetch; `make bench`
-- measured 86 ms for an exact scan of 10K memories, ~20K buffer hits, most of them in the TOAST table.
--
-- STORAGE MAIN keeps the vector inline unless nothing else fits (very large vectors still move out
-- of line, so no insert is refused), and a toast_tuple_target near the page size keeps short rows
-- (vector, content and tsvector together) whole. Long contents are still compressed and toasted.
-- Applies to rows written from now on; existing rows keep their layout until they are rewritten.
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE memories SET (toast_tuple_target = 8160);

-- Full-text and tag searches always name the tenant. Alone, the GIN indexes on fts and tags hold
-- every tenant's rows, and the planner ANDed them with a bitmap of the whole tenant from a B-tree:
-- at 100K memories per tenant that bitmap (100K entries) was most of a text search's cost.
-- With btree_gin the tenant is a key of the same GIN index (trusted extension, on Aurora too).
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX memories_tenant_fts_idx ON memories USING gin (tenant_id, fts);
CREATE INDEX memories_tenant_tags_idx ON memories USING gin (tenant_id, tags);
DROP INDEX memories_fts_idx;
DROP INDEX memories_tags_idx;

-- Filtered vector search needs to know how many rows its filters leave, and then to reach them by
-- index. Under RLS it can do neither for tags or metadata: `@>` is not leakproof, so the planner will
-- not use their GIN indexes and reads every row of the tenant instead (as for `@@`, see
-- memory_text_candidates in 0001). This function, owned by the same NOLOGIN role engram_search, returns
-- the ids (nothing else) of the transaction tenant's live, latest memories embedded with `p_model`
-- that match every filter, at most `p_limit` of them. The app counts them to choose an exact scan
-- over a small filtered set, and reads the rows themselves through RLS.
CREATE FUNCTION memory_filter_candidates(
    p_model text,
    p_limit integer,
    p_container text DEFAULT NULL,
    p_include_children boolean DEFAULT false,
    p_memory_types text[] DEFAULT NULL,
    p_tags text[] DEFAULT NULL,
    p_agent_id text DEFAULT NULL,
    p_conversation_id text DEFAULT NULL,
    p_metadata jsonb DEFAULT NULL
)
RETURNS TABLE (id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER
ROWS 100
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
    v_sql text;
BEGIN
    IF v_tenant IS NULL OR p_model IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    v_sql := 'SELECT m.id FROM memories m WHERE m.tenant_id = $2 AND m.embedding_model = $1 AND m.is_latest '
          || 'AND (m.expires_at IS NULL OR m.expires_at > now())';
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
    v_sql := v_sql || ' LIMIT $10';
    RETURN QUERY EXECUTE v_sql
        USING p_model, v_tenant, p_container, p_include_children, p_memory_types, p_tags,
              p_agent_id, p_conversation_id, p_metadata, p_limit;
END
$$;
ALTER FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_filter_candidates(text, integer, text, boolean, text[], text[], text, text, jsonb)
    TO engram_app;

-- Text ranking: ts_rank instead of ts_rank_cd. Queries are OR-ed words, and cover density rates an
-- OR query's covers poorly: on SciFact's train claims nDCG@10 was 0.424 with ts_rank_cd and 0.617 with
-- ts_rank (both normalised by log document length; 32 maps the rank to 0-1). ts_rank is also cheaper.
-- Same signature, owner and grants as in 0001. It also applies the user rule of 0002's party_scope
-- policy, which does not restrict engram_search, so other users' private rows take no candidate slots.
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
    v_user text := engram_request_user();
    v_sql text;
BEGIN
    IF v_tenant IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    v_sql := 'SELECT m.id, ts_rank(m.fts, $1, 33)::real AS rank FROM memories m '
          || 'WHERE m.tenant_id = $2 AND m.fts @@ $1';
    -- Time: current memories by default; what was valid at $11; or everything not reverted.
    IF p_as_of IS NOT NULL THEN
        v_sql := v_sql || ' AND m.reverted_at IS NULL AND m.valid_from <= $11'
                       || ' AND (m.valid_to IS NULL OR m.valid_to > $11)'
                       || ' AND (m.expires_at IS NULL OR m.expires_at > $11)';
    ELSIF p_include_history THEN
        v_sql := v_sql || ' AND m.reverted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())';
    ELSE
        v_sql := v_sql || ' AND m.is_latest AND (m.expires_at IS NULL OR m.expires_at > now())';
    END IF;
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
    v_sql := v_sql || ' ORDER BY rank DESC, m.id LIMIT $10';
    RETURN QUERY EXECUTE v_sql
        USING p_query, v_tenant, p_container, p_include_children, p_memory_types, p_tags,
              p_agent_id, p_conversation_id, p_metadata, p_limit, p_as_of, p_include_history, v_user;
END
$$;
