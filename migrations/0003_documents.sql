-- Documents and their chunks: what the ingestion pipeline reads, cuts up and indexes.
-- Same rules as 0001: tenant_id on every row, RLS enabled AND forced with the one policy, explicit
-- grants to engram_app, and full text through a SECURITY DEFINER function that returns ids only.

DO $$
BEGIN
    -- Owns `stale_documents`: may read the status of every tenant's documents, nothing else.
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_sweep') THEN
        CREATE ROLE engram_sweep NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT engram_sweep TO %I', current_user);
    END IF;
END
$$;

CREATE TABLE documents (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    container     text COLLATE "C" NOT NULL,
    -- Detected when not given; NULL only until the extract step has looked at the bytes.
    content_type  text,
    -- Where the document came from: text sent inline, a URL, a file sent to the API, an S3 object,
    -- or a file dropped in the local drop folder. `source` is the URL, the key or the file name.
    source_kind   text NOT NULL CHECK (source_kind IN ('inline', 'url', 'file', 's3', 'drop')),
    source        text NOT NULL,
    filename      text,
    title         text,
    -- Where the raw bytes are (an S3 key, or a key in the local blob store) and the S3 version.
    blob_key      text,
    blob_version  text,
    metadata      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    tags          text[] NOT NULL DEFAULT '{}',
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'extracting', 'chunking', 'embedding', 'indexing', 'done', 'failed')),
    error_code    text,
    error         text,
    -- SHA-256 of the raw bytes (hex); NULL for a URL until it has been fetched.
    checksum      text CHECK (checksum ~ '^[0-9a-f]{64}$'),
    size_bytes    bigint CHECK (size_bytes >= 0),
    custom_id     text,
    -- Bumped each time the document is queued again (an upsert, a retry): a step working on an older
    -- revision finds it superseded and stops without writing.
    revision      integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    -- A failed document always says why; no other status carries an error.
    CHECK ((status = 'failed') = (error IS NOT NULL)),
    FOREIGN KEY (tenant_id, container) REFERENCES containers (tenant_id, name)
);
CREATE UNIQUE INDEX documents_custom_id_key ON documents (tenant_id, custom_id) WHERE custom_id IS NOT NULL;
CREATE INDEX documents_checksum_idx ON documents (tenant_id, container, checksum) WHERE checksum IS NOT NULL;
CREATE INDEX documents_tenant_created_idx ON documents (tenant_id, created_at DESC, id DESC);
CREATE INDEX documents_tenant_status_idx ON documents (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX documents_unfinished_idx ON documents (updated_at) WHERE status NOT IN ('done', 'failed');

CREATE TABLE chunks (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    document_id      uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    -- The document's container and tags, copied so that search filters need no join.
    container        text COLLATE "C" NOT NULL,
    tags             text[] NOT NULL DEFAULT '{}',
    ordinal          integer NOT NULL CHECK (ordinal >= 0),
    content          text NOT NULL CHECK (length(content) > 0),
    token_count      integer NOT NULL CHECK (token_count > 0),
    -- Where in the document: pages, heading path, code symbol, speakers, record range.
    metadata         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    embedding        vector,
    embedding_model  text,
    fts              tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (document_id, ordinal),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX chunks_tenant_container_idx ON chunks (tenant_id, container);
CREATE INDEX chunks_tenant_model_idx ON chunks (tenant_id, embedding_model);
CREATE INDEX chunks_fts_idx ON chunks USING gin (fts);
CREATE INDEX chunks_tags_idx ON chunks USING gin (tags);

-- Which documents (and which chunk of each) a memory was extracted from. A memory found again in
-- another document gains a second source instead of a duplicate; deleting a document removes the
-- memories that have no other source.
CREATE TABLE memory_sources (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    memory_id    uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    document_id  uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    chunk_id     uuid REFERENCES chunks (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, document_id)
);
CREATE INDEX memory_sources_document_idx ON memory_sources (document_id);
CREATE INDEX memory_sources_tenant_idx ON memory_sources (tenant_id);

ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON documents
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON chunks
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE memory_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_sources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_sources
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON documents, chunks, memory_sources TO engram_app;

-- Full-text candidates over chunks: the same reasoning as memory_text_candidates in 0001. Under RLS
-- the GIN index cannot serve the non-leakproof `@@`; this function (owned by engram_search, whose
-- policy adds no security barrier) can, scopes itself to the transaction's tenant, and returns only
-- ids and ranks. The caller reads the chunks themselves through RLS.
CREATE POLICY text_search ON chunks FOR SELECT TO engram_search USING (true);
GRANT SELECT ON chunks TO engram_search;

CREATE FUNCTION chunk_text_candidates(
    p_query tsquery,
    p_limit integer,
    p_container text DEFAULT NULL,
    p_include_children boolean DEFAULT false,
    p_tags text[] DEFAULT NULL,
    p_metadata jsonb DEFAULT NULL
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
    v_sql := 'SELECT c.id, ts_rank_cd(c.fts, $1, 33)::real AS rank FROM chunks c '
          || 'WHERE c.tenant_id = $2 AND c.fts @@ $1';
    IF p_container IS NOT NULL AND p_include_children THEN
        v_sql := v_sql || ' AND (c.container = $3 OR (c.container > $3 || ''.'' AND c.container < $3 || ''/''))';
    ELSIF p_container IS NOT NULL THEN
        v_sql := v_sql || ' AND c.container = $3';
    END IF;
    IF p_tags IS NOT NULL THEN v_sql := v_sql || ' AND c.tags @> $5'; END IF;
    IF p_metadata IS NOT NULL THEN v_sql := v_sql || ' AND c.metadata @> $6'; END IF;
    v_sql := v_sql || ' ORDER BY rank DESC, c.id LIMIT $7';
    RETURN QUERY EXECUTE v_sql
        USING p_query, v_tenant, p_container, p_include_children, p_tags, p_metadata, p_limit;
END
$$;
ALTER FUNCTION chunk_text_candidates(tsquery, integer, text, boolean, text[], jsonb) OWNER TO engram_search;
REVOKE ALL ON FUNCTION chunk_text_candidates(tsquery, integer, text, boolean, text[], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chunk_text_candidates(tsquery, integer, text, boolean, text[], jsonb) TO engram_app;

-- The sweeper's view across tenants: documents left in a non-final state for too long (an execution
-- that never started, or died without reaching mark-failed). Only ids leave this function; the
-- sweeper then marks each document failed inside that document's own tenant transaction.
CREATE POLICY sweep ON documents FOR SELECT TO engram_sweep USING (true);
GRANT SELECT ON documents TO engram_sweep;

CREATE FUNCTION stale_documents(p_older_than interval, p_limit integer)
RETURNS TABLE (tenant_id uuid, id uuid, revision integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT d.tenant_id, d.id, d.revision FROM documents d
    WHERE d.status NOT IN ('done', 'failed') AND d.updated_at < now() - p_older_than
    ORDER BY d.updated_at
    LIMIT p_limit
$$;
ALTER FUNCTION stale_documents(interval, integer) OWNER TO engram_sweep;
REVOKE ALL ON FUNCTION stale_documents(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION stale_documents(interval, integer) TO engram_app;
