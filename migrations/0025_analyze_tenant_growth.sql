-- A tenant's rows are read through indexes that start with tenant_id, and the planner estimates how
-- many rows a tenant holds from the table's statistics. A tenant the last ANALYZE did not see (a new
-- one, in a table that holds others) is estimated at one row whatever it has written since, and its
-- lookups then read every row it has through the tenant's own index. Measured on make bench's
-- 10K x 10 data, a new tenant's writes with extraction, p50 per 100 writes: 41, 54, 70, 92, 130, 164,
-- 222 ms, then 64 ms once autovacuum had analyzed the tables (an ANALYZE by hand did the same).
-- By default autovacuum analyzes a table once 10 % of it has changed (10,000 rows of a 100,000-row
-- table, and more as it grows). These tables are analyzed after a fixed number of changed rows, so
-- the statistics see a growing tenant soon at any table size; an ANALYZE reads a sample of 30,000 rows.
ALTER TABLE memories SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE memory_relationships SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE memory_sources SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE memory_periods SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE chunks SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE entities SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE entity_keys SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE entity_mentions SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE entity_relations SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
ALTER TABLE session_messages SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500);
-- A memory writes one posting per distinct term (tens): the same point, in postings.
ALTER TABLE text_postings SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 20000);
