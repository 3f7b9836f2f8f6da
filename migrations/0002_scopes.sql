-- Engram scopes: who within a tenant may see a row (users and agents), conversations (episodic
-- memory), working memory, procedural memory, and what cleanup needs.
--
-- Tenant isolation stays exactly as in 0001: every new table has tenant_id and RLS enabled AND
-- forced with the same tenant policy. On top of it, restrictive policies for the app role narrow
-- what one request sees to its party: the user and agent it is made for, set per transaction with
-- `set_config('engram.user_id' / 'engram.agent_id', ..., true)`. Maintenance work that must see
-- every user's rows of the one tenant (export, cleanup, deleting a container) sets
-- `engram.all_users = 'on'`. With nothing set, a request sees only rows shared across the tenant.
-- The API key is per tenant, so the party is what the caller asserts: it keeps users' rows apart
-- for an honest caller on every query path; the tenant boundary is still the key.

CREATE FUNCTION engram_request_user() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT NULLIF(current_setting('engram.user_id', true), '') $$;

CREATE FUNCTION engram_request_agent() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT NULLIF(current_setting('engram.agent_id', true), '') $$;

CREATE FUNCTION engram_all_users() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(current_setting('engram.all_users', true), '') = 'on' $$;

-- --- memories: an owner and a visibility ------------------------------------------------------

ALTER TABLE memories
    ADD COLUMN user_id text,
    ADD COLUMN visibility text NOT NULL DEFAULT 'tenant' CHECK (visibility IN ('private', 'tenant')),
    ADD CONSTRAINT memories_private_has_user CHECK (visibility = 'tenant' OR user_id IS NOT NULL);
CREATE INDEX memories_tenant_user_idx ON memories (tenant_id, user_id, created_at DESC, id DESC)
    WHERE user_id IS NOT NULL;
-- Cleanup: expired rows, and superseded versions by the time they stopped being current.
CREATE INDEX memories_expires_idx ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_superseded_idx ON memories (valid_to) WHERE NOT is_latest;

-- A private memory is seen only by requests made for its user. The settings are read in scalar
-- subqueries, which PostgreSQL evaluates once per statement (an InitPlan), not once per row.
CREATE POLICY party_scope ON memories AS RESTRICTIVE TO engram_app
    USING (visibility = 'tenant' OR user_id = (SELECT engram_request_user()) OR (SELECT engram_all_users()));

-- The text leg of search runs as engram_search (see 0001), which this policy does not restrict:
-- memory_text_candidates learns the same rule in 0005, where its current body is defined once.

-- --- conversations: episodic memory -----------------------------------------------------------

CREATE TABLE sessions (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id          text,
    agent_id         text,
    -- Where memories extracted from this conversation are stored.
    container        text COLLATE "C" NOT NULL DEFAULT 'default'
                     CHECK (container ~ '^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$'),
    metadata         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    message_count    integer NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    last_message_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (user_id IS NOT NULL OR agent_id IS NOT NULL),
    UNIQUE (tenant_id, id)
);
CREATE INDEX sessions_tenant_user_idx ON sessions (tenant_id, user_id, created_at DESC, id DESC);
CREATE INDEX sessions_tenant_agent_idx ON sessions (tenant_id, agent_id, created_at DESC, id DESC);

