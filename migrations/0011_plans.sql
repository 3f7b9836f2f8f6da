-- Multi-agent plans and the context of the tasks they fan out into.
--
-- plans:          a goal (the event that started it and its data), a status to list by, free-form state,
--                 optionally the user it is for. `plan_id` is the caller's, unique per tenant.
-- task_contexts:  what an agent needs to answer a task once its sub-tasks are done: the event it answers
--                 with and the topic to send it to, its data, the ids of the sub-tasks it waits for and its
--                 state. `task_id` is the caller's, unique per tenant; a sub-task id belongs to at most one
--                 task of a tenant, so a sub-task's answer finds its parent (GET .../by-subtask/{id}).
-- Both carry a version for compare-and-swap (If-Match), as working memory does.
--
-- Tenant isolation as on every tenant table: RLS enabled and forced, one tenant policy.

CREATE TABLE plans (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    plan_id     text COLLATE "C" NOT NULL CHECK (plan_id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    goal_event  text NOT NULL CHECK (length(goal_event) BETWEEN 1 AND 256),
    goal_data   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(goal_data) = 'object'),
    status      text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status ~ '^[a-z0-9_-]{1,32}$'),
    state       jsonb NOT NULL DEFAULT '{}',
    user_id     text CHECK (length(user_id) BETWEEN 1 AND 255),
    version     bigint NOT NULL DEFAULT 1 CHECK (version > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, plan_id)
);
-- Listing: newest first, by status or by user.
CREATE INDEX plans_tenant_created_idx ON plans (tenant_id, created_at DESC, plan_id DESC);
CREATE INDEX plans_tenant_status_idx ON plans (tenant_id, status, created_at DESC, plan_id DESC);
CREATE INDEX plans_tenant_user_idx ON plans (tenant_id, user_id, created_at DESC, plan_id DESC)
    WHERE user_id IS NOT NULL;

CREATE TABLE task_contexts (
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    task_id         text COLLATE "C" NOT NULL CHECK (task_id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    plan_id         text COLLATE "C" CHECK (plan_id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    event_type      text NOT NULL CHECK (length(event_type) BETWEEN 1 AND 256),
    response_event  text CHECK (length(response_event) BETWEEN 1 AND 256),
    response_topic  text CHECK (length(response_topic) BETWEEN 1 AND 512),
    data            jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
    sub_tasks       text[] NOT NULL DEFAULT '{}' CHECK (cardinality(sub_tasks) <= 1000),
    state           jsonb NOT NULL DEFAULT '{}',
    version         bigint NOT NULL DEFAULT 1 CHECK (version > 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, task_id)
);
CREATE INDEX task_contexts_tenant_created_idx ON task_contexts (tenant_id, created_at DESC, task_id DESC);
CREATE INDEX task_contexts_tenant_plan_idx ON task_contexts (tenant_id, plan_id, created_at DESC, task_id DESC)
    WHERE plan_id IS NOT NULL;
-- A sub-task's parent: the tenant and the sub-task id are keys of one GIN index (btree_gin, 0005).
CREATE INDEX task_contexts_tenant_sub_tasks_idx ON task_contexts USING gin (tenant_id, sub_tasks);

ALTER TABLE plans ENABLE ROW LEVEL SECURITY;
ALTER TABLE plans FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON plans
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

ALTER TABLE task_contexts ENABLE ROW LEVEL SECURITY;
ALTER TABLE task_contexts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON task_contexts
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON plans, task_contexts TO engram_app;

-- Which task holds a sub-task. Under RLS PostgreSQL cannot use a GIN index for `&&`, which is not
-- leakproof (see memory_text_candidates in 0001): this function runs as engram_search, which reads the
-- table without a security barrier, takes the tenant from the transaction's setting (none set: no rows)
-- and returns only ids; the app then reads the task itself through RLS.
CREATE POLICY sub_task_lookup ON task_contexts FOR SELECT TO engram_search USING (true);
GRANT SELECT ON task_contexts TO engram_search;

CREATE FUNCTION task_context_sub_task_owners(p_sub_tasks text[])
RETURNS TABLE (task_id text, sub_task text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT t.task_id, s.sub_task
    FROM task_contexts t CROSS JOIN LATERAL unnest(t.sub_tasks) AS s(sub_task)
    WHERE t.tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid
      AND t.sub_tasks && p_sub_tasks
      AND s.sub_task = ANY (p_sub_tasks)
    ORDER BY s.sub_task, t.task_id
$$;
ALTER FUNCTION task_context_sub_task_owners(text[]) OWNER TO engram_search;
REVOKE ALL ON FUNCTION task_context_sub_task_owners(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION task_context_sub_task_owners(text[]) TO engram_app;
