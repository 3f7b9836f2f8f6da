-- Knowledge graph: entities, the memories that mention them (their observations), and typed,
-- time-bounded relations between them (the model of the MCP memory server).
--
-- Like every tenant table, each has tenant_id with row-level security enabled AND forced, the same
-- policy as 0001, and explicit grants to engram_app. References between graph rows are composite
-- (tenant_id, id), so a row can only point at an entity of its own tenant, whatever the app sends.

CREATE TABLE entities (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- engram.graph.names.normalize_name(name): NFKC, casefolded, punctuation and honorifics removed.
    normalized_name  text COLLATE "C" NOT NULL CHECK (length(normalized_name) BETWEEN 1 AND 200),
    entity_type      text COLLATE "C" NOT NULL CHECK (entity_type ~ '^[a-z][a-z0-9_]{0,39}$'),
    aliases          text[] NOT NULL DEFAULT '{}' CHECK (cardinality(aliases) <= 50),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- One person is one entity: deduplication is enforced here, not only in application code, so
    -- two ingestions running at once cannot both create "alice smith".
    UNIQUE (tenant_id, normalized_name, entity_type),
    UNIQUE (tenant_id, id)
);

-- Every key an entity is found by: its normalized name and each normalized alias. A key names at
-- most one entity of a type, so looking up "alice" is one index probe, never a scan of aliases.
CREATE TABLE entity_keys (
    tenant_id    uuid NOT NULL,
    key          text COLLATE "C" NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    entity_type  text COLLATE "C" NOT NULL,
    entity_id    uuid NOT NULL,
    PRIMARY KEY (tenant_id, key, entity_type),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES entities (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_keys_entity_idx ON entity_keys (entity_id);

-- An entity's observations are the memories that mention it.
CREATE TABLE entity_mentions (
    tenant_id   uuid NOT NULL,
    entity_id   uuid NOT NULL,
    memory_id   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    is_subject  boolean NOT NULL DEFAULT false,  -- the memory is about this entity
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- tenant_id leads every unique key, so a uniqueness check never answers about another tenant's rows.
    PRIMARY KEY (tenant_id, entity_id, memory_id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES entities (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_mentions_entity_recent_idx ON entity_mentions (entity_id, created_at DESC, memory_id DESC);
CREATE INDEX entity_mentions_memory_idx ON entity_mentions (memory_id);

-- A relation extracted from a memory dies with it (ON DELETE CASCADE), so re-extracting a document
-- never duplicates relations; while the memory lives, the relation's validity ends with the memory's
-- (see engram.graph.repo). Relations without a source memory are manual (bring-your-own triples).
CREATE TABLE entity_relations (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source_entity     uuid NOT NULL,
    target_entity     uuid NOT NULL,
    relation_type     text COLLATE "C" NOT NULL CHECK (relation_type ~ '^[a-z][a-z0-9_]{0,39}$'),
    valid_from        timestamptz NOT NULL DEFAULT now(),
    valid_to          timestamptz,
    confidence        real NOT NULL DEFAULT 1.0 CHECK (confidence >= 0 AND confidence <= 1),
    source_memory_id  uuid REFERENCES memories (id) ON DELETE CASCADE,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (source_entity <> target_entity),
    CHECK (valid_to IS NULL OR valid_to > valid_from),
    FOREIGN KEY (tenant_id, source_entity) REFERENCES entities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, target_entity) REFERENCES entities (tenant_id, id) ON DELETE CASCADE,
    UNIQUE NULLS NOT DISTINCT (tenant_id, source_entity, relation_type, target_entity, source_memory_id)
);
CREATE INDEX entity_relations_target_idx ON entity_relations (tenant_id, target_entity);
CREATE INDEX entity_relations_memory_idx ON entity_relations (source_memory_id)
    WHERE source_memory_id IS NOT NULL;

ALTER TABLE entities ENABLE ROW LEVEL SECURITY;
ALTER TABLE entities FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON entities
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE entity_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON entity_keys
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE entity_mentions ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_mentions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON entity_mentions
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE entity_relations ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_relations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON entity_relations
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON entities, entity_keys, entity_mentions, entity_relations TO engram_app;
