-- The periods a memory is about (engram.memories.periods.memory_periods): the day its metadata states
-- (a conversation's session date), else its valid_from; and the times its text states ("yesterday",
-- "in June 2023"), read against that day. Search's time leg finds the memories of the period a query
-- names ("what did she do last June?"). Written by the memory writer with the memory.

CREATE TABLE memory_periods (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    memory_id  uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    during     daterange NOT NULL CHECK (NOT isempty(during) AND NOT lower_inf(during) AND NOT upper_inf(during)),
    -- The memory's text states this period (not only its own date).
    stated     boolean NOT NULL,
    PRIMARY KEY (tenant_id, memory_id, during)
);
-- Overlap with a query's period [s, e): lower(during) < e, and (periods last at most about a year)
-- lower(during) > s - 400 days; both bounds on one btree range.
CREATE INDEX memory_periods_start_idx ON memory_periods (tenant_id, lower(during));

ALTER TABLE memory_periods ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_periods FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_periods
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_periods TO engram_app;

-- Memories written before this migration: their own day (from valid_from). Their texts' periods come
-- when they are written again.
INSERT INTO memory_periods (tenant_id, memory_id, during, stated)
SELECT tenant_id, id, daterange((valid_from AT TIME ZONE 'UTC')::date, (valid_from AT TIME ZONE 'UTC')::date + 1), false
FROM memories;
