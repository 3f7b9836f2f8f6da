-- Engram core schema: tenants, API keys, containers, memories and their relationships.
-- Every table that holds tenant data has row-level security enabled AND forced, so even the
-- table owner obeys it. The tenant comes from `set_config('engram.tenant_id', <uuid>, true)`,
-- set per transaction by the app; when it is unset the policies match no row at all.

CREATE EXTENSION IF NOT EXISTS vector;

-- The role the API and pipeline Lambdas connect as: owns nothing, cannot bypass RLS.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_app') THEN
        CREATE ROLE engram_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    -- The role that owns the key-lookup function: it may read keys across tenants, nothing else.
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_auth') THEN
        CREATE ROLE engram_auth NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    -- The role that owns the full-text candidate function (see memory_text_candidates below).
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_search') THEN
        CREATE ROLE engram_search NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    -- On RDS/Aurora the app authenticates with IAM tokens through RDS Proxy.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam') THEN
        GRANT rds_iam TO engram_app;
    END IF;
    -- A non-superuser migrator (the RDS master user) must be able to SET ROLE to both, to hand
    -- over function ownership and to run the app as engram_app over a shared DATABASE_URL.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT engram_app, engram_auth, engram_search TO %I', current_user);
    END IF;
END
$$;

CREATE TABLE tenants (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key_hash      bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    prefix        text NOT NULL,
    name          text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id);

CREATE TABLE containers (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$'),
    parent       text COLLATE "C",
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name),
    FOREIGN KEY (tenant_id, parent) REFERENCES containers (tenant_id, name)
);

CREATE TABLE memories (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    container        text COLLATE "C" NOT NULL,
    content          text NOT NULL CHECK (length(content) > 0),
    memory_type      text NOT NULL DEFAULT 'fact'
                     CHECK (memory_type IN ('fact', 'preference', 'episode', 'insight', 'task', 'procedure')),
    agent_id         text,
    conversation_id  text,
    tags             text[] NOT NULL DEFAULT '{}',
    metadata         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    confidence       real NOT NULL DEFAULT 1.0 CHECK (confidence >= 0 AND confidence <= 1),
    is_latest        boolean NOT NULL DEFAULT true,
    valid_from       timestamptz NOT NULL DEFAULT now(),
    valid_to         timestamptz,
    expires_at       timestamptz,
    -- Set when a supersession is undone: this version was wrong and is never current again.
    reverted_at      timestamptz,
    -- Untyped so that several embedding models can coexist; each model gets its own partial
    -- HNSW index over `embedding::vector(<dims>)` (created by the migration runner).
    embedding        vector,
    embedding_model  text,
    fts              tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    FOREIGN KEY (tenant_id, container) REFERENCES containers (tenant_id, name)
);
CREATE INDEX memories_tenant_created_idx ON memories (tenant_id, created_at DESC, id DESC);
CREATE INDEX memories_tenant_container_created_idx ON memories (tenant_id, container, created_at DESC, id DESC);
CREATE INDEX memories_tenant_type_idx ON memories (tenant_id, memory_type);
CREATE INDEX memories_tenant_agent_idx ON memories (tenant_id, agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX memories_tenant_conversation_idx ON memories (tenant_id, conversation_id)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX memories_tenant_model_idx ON memories (tenant_id, embedding_model);
CREATE INDEX memories_fts_idx ON memories USING gin (fts);
CREATE INDEX memories_tags_idx ON memories USING gin (tags);
CREATE INDEX memories_metadata_idx ON memories USING gin (metadata jsonb_path_ops);

CREATE TABLE memory_relationships (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source_id          uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    target_id          uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    relationship_type  text NOT NULL CHECK (relationship_type IN ('updates', 'extends', 'derives')),
    confidence         real NOT NULL DEFAULT 1.0 CHECK (confidence >= 0 AND confidence <= 1),
    metadata           jsonb NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, target_id, relationship_type),
    CHECK (source_id <> target_id)
);
CREATE INDEX memory_relationships_tenant_idx ON memory_relationships (tenant_id);
CREATE INDEX memory_relationships_target_idx ON memory_relationships (target_id);

-- Row-level security: enabled and forced on every tenant table.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
    USING (id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
CREATE POLICY key_lookup ON tenants FOR SELECT TO engram_auth USING (true);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
CREATE POLICY key_lookup ON api_keys FOR SELECT TO engram_auth USING (true);

ALTER TABLE containers ENABLE ROW LEVEL SECURITY;
ALTER TABLE containers FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON containers
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memories
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE memory_relationships ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_relationships FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_relationships
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

-- API keys are looked up by hash before any tenant is known. The app may only call this
-- function; it never reads api_keys itself.
CREATE FUNCTION authenticate_api_key(p_key_hash bytea)
RETURNS TABLE (tenant_id uuid, tenant_name text, key_id uuid, revoked boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT k.tenant_id, t.name, k.id, k.revoked_at IS NOT NULL
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_hash = p_key_hash
$$;
-- Admin look-up of a tenant by name (CLI and migration role only; the app cannot call it).
CREATE FUNCTION tenant_id_by_name(p_name text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$ SELECT id FROM tenants WHERE name = p_name $$;

GRANT SELECT ON tenants, api_keys TO engram_auth;
ALTER FUNCTION tenant_id_by_name(text) OWNER TO engram_auth;
REVOKE ALL ON FUNCTION tenant_id_by_name(text) FROM PUBLIC;
ALTER FUNCTION authenticate_api_key(bytea) OWNER TO engram_auth;
REVOKE ALL ON FUNCTION authenticate_api_key(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION authenticate_api_key(bytea) TO engram_app;

GRANT USAGE ON SCHEMA public TO engram_app;
GRANT SELECT ON tenants TO engram_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON containers, memories, memory_relationships TO engram_app;

-- Full-text candidates. Under RLS, PostgreSQL cannot use a GIN index for `fts @@ query`, because
-- `@@` is not leakproof: every row of the tenant would be scanned. This function runs as
-- engram_search, whose policy does not add a security barrier, so the GIN index is used; it reads
-- the tenant from the same transaction setting as the policies (none set: no rows) and returns
-- only ids and ranks. The caller then reads the rows themselves through RLS, so content never
-- leaves the tenant even if this function were wrong.
CREATE POLICY text_search ON memories FOR SELECT TO engram_search USING (true);
GRANT SELECT ON memories TO engram_search;

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
    p_include_history boolean DEFAULT false
)
RETURNS TABLE (id uuid, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_tenant uuid := NULLIF(current_setting('engram.tenant_id', true), '')::uuid;
    v_sql text;
BEGIN
    IF v_tenant IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;
    -- Only the filters asked for go into the statement, so the planner sees a specific query.
    v_sql := 'SELECT m.id, ts_rank_cd(m.fts, $1, 33)::real AS rank FROM memories m '
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
              p_agent_id, p_conversation_id, p_metadata, p_limit, p_as_of, p_include_history;
END
$$;
ALTER FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean)
    OWNER TO engram_search;
REVOKE ALL ON FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean)
    TO engram_app;
