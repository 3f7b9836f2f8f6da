-- Conversation summaries and change events.
--
-- session_summaries:  one rolling summary per session (engram.sessions.summaries): the LLM's when one is
--                     configured, else an extractive one, labelled by `method`. `through_seq` is the last
--                     message it covers. The session's party is copied, as on session_messages, for the
--                     same restrictive policy (and so that erasing a user finds the rows by user_id).
-- summary_queue:      sessions whose summary is behind: a trigger on session_messages adds the session in
--                     the append's own transaction; the relay (engram local's background loop, or the
--                     relay function on a schedule in AWS) refreshes the summary and removes the entry.
-- change_events:      the outbox. Triggers on memories, memory_relationships, documents and
--                     session_summaries record each change in the writing transaction itself, so an event
--                     exists exactly when its write committed: a rolled-back write leaves none. The relay
--                     delivers them after commit (webhooks locally, EventBridge in AWS), then deletes them.
--                     Events carry ids and times only, never content. No foreign key to tenants: a
--                     tenant's deletion cascades to its memories, whose delete triggers still record.
-- webhooks:           a tenant's subscriptions (url, events, the HMAC signing secret).
-- webhook_deliveries: one per (webhook, event): the exact body signed, attempts, the last error, when to
--                     try again. Delivered rows are pruned after a day, failed ones after a week.
--
-- A transaction that sets engram.no_change_events = 'on' (import, the bench's bulk load) records no
-- event and queues no summary: restoring rows is not a change the tenant made.
--
-- Tenant isolation as on every tenant table: RLS enabled and forced with the tenant policy. The triggers
-- run as engram_relay (SECURITY DEFINER), which may only insert into the outbox and the queue, for the
-- tenant of the row being written (RLS already let that write through). The relay finds work across
-- tenants through two functions that return tenant ids only; it then works inside each tenant's own
-- transaction, under RLS.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_relay') THEN
        CREATE ROLE engram_relay NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT engram_relay TO %I', current_user);
    END IF;
END
$$;

-- --- conversation summaries ---------------------------------------------------------------------

CREATE TABLE session_summaries (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_id     uuid NOT NULL,
    user_id        text,
    agent_id       text,
    content        text NOT NULL CHECK (length(content) > 0),
    method         text NOT NULL CHECK (method IN ('llm', 'extractive')),
    model          text,
    through_seq    integer NOT NULL CHECK (through_seq > 0),
    input_tokens   integer NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
    output_tokens  integer NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE,
    CHECK ((method = 'llm') = (model IS NOT NULL))
);
CREATE INDEX session_summaries_user_idx ON session_summaries (tenant_id, user_id) WHERE user_id IS NOT NULL;

CREATE TABLE summary_queue (
    tenant_id   uuid NOT NULL,
    session_id  uuid NOT NULL,
    queued_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);

-- --- change events and webhooks -----------------------------------------------------------------

CREATE TABLE change_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    event_id     uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    event_type   text NOT NULL CHECK (event_type IN (
                     'memory.created', 'memory.updated', 'memory.superseded', 'memory.deleted',
                     'document.done', 'document.failed', 'session.summarized')),
    -- The ids the event is about: {"memory_id": ...}, {"memory_id", "superseded_by"}, {"document_id"},
    -- {"session_id", "through_seq"}.
    subject      jsonb NOT NULL CHECK (jsonb_typeof(subject) = 'object'),
    occurred_at  timestamptz NOT NULL DEFAULT statement_timestamp()
);
CREATE INDEX change_events_tenant_idx ON change_events (tenant_id, id);

