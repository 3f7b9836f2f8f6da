-- Confidences are stored as sent. `real` (single precision) kept 0.6224882154995234 as 0.6224882: a
-- memory's or a relation's confidence read back otherwise than the client wrote it (found by the fuzz
-- gate's read-back). Double precision holds every JSON number the API accepts for them exactly.
-- Existing values go through their shortest text form (extra_float_digits 1: PostgreSQL's default),
-- so a stored 0.8 stays 0.8 rather than becoming 0.800000011920929.
-- No view, index or function signature names these columns, so the type changes in place.

SET extra_float_digits = 1;
ALTER TABLE memories ALTER COLUMN confidence TYPE double precision USING confidence::text::double precision;
ALTER TABLE memory_relationships
    ALTER COLUMN confidence TYPE double precision USING confidence::text::double precision;
ALTER TABLE entity_relations
    ALTER COLUMN confidence TYPE double precision USING confidence::text::double precision;