CREATE TABLE session_messages (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_id       uuid NOT NULL,
    seq              integer NOT NULL CHECK (seq > 0),
    -- The session's party, copied so that the policy needs no join.
    user_id          text,
    agent_id         text,
    role             text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content          text NOT NULL CHECK (length(content) > 0),
    metadata         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    embedding        vector,
    embedding_model  text,
    fts              tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    -- Memory extraction: 'queued' until the extractor has processed the message.
    extraction       text NOT NULL DEFAULT 'none' CHECK (extraction IN ('none', 'queued', 'done')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    UNIQUE (session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX session_messages_party_idx ON session_messages (tenant_id, user_id, agent_id);
CREATE INDEX session_messages_queued_idx ON session_messages (tenant_id, session_id, seq)
    WHERE extraction = 'queued';


-- --- working memory: plan- or agent-scoped state with versions --------------------------------

CREATE TABLE working_memory (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    scope       text COLLATE "C" NOT NULL CHECK (scope ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    key         text COLLATE "C" NOT NULL CHECK (key ~ '^[A-Za-z0-9_.:-]+$' AND length(key) <= 256),
    value       jsonb NOT NULL,
    version     bigint NOT NULL DEFAULT 1 CHECK (version > 0),
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, scope, key)
);
CREATE INDEX working_memory_expires_idx ON working_memory (expires_at) WHERE expires_at IS NOT NULL;

-- --- procedural memory: rules and few-shot examples with a trigger ----------------------------

CREATE TABLE procedures (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind             text NOT NULL DEFAULT 'rule' CHECK (kind IN ('rule', 'example')),
    trigger          text NOT NULL CHECK (length(trigger) > 0),
    content          text NOT NULL CHECK (length(content) > 0),
    agent_id         text,
    visibility       text NOT NULL DEFAULT 'tenant' CHECK (visibility IN ('private', 'tenant')),
    tags             text[] NOT NULL DEFAULT '{}',
    metadata         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    -- The embedding of the trigger: a situation is matched against it.
    embedding        vector,
    embedding_model  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    CHECK (visibility = 'tenant' OR agent_id IS NOT NULL)
);
CREATE INDEX procedures_tenant_created_idx ON procedures (tenant_id, created_at DESC, id DESC);
CREATE INDEX procedures_tenant_agent_idx ON procedures (tenant_id, agent_id) WHERE agent_id IS NOT NULL;

-- --- row-level security: tenant first, then the party -----------------------------------------

ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sessions
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
-- A conversation belongs to its user/agent pair. A request sees it when it is made for the same
-- user and, if it names an agent, the same agent; a conversation without a user belongs to its
-- agent alone.
CREATE POLICY party_scope ON sessions AS RESTRICTIVE TO engram_app
    USING ((SELECT engram_all_users())
           OR (user_id IS NOT DISTINCT FROM (SELECT engram_request_user())
               AND (agent_id IS NOT DISTINCT FROM (SELECT engram_request_agent())
                    OR (user_id IS NOT NULL AND (SELECT engram_request_agent()) IS NULL))));

ALTER TABLE session_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE session_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON session_messages
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
CREATE POLICY party_scope ON session_messages AS RESTRICTIVE TO engram_app
    USING ((SELECT engram_all_users())
           OR (user_id IS NOT DISTINCT FROM (SELECT engram_request_user())
               AND (agent_id IS NOT DISTINCT FROM (SELECT engram_request_agent())
                    OR (user_id IS NOT NULL AND (SELECT engram_request_agent()) IS NULL))));

ALTER TABLE working_memory ENABLE ROW LEVEL SECURITY;
ALTER TABLE working_memory FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON working_memory
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE procedures ENABLE ROW LEVEL SECURITY;
ALTER TABLE procedures FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON procedures
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
-- A private procedure is seen only by requests made for its agent.
CREATE POLICY party_scope ON procedures AS RESTRICTIVE TO engram_app
    USING (visibility = 'tenant' OR agent_id = (SELECT engram_request_agent()) OR (SELECT engram_all_users()));

GRANT SELECT, INSERT, UPDATE, DELETE ON sessions, session_messages, working_memory, procedures TO engram_app;

-- --- cleanup across tenants -------------------------------------------------------------------

-- `engram cleanup` (and its scheduled Lambda) runs as the app role and visits one tenant at a
-- time through RLS; it learns which tenants exist from this function, which returns ids only.
CREATE FUNCTION engram_tenant_ids()
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$ SELECT id FROM tenants ORDER BY id $$;
ALTER FUNCTION engram_tenant_ids() OWNER TO engram_auth;
REVOKE ALL ON FUNCTION engram_tenant_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION engram_tenant_ids() TO engram_app;