CREATE TABLE webhooks (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url          text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
    events       text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 7),
    description  text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    secret       text NOT NULL CHECK (length(secret) >= 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id)
);
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        uuid NOT NULL,
    webhook_id       uuid NOT NULL,
    event_id         uuid NOT NULL,
    event_type       text NOT NULL,
    body             text NOT NULL,  -- exactly the bytes signed and sent
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    UNIQUE (webhook_id, event_id),
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (tenant_id, next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

-- --- row-level security ---------------------------------------------------------------------------

ALTER TABLE session_summaries ENABLE ROW LEVEL SECURITY;
ALTER TABLE session_summaries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON session_summaries
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
CREATE POLICY party_scope ON session_summaries AS RESTRICTIVE TO engram_app
    USING ((SELECT engram_all_users())
           OR (user_id IS NOT DISTINCT FROM (SELECT engram_request_user())
               AND (agent_id IS NOT DISTINCT FROM (SELECT engram_request_agent())
                    OR (user_id IS NOT NULL AND (SELECT engram_request_agent()) IS NULL))));

ALTER TABLE summary_queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE summary_queue FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON summary_queue
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE change_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE change_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON change_events
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhooks
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhook_deliveries
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE
    ON session_summaries, summary_queue, change_events, webhooks, webhook_deliveries TO engram_app;

-- The triggers' role: it inserts outbox and queue rows for the tenant of the row being written, and
-- reads the two tables across tenants only inside the relay's look-up functions below.
CREATE POLICY record ON change_events FOR INSERT TO engram_relay WITH CHECK (true);
CREATE POLICY pending ON change_events FOR SELECT TO engram_relay USING (true);
CREATE POLICY record ON summary_queue FOR INSERT TO engram_relay WITH CHECK (true);
CREATE POLICY pending ON summary_queue FOR SELECT TO engram_relay USING (true);
CREATE POLICY due ON webhook_deliveries FOR SELECT TO engram_relay USING (true);
-- ON CONFLICT DO NOTHING needs to see the conflicting row: the policy above lets it.
GRANT SELECT, INSERT ON change_events, summary_queue TO engram_relay;
GRANT SELECT ON webhook_deliveries TO engram_relay;
GRANT USAGE ON SCHEMA public TO engram_relay;

-- --- the triggers -----------------------------------------------------------------------------------

CREATE FUNCTION engram_change_events_off() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(current_setting('engram.no_change_events', true), '') = 'on' $$;

CREATE FUNCTION record_memory_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF engram_change_events_off() THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (NEW.tenant_id, 'memory.created', jsonb_build_object('memory_id', NEW.id));
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (OLD.tenant_id, 'memory.deleted', jsonb_build_object('memory_id', OLD.id));
    -- An update a reader can see: what it says, where it is, whom it belongs to, when it ends, or a
    -- version made current again (revert). Retiring a version is memory.superseded (below).
    ELSIF (NEW.content, NEW.memory_type, NEW.tags, NEW.metadata, NEW.container, NEW.visibility,
           NEW.user_id, NEW.confidence, NEW.expires_at, NEW.reverted_at, NEW.embedding_model)
          IS DISTINCT FROM
          (OLD.content, OLD.memory_type, OLD.tags, OLD.metadata, OLD.container, OLD.visibility,
           OLD.user_id, OLD.confidence, OLD.expires_at, OLD.reverted_at, OLD.embedding_model)
          OR (NEW.is_latest AND NOT OLD.is_latest) THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (NEW.tenant_id, 'memory.updated', jsonb_build_object('memory_id', NEW.id));
    END IF;
    RETURN NULL;
END
$$;

-- A supersession always records an `updates` relationship (newer -> older), in the same transaction
-- that retires the older version: the one place that knows both ids.
CREATE FUNCTION record_supersession() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.relationship_type = 'updates' AND NOT engram_change_events_off() THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (NEW.tenant_id, 'memory.superseded',
                jsonb_build_object('memory_id', NEW.target_id, 'superseded_by', NEW.source_id));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION record_document_outcome() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.status IN ('done', 'failed') AND NEW.status IS DISTINCT FROM OLD.status
       AND NOT engram_change_events_off() THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (NEW.tenant_id, 'document.' || NEW.status, jsonb_build_object('document_id', NEW.id));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION record_summary() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT engram_change_events_off() THEN
        INSERT INTO change_events (tenant_id, event_type, subject)
        VALUES (NEW.tenant_id, 'session.summarized',
                jsonb_build_object('session_id', NEW.session_id, 'through_seq', NEW.through_seq));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION queue_summaries() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT engram_change_events_off() THEN
        INSERT INTO summary_queue (tenant_id, session_id)
        SELECT DISTINCT n.tenant_id, n.session_id FROM appended n
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

ALTER FUNCTION record_memory_change() OWNER TO engram_relay;
ALTER FUNCTION record_supersession() OWNER TO engram_relay;
ALTER FUNCTION record_document_outcome() OWNER TO engram_relay;
ALTER FUNCTION record_summary() OWNER TO engram_relay;
ALTER FUNCTION queue_summaries() OWNER TO engram_relay;
REVOKE ALL ON FUNCTION record_memory_change(), record_supersession(), record_document_outcome(),
    record_summary(), queue_summaries() FROM PUBLIC;

CREATE TRIGGER memories_change_events AFTER INSERT OR UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION record_memory_change();
CREATE TRIGGER memory_relationships_supersession AFTER INSERT ON memory_relationships
    FOR EACH ROW EXECUTE FUNCTION record_supersession();
CREATE TRIGGER documents_outcome AFTER UPDATE OF status ON documents
    FOR EACH ROW EXECUTE FUNCTION record_document_outcome();
CREATE TRIGGER session_summaries_change_events AFTER INSERT OR UPDATE OF content, through_seq
    ON session_summaries FOR EACH ROW EXECUTE FUNCTION record_summary();
CREATE TRIGGER session_messages_queue_summary AFTER INSERT ON session_messages
    REFERENCING NEW TABLE AS appended FOR EACH STATEMENT EXECUTE FUNCTION queue_summaries();

-- --- the relay's look-ups across tenants: tenant ids only ---------------------------------------------

CREATE FUNCTION tenants_with_change_events(p_limit integer)
RETURNS TABLE (tenant_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT e.tenant_id FROM change_events e GROUP BY e.tenant_id ORDER BY min(e.id) LIMIT p_limit
$$;

CREATE FUNCTION tenants_with_queued_summaries(p_limit integer)
RETURNS TABLE (tenant_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT q.tenant_id FROM summary_queue q GROUP BY q.tenant_id ORDER BY min(q.queued_at) LIMIT p_limit
$$;

CREATE FUNCTION tenants_with_due_deliveries(p_limit integer)
RETURNS TABLE (tenant_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT d.tenant_id FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= now()
    GROUP BY d.tenant_id ORDER BY min(d.next_attempt_at) LIMIT p_limit
$$;

ALTER FUNCTION tenants_with_change_events(integer) OWNER TO engram_relay;
ALTER FUNCTION tenants_with_queued_summaries(integer) OWNER TO engram_relay;
ALTER FUNCTION tenants_with_due_deliveries(integer) OWNER TO engram_relay;
REVOKE ALL ON FUNCTION tenants_with_change_events(integer), tenants_with_queued_summaries(integer),
    tenants_with_due_deliveries(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenants_with_change_events(integer), tenants_with_queued_summaries(integer),
    tenants_with_due_deliveries(integer) TO engram_app;
