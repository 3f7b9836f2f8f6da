-- Graph walks read a relation from either end: engram.graph.repo.walk steps from a level of entities
-- to their neighbours, one index per direction, reading each entity's neighbours in id order (a page
-- needs only a hub's first few of its thousands of relations). Each index carries every column the
-- walk's edge filter reads (the source memory, the validity bounds), so a step is an index-only
-- scan: without them every relation costs a heap fetch on a random page.
--
-- The source side had only the unique key (tenant_id, source_entity, relation_type, ...), ordered
-- by type first; the target side's (tenant_id, target_entity) is a prefix of its new index and goes.
CREATE INDEX entity_relations_source_walk_idx ON entity_relations (tenant_id, source_entity, target_entity)
    INCLUDE (source_memory_id, valid_from, valid_to);
CREATE INDEX entity_relations_target_walk_idx ON entity_relations (tenant_id, target_entity, source_entity)
    INCLUDE (source_memory_id, valid_from, valid_to);
DROP INDEX entity_relations_target_idx;
