-- Text search folds accents: "cafe" finds "café", and "café" finds "cafe".
--
-- engram_english is the `english` text search configuration with the `unaccent` dictionary (a trusted
-- extension, so the migrating owner creates it: the RDS master user, or the local superuser) in front
-- of the dictionaries of every token type that can hold letters other than ASCII ones: a word that
-- unaccent changes goes on to the stemmer (or `simple`) accent-free, one it leaves alone goes on as
-- it was. Every search over text uses it: the BM25 terms of memories and chunks (engram_text_terms,
-- engram_query_terms: migrations/0014), and the full-text column of session messages with the
-- queries built against it (engram.sessions.repo). Unspaced scripts keep their character grams.
--
-- What is already stored is indexed again under the new terms. unaccent maps no ASCII character, so a
-- text all in ASCII has the terms it had: only the memories and chunks holding another character are
-- (an English corpus has few). Their postings under the old terms go, those under the new ones come,
-- and the statistics move by the difference, as deltas, the way every writer moves them (0014). The
-- messages' column is dropped and added again, which computes it for every row (a generated column
-- cannot change its expression on PostgreSQL 16).

CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TEXT SEARCH CONFIGURATION engram_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION engram_english
    ALTER MAPPING FOR word, hword, hword_part WITH unaccent, english_stem;
ALTER TEXT SEARCH CONFIGURATION engram_english
    ALTER MAPPING FOR numword, numhword, hword_numpart WITH unaccent, simple;

-- RLS is forced on every table read or written here, and a migrator that is not a superuser (the RDS
-- master user) owns them: it would read no row and could write none. It lifts FORCE for this
-- transaction only (DDL is transactional; nobody sees the tables without it), and holds off writers
-- until the index is rebuilt.
LOCK TABLE memories, chunks IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_postings NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stat_deltas NO FORCE ROW LEVEL SECURITY;

-- The texts to index again, and their postings under the old terms (engram_text_terms before it is
-- replaced below: the postings the triggers wrote), which go.
CREATE TEMPORARY TABLE refolded ON COMMIT DROP AS
SELECT d.tenant_id, d.corpus, d.container, d.id, d.content
FROM (SELECT tenant_id, 'm'::"char" AS corpus, container, id, content FROM memories
      UNION ALL
      SELECT tenant_id, 'c'::"char", container, id, content FROM chunks) d
WHERE d.content ~ '[^\u0001-\u007f]';

CREATE TEMPORARY TABLE unfolded ON COMMIT DROP AS
SELECT r.tenant_id, r.corpus, t.term, r.container, r.id AS doc_id, t.tf
FROM refolded r
CROSS JOIN LATERAL engram_text_terms(r.content) t;

DELETE FROM text_postings p USING unfolded u
WHERE p.tenant_id = u.tenant_id AND p.corpus = u.corpus AND p.term = u.term
  AND p.container = u.container AND p.doc_id = u.doc_id;

CREATE OR REPLACE FUNCTION engram_text_terms(p_text text)
RETURNS TABLE (term text, tf integer)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)
    FROM unnest(to_tsvector('engram_english', regexp_replace(p_text, engram_unspaced_runs(), ' ', 'g'))) v
    WHERE length(v.lexeme) <= 100
    UNION ALL
    SELECT g.gram, count(*)::integer
    FROM regexp_matches(p_text, engram_unspaced_runs(), 'g') AS r(run)
    CROSS JOIN LATERAL (
        SELECT substr(r.run[1], i, 1) FROM generate_series(1, length(r.run[1])) i
        UNION ALL
        SELECT substr(r.run[1], i, 2) FROM generate_series(1, length(r.run[1]) - 1) i
    ) AS g(gram)
    GROUP BY g.gram
$$;

CREATE OR REPLACE FUNCTION engram_query_terms(p_query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(DISTINCT q.term ORDER BY q.term), '{}')
    FROM (
        SELECT v.lexeme AS term
        FROM unnest(to_tsvector('engram_english', regexp_replace(p_query, engram_unspaced_runs(), ' ', 'g'))) v
        WHERE length(v.lexeme) <= 100
        UNION ALL
        SELECT substr(r.run[1], i, least(length(r.run[1]), 2))
        FROM regexp_matches(p_query, engram_unspaced_runs(), 'g') AS r(run),
             generate_series(1, greatest(length(r.run[1]) - 1, 1)) i
    ) q
$$;

-- Their postings under the new terms, which come.
CREATE TEMPORARY TABLE folded ON COMMIT DROP AS
SELECT r.tenant_id, r.corpus, t.term, r.container, r.id AS doc_id, t.tf
FROM refolded r
CROSS JOIN LATERAL engram_text_terms(r.content) t;

INSERT INTO text_postings (tenant_id, corpus, term, container, doc_id, tf, doc_length)
SELECT tenant_id, corpus, term, container, doc_id, least(tf, 32767), sum(tf) OVER (PARTITION BY corpus, doc_id)
FROM folded;

-- Each term's documents, and under '' the corpus's length (its documents' terms), moved by the
-- difference.
INSERT INTO text_stat_deltas (tenant_id, corpus, term, docs, length)
SELECT tenant_id, corpus, term, sum(change)::integer, 0
FROM (SELECT tenant_id, corpus, term, 1 AS change FROM folded
      UNION ALL
      SELECT tenant_id, corpus, term, -1 FROM unfolded) c
GROUP BY tenant_id, corpus, term
HAVING sum(change) <> 0
UNION ALL
SELECT tenant_id, corpus, '', 0, sum(change)
FROM (SELECT tenant_id, corpus, tf AS change FROM folded
      UNION ALL
      SELECT tenant_id, corpus, -tf FROM unfolded) l
GROUP BY tenant_id, corpus
HAVING sum(change) <> 0;

ALTER TABLE memories FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;
ALTER TABLE text_postings FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stats FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stat_deltas FORCE ROW LEVEL SECURITY;

-- Session messages: no index reads the column (search scans the party's messages).
ALTER TABLE session_messages DROP COLUMN fts;
ALTER TABLE session_messages
    ADD COLUMN fts tsvector GENERATED ALWAYS AS (to_tsvector('engram_english', content)) STORED;
