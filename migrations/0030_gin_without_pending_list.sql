-- Tag and metadata filters read the memories' GIN indexes (memory_filter_candidates, memory_scope_ids).
-- With GIN's default fastupdate, new entries wait in a pending list (up to gin_pending_list_limit,
-- 4 MB) that every scan of the index reads whole until a vacuum merges it. On make bench's 10K x 10
-- data, after its writes, 476 pending pages in the tags index made a tag-filtered lookup of 10 rows
-- take 2.3 ms (485 buffers), against 0.29 ms (38 buffers) on the vacuumed 100K data: a busy tenant
-- makes every tenant's filtered searches slower. Without the list, each insert updates the index's
-- entries itself (a few per memory: its tenant and each tag, or each metadata path and value).
ALTER INDEX memories_tenant_tags_idx SET (fastupdate = off);
ALTER INDEX memories_metadata_idx SET (fastupdate = off);
-- Turning fastupdate off leaves the entries already pending to the next vacuum: merged now.
SELECT gin_clean_pending_list('memories_tenant_tags_idx'::regclass);
SELECT gin_clean_pending_list('memories_metadata_idx'::regclass);
