-- Moving a tenant to another embedding model (`engram reembed --model M`), without a moment where
-- search has no vectors.
--
-- tenant_embedding_models: the model a tenant's vectors are searched and written with, when it is not
-- the service's configured model (no row: the configured one).
--
-- embedding_staging: the new model's vectors, made while the tenant still searches the old ones in
-- memories.embedding and chunks.embedding. One row per model and memory or chunk (deleting the row
-- deletes its staged vector); a run that stops resumes by embedding the rows that have none yet. The switch copies them into the rows, records the model
-- and empties the staging, in one transaction: readers see the old vectors or the new ones, never a
-- mix. The vector is untyped, like memories.embedding: any model's dimensions.

CREATE TABLE tenant_embedding_models (
    tenant_id    uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    model        text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    switched_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE embedding_staging (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    model       text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    memory_id   uuid REFERENCES memories (id) ON DELETE CASCADE,
    chunk_id    uuid REFERENCES chunks (id) ON DELETE CASCADE,
    embedding   vector NOT NULL,
    -- md5 of the text that was embedded: a row whose text changed since is embedded again.
    content_md5 text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(memory_id, chunk_id) = 1)
);
CREATE UNIQUE INDEX embedding_staging_memory_idx ON embedding_staging (tenant_id, model, memory_id)
    WHERE memory_id IS NOT NULL;
CREATE UNIQUE INDEX embedding_staging_chunk_idx ON embedding_staging (tenant_id, model, chunk_id)
    WHERE chunk_id IS NOT NULL;
-- The foreign keys' cascades look the staged rows up by memory or chunk alone.
CREATE INDEX embedding_staging_memory_fk_idx ON embedding_staging (memory_id) WHERE memory_id IS NOT NULL;
CREATE INDEX embedding_staging_chunk_fk_idx ON embedding_staging (chunk_id) WHERE chunk_id IS NOT NULL;

ALTER TABLE tenant_embedding_models ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_embedding_models FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_embedding_models
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE embedding_staging ENABLE ROW LEVEL SECURITY;
ALTER TABLE embedding_staging FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON embedding_staging
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_embedding_models, embedding_staging TO engram_app;
