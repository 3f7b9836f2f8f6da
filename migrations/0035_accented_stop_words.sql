-- A word whose accents fold into an English stop word is a word again: "thé" (tea), "só", "às", "hé".
--
-- 0034 put unaccent in front of english_stem for the token types that hold letters other than ASCII
-- ones (word, hword, hword_part), and english_stem drops stop words: "thé" became "the" and was
-- dropped, so text search found "thé" no more (it had been the lexeme "thé" before 0034). Those token
-- types go on to engram_english_stem instead: the same English stemmer with no stop words. A word
-- written in ASCII letters only (asciiword, hword_asciipart: "the", "a") never reaches it, so English
-- stop words are still dropped, and a stop word's accented spelling ("thé", "à") is kept, as any other
-- word. (RDS takes no stop-word file of ours: the snowball template without StopWords is the way.)
--
-- Only texts holding a character outside ASCII can have other terms now, so only they are indexed
-- again, as 0034 did: their postings under the terms of now go, those under the new ones come, and the
-- statistics move by the difference. Their messages' generated column is computed again by an update.

CREATE TEXT SEARCH DICTIONARY engram_english_stem (TEMPLATE = snowball, Language = english);

-- RLS is forced on every table read or written here, and a migrator that is not a superuser (the RDS
-- master user) owns them: it lifts FORCE for this transaction only, and holds off writers until the
-- index is rebuilt.
LOCK TABLE memories, chunks, session_messages IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE session_messages NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_postings NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stat_deltas NO FORCE ROW LEVEL SECURITY;

CREATE TEMPORARY TABLE refolded ON COMMIT DROP AS
SELECT d.tenant_id, d.corpus, d.container, d.id, d.content
FROM (SELECT tenant_id, 'm'::"char" AS corpus, container, id, content FROM memories
      UNION ALL
      SELECT tenant_id, 'c'::"char", container, id, content FROM chunks) d
WHERE d.content ~ '[^\u0001-\u007f]';

-- Their postings under the terms of now (the postings the triggers wrote), which go.
CREATE TEMPORARY TABLE unfolded ON COMMIT DROP AS
SELECT r.tenant_id, r.corpus, t.term, r.container, r.id AS doc_id, t.tf
FROM refolded r
CROSS JOIN LATERAL engram_text_terms(r.content) t;

DELETE FROM text_postings p USING unfolded u
WHERE p.tenant_id = u.tenant_id AND p.corpus = u.corpus AND p.term = u.term
  AND p.container = u.container AND p.doc_id = u.doc_id;

ALTER TEXT SEARCH CONFIGURATION engram_english
    ALTER MAPPING FOR word, hword, hword_part WITH unaccent, engram_english_stem;

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

-- A stored generated column is computed again when its row is updated (nothing else fires on it).
UPDATE session_messages SET content = content WHERE content ~ '[^\u0001-\u007f]';

ALTER TABLE memories FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;
ALTER TABLE session_messages FORCE ROW LEVEL SECURITY;
ALTER TABLE text_postings FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stats FORCE ROW LEVEL SECURITY;
ALTER TABLE text_stat_deltas FORCE ROW LEVEL SECURITY;
