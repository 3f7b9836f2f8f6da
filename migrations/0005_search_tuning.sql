-- Keep embeddings in the row, next to the columns search filters on.
--
-- pgvector's `vector` type defaults to STORAGE EXTERNAL, and a memory row with a 384-d embedding
-- (1.5 KB), its text and its tsvector passes PostgreSQL's 2 KB TOAST threshold: the embedding was
-- moved out of line. Every exact-scan distance then cost a TOAST index lookup and fetch; `make bench`
-- measured 86 ms for an exact scan of 10K memories, ~20K buffer hits, most of them in the TOAST table.
--
-- STORAGE MAIN keeps the vector inline unless nothing else fits (very large vectors still move out
-- of line, so no insert is refused), and a toast_tuple_target near the page size keeps short rows
-- (vector, content and tsvector together) whole. Long contents are still compressed and toasted.
-- Applies to rows written from now on; existing rows keep their layout until they are rewritten.
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE memories SET (toast_tuple_target = 8160);
