-- Who an entity is kept for. An entity that extraction created (engram.graph.linking, linking a memory
-- of a document, of a conversation or of a write with `extract` light/full) is uncurated: it stands for the
-- memories that mention it, and once nothing mentions it and no relation joins it, it goes with them
-- (DELETE of a memory or a document, and `engram cleanup` after expiry; engram.graph.repo
-- delete_unreferenced). An entity the API was asked for by name (POST /v1/entities, a relation end
-- given by name, an observation added to it) is curated: kept until DELETE /v1/entities/{id}, whatever
-- happens to its observations. Extraction meeting a curated entity leaves it curated.
--
-- Existing rows are curated, so kept as before: who made them cannot be told now.
-- A constant default: a catalogue-only change, no table rewrite (PostgreSQL 11 and later).

ALTER TABLE entities ADD COLUMN curated boolean NOT NULL DEFAULT true;
