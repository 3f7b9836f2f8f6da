-- BM25 for the text leg of search, in plain PostgreSQL (no extension: Aurora has none for it).
--
-- The text leg ranked with ts_rank, which has no inverse document frequency and no length
-- saturation, and ranked every row its words matched, read through the wide memories heap by a
-- SECURITY DEFINER function (RLS keeps the app from using a GIN index for `@@`). This migration gives
-- each searchable corpus (memories 'm', document chunks 'c') an inverted index of its own:
--
--   text_postings     one row per (document, term): its term frequency and the document's length,
--                     keyed (tenant, corpus, term, container, document). B-tree, `=` and ranges only,
--                     so the app reads it under RLS with its index: no SECURITY DEFINER function.
--   text_stats        per tenant and corpus: each term's document frequency, and under the term ''
--                     the number of documents and their total length (avgdl = length / docs).
--   text_stat_deltas  the changes to text_stats not yet folded in. Writers only ever INSERT here, so
--                     concurrent writers to one tenant never wait on a shared counter row; search
--                     reads text_stats plus the pending deltas, so the statistics are exact in every
--                     snapshot. A writer that finds 32 write statements pending folds them in
--                     (text_stats_compact), unless another writer already is (a try-lock: nobody
--                     waits). `make bench` measures 8 concurrent writers to one tenant against the
--                     alternative of counters updated in place.
--
-- Terms come from engram_text_terms: the `english` text search configuration's lexemes (stemmed, stop
-- words dropped) for scripts that separate words with spaces; scripts that do not (CJK ideographs,
-- kana, hangul, Thai, Lao, Khmer, Myanmar) are indexed as character unigrams and bigrams, so "東京"
-- finds "東京の天気は晴れです". Queries use engram_query_terms: the same lexemes, and bigrams of their
-- unspaced runs (a single character: its unigram).
--
-- Triggers on memories and chunks keep all three tables in step with the rows in the writing
-- transaction (statement-level, with transition tables, so a COPY or a batch is one pass).
--
-- ts_rank's candidate functions, the tsvector columns and their GIN indexes are dropped: nothing
-- reads them any more. Session messages keep their own full-text column (0002).

-- The unspaced scripts, as a regular expression bracket.
CREATE FUNCTION engram_unspaced_runs() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT '[\u0E00-\u0EFF\u1000-\u109F\u1100-\u11FF\u1780-\u17FF\u3040-\u30FF\u3130-\u318F'
             '\u31F0-\u31FF\u3400-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7FF\uF900-\uFAFF'
             '\uFF66-\uFF9F\U00020000-\U0003134F]+' $$;

-- A document's terms and how often each occurs. Lexemes longer than 100 characters (encoded data,
-- long URLs) are left out: nobody searches for them, and a B-tree key has a size limit.
CREATE FUNCTION engram_text_terms(p_text text)
RETURNS TABLE (term text, tf integer)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)
    FROM unnest(to_tsvector('english', regexp_replace(p_text, engram_unspaced_runs(), ' ', 'g'))) v
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

-- A query's distinct terms: its lexemes, and the bigrams of its unspaced runs (a run of one
-- character: that character).
CREATE FUNCTION engram_query_terms(p_query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(DISTINCT q.term ORDER BY q.term), '{}')
    FROM (
        SELECT v.lexeme AS term
        FROM unnest(to_tsvector('english', regexp_replace(p_query, engram_unspaced_runs(), ' ', 'g'))) v
        WHERE length(v.lexeme) <= 100
        UNION ALL
        SELECT substr(r.run[1], i, least(length(r.run[1]), 2))
        FROM regexp_matches(p_query, engram_unspaced_runs(), 'g') AS r(run),
             generate_series(1, greatest(length(r.run[1]) - 1, 1)) i
    ) q
$$;

-- Corpus: 'm' memories, 'c' chunks. The container is kept with each posting so that a search in a
-- container reads only that container's postings (an index range).
CREATE TABLE text_postings (
    tenant_id   uuid NOT NULL,
    corpus      "char" NOT NULL CHECK (corpus IN ('m', 'c')),
    term        text COLLATE "C" NOT NULL,
    container   text COLLATE "C" NOT NULL,
    doc_id      uuid NOT NULL,
    tf          smallint NOT NULL CHECK (tf > 0),
    doc_length  integer NOT NULL CHECK (doc_length > 0)
);

CREATE TABLE text_stats (
    tenant_id  uuid NOT NULL,
    corpus     "char" NOT NULL CHECK (corpus IN ('m', 'c')),
    term       text COLLATE "C" NOT NULL,  -- '': the corpus (docs = documents, length = their terms)
    docs       bigint NOT NULL,
    length     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, corpus, term)
);

CREATE TABLE text_stat_deltas (
    tenant_id  uuid NOT NULL,
    corpus     "char" NOT NULL CHECK (corpus IN ('m', 'c')),
    term       text COLLATE "C" NOT NULL,
    docs       integer NOT NULL,
    length     bigint NOT NULL DEFAULT 0
);

-- Backfill. RLS is forced on memories and chunks, and a migrator that is not a superuser (the RDS
-- master user) owns them: it would read no row. It lifts FORCE for this transaction only (DDL is
-- transactional; nobody sees the tables without it), and holds off writers until the triggers exist.
LOCK TABLE memories, chunks IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks NO FORCE ROW LEVEL SECURITY;

INSERT INTO text_postings (tenant_id, corpus, term, container, doc_id, tf, doc_length)
SELECT d.tenant_id, d.corpus, t.term, d.container, d.id, least(t.tf, 32767),
       sum(t.tf) OVER (PARTITION BY d.corpus, d.id)
FROM (SELECT tenant_id, 'm'::"char" AS corpus, container, id, content FROM memories
      UNION ALL
      SELECT tenant_id, 'c'::"char", container, id, content FROM chunks) d
CROSS JOIN LATERAL engram_text_terms(d.content) t;

ALTER TABLE text_postings ADD PRIMARY KEY (tenant_id, corpus, term, container, doc_id) INCLUDE (tf, doc_length);

INSERT INTO text_stats (tenant_id, corpus, term, docs, length)
SELECT tenant_id, corpus, term, count(*), 0 FROM text_postings GROUP BY tenant_id, corpus, term;
INSERT INTO text_stats (tenant_id, corpus, term, docs, length)
SELECT d.tenant_id, d.corpus, '', count(*), coalesce(sum(l.doc_length), 0)
FROM (SELECT tenant_id, 'm'::"char" AS corpus, id FROM memories
      UNION ALL
      SELECT tenant_id, 'c'::"char", id FROM chunks) d
LEFT JOIN (SELECT DISTINCT corpus, doc_id, doc_length FROM text_postings) l
       ON l.corpus = d.corpus AND l.doc_id = d.id
GROUP BY d.tenant_id, d.corpus;

ALTER TABLE memories FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;

CREATE INDEX text_stat_deltas_term_idx ON text_stat_deltas (tenant_id, corpus, term) INCLUDE (docs, length);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['text_postings', 'text_stats', 'text_stat_deltas'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I '
            'USING (tenant_id = NULLIF(current_setting(''engram.tenant_id'', true), '''')::uuid) '
            'WITH CHECK (tenant_id = NULLIF(current_setting(''engram.tenant_id'', true), '''')::uuid)', t);
    END LOOP;
END
$$;
GRANT SELECT, INSERT, DELETE ON text_postings, text_stat_deltas TO engram_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON text_stats TO engram_app;

-- Fold a tenant's pending deltas into text_stats. Called by the triggers below (one writer at a time
-- per tenant and corpus, by try-lock); callable by the app role, under RLS, for its own tenant.
CREATE FUNCTION text_stats_compact(p_tenant uuid, p_corpus "char") RETURNS void
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
BEGIN
    WITH moved AS (
        DELETE FROM text_stat_deltas WHERE tenant_id = p_tenant AND corpus = p_corpus
        RETURNING term, docs, length
    )
    INSERT INTO text_stats AS s (tenant_id, corpus, term, docs, length)
    SELECT p_tenant, p_corpus, term, sum(docs), sum(length) FROM moved GROUP BY term
    ON CONFLICT (tenant_id, corpus, term)
    DO UPDATE SET docs = s.docs + excluded.docs, length = s.length + excluded.length;
    DELETE FROM text_stats WHERE tenant_id = p_tenant AND corpus = p_corpus AND docs <= 0 AND term <> '';
END
$$;

-- Fold in when 32 write statements of the tenant are pending, unless another transaction is already
-- folding (it holds the try-lock until it commits; nobody waits for it).
CREATE FUNCTION text_stats_maybe_compact(p_tenant uuid, p_corpus "char") RETURNS void
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
BEGIN
    IF (SELECT count(*) FROM (SELECT 1 FROM text_stat_deltas
                              WHERE tenant_id = p_tenant AND corpus = p_corpus AND term = ''
                              LIMIT 32) pending) >= 32
       AND pg_try_advisory_xact_lock(20014, hashtext(p_tenant::text || p_corpus::text)) THEN
        PERFORM text_stats_compact(p_tenant, p_corpus);
    END IF;
END
$$;

-- Fold a tenant's pending deltas in now, waiting for a fold under way: after an erasure no delta (nor
-- a statistic of a term no document holds any more) keeps a word of what went.
CREATE FUNCTION text_stats_fold(p_tenant uuid) RETURNS void
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_corpus "char";
BEGIN
    FOREACH v_corpus IN ARRAY ARRAY['m', 'c']::"char"[] LOOP
        PERFORM pg_advisory_xact_lock(20014, hashtext(p_tenant::text || v_corpus::text));
        PERFORM text_stats_compact(p_tenant, v_corpus);
    END LOOP;
END
$$;

-- New rows (INSERT, COPY): their postings, and +1 document per term. TG_ARGV[0] is the corpus.
CREATE FUNCTION text_index_added() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_corpus "char" := TG_ARGV[0];
    v_tenant uuid;
BEGIN
    WITH terms AS MATERIALIZED (
        SELECT a.tenant_id, a.container, a.id, t.term, t.tf,
               sum(t.tf) OVER (PARTITION BY a.id) AS doc_length
        FROM added a CROSS JOIN LATERAL engram_text_terms(a.content) t
    ), posted AS (
        INSERT INTO text_postings (tenant_id, corpus, term, container, doc_id, tf, doc_length)
        SELECT tenant_id, v_corpus, term, container, id, least(tf, 32767), doc_length FROM terms
    )
    INSERT INTO text_stat_deltas (tenant_id, corpus, term, docs, length)
    SELECT tenant_id, v_corpus, term, count(*), 0 FROM terms GROUP BY tenant_id, term
    UNION ALL
    SELECT a.tenant_id, v_corpus, '', count(*), coalesce(sum(l.doc_length), 0)
    FROM added a LEFT JOIN (SELECT DISTINCT id, doc_length FROM terms) l ON l.id = a.id
    GROUP BY a.tenant_id;
    FOR v_tenant IN SELECT DISTINCT tenant_id FROM added LOOP
        PERFORM text_stats_maybe_compact(v_tenant, v_corpus);
    END LOOP;
    RETURN NULL;
END
$$;

-- Deleted rows: their postings go, and -1 document per term.
CREATE FUNCTION text_index_removed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_corpus "char" := TG_ARGV[0];
    v_tenant uuid;
BEGIN
    WITH terms AS MATERIALIZED (
        SELECT r.tenant_id, r.container, r.id, t.term
        FROM removed r CROSS JOIN LATERAL engram_text_terms(r.content) t
    ), gone AS (
        DELETE FROM text_postings p USING terms x
        WHERE p.tenant_id = x.tenant_id AND p.corpus = v_corpus AND p.term = x.term
          AND p.container = x.container AND p.doc_id = x.id
        RETURNING p.tenant_id, p.term, p.doc_id, p.doc_length
    )
    -- No deltas for a tenant being deleted (rows going by its cascade): its statistics go whole.
    INSERT INTO text_stat_deltas (tenant_id, corpus, term, docs, length)
    SELECT x.* FROM (
        SELECT tenant_id, v_corpus, term, -count(*), 0 FROM gone GROUP BY tenant_id, term
        UNION ALL
        SELECT r.tenant_id, v_corpus, '', -count(*), -coalesce(sum(l.doc_length), 0)
        FROM removed r LEFT JOIN (SELECT DISTINCT doc_id, doc_length FROM gone) l ON l.doc_id = r.id
        GROUP BY r.tenant_id) x (tenant_id, corpus, term, docs, length)
    WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.tenant_id);
    FOR v_tenant IN SELECT DISTINCT r.tenant_id FROM removed r
                    WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = r.tenant_id) LOOP
        PERFORM text_stats_maybe_compact(v_tenant, v_corpus);
    END LOOP;
    RETURN NULL;
END
$$;

-- A row whose content or container changed (rare: PATCH of content, a container moved): its old
-- postings go and its new ones come; the statistics change only with the content.
CREATE FUNCTION text_index_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_corpus "char" := TG_ARGV[0];
    v_old_length bigint;
    v_new_length bigint;
BEGIN
    DELETE FROM text_postings p USING engram_text_terms(OLD.content) t
    WHERE p.tenant_id = OLD.tenant_id AND p.corpus = v_corpus AND p.term = t.term
      AND p.container = OLD.container AND p.doc_id = OLD.id;
    INSERT INTO text_postings (tenant_id, corpus, term, container, doc_id, tf, doc_length)
    SELECT NEW.tenant_id, v_corpus, t.term, NEW.container, NEW.id, least(t.tf, 32767),
           sum(t.tf) OVER ()
    FROM engram_text_terms(NEW.content) t;
    IF OLD.content IS DISTINCT FROM NEW.content THEN
        SELECT coalesce(sum(tf), 0) INTO v_old_length FROM engram_text_terms(OLD.content);
        SELECT coalesce(sum(tf), 0) INTO v_new_length FROM engram_text_terms(NEW.content);
        INSERT INTO text_stat_deltas (tenant_id, corpus, term, docs, length)
        SELECT NEW.tenant_id, v_corpus, coalesce(o.term, n.term),
               (n.term IS NOT NULL)::integer - (o.term IS NOT NULL)::integer, 0
        FROM engram_text_terms(OLD.content) o FULL JOIN engram_text_terms(NEW.content) n ON n.term = o.term
        WHERE (o.term IS NULL) <> (n.term IS NULL)
        UNION ALL
        SELECT NEW.tenant_id, v_corpus, '', 0, v_new_length - v_old_length;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER text_index_added AFTER INSERT ON memories
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION text_index_added('m');
CREATE TRIGGER text_index_removed AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION text_index_removed('m');
CREATE TRIGGER text_index_changed AFTER UPDATE OF content, container ON memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.container IS DISTINCT FROM NEW.container)
    EXECUTE FUNCTION text_index_changed('m');

CREATE TRIGGER text_index_added AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION text_index_added('c');
CREATE TRIGGER text_index_removed AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION text_index_removed('c');
CREATE TRIGGER text_index_changed AFTER UPDATE OF content, container ON chunks
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.container IS DISTINCT FROM NEW.container)
    EXECUTE FUNCTION text_index_changed('c');

-- TRUNCATE (tests and the benchmark's loader) empties the corpus's index and statistics too.
CREATE FUNCTION text_index_truncated() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
BEGIN
    DELETE FROM text_postings WHERE corpus = TG_ARGV[0]::"char";
    DELETE FROM text_stats WHERE corpus = TG_ARGV[0]::"char";
    DELETE FROM text_stat_deltas WHERE corpus = TG_ARGV[0]::"char";
    RETURN NULL;
END
$$;
CREATE TRIGGER text_index_truncated AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION text_index_truncated('m');
CREATE TRIGGER text_index_truncated AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION text_index_truncated('c');

-- A tenant deleted: its postings go with its rows (the triggers above), and its statistics here (the
-- text tables have no foreign key: one per posting would be checked on every write).
CREATE FUNCTION text_index_tenant_deleted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
BEGIN
    DELETE FROM text_postings WHERE tenant_id = OLD.id;
    DELETE FROM text_stats WHERE tenant_id = OLD.id;
    DELETE FROM text_stat_deltas WHERE tenant_id = OLD.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER text_index_tenant_deleted AFTER DELETE ON tenants
    FOR EACH ROW EXECUTE FUNCTION text_index_tenant_deleted();

-- What ts_rank needed, and nothing reads any more.
DROP FUNCTION memory_text_candidates(tsquery, integer, text, boolean, text[], text[], text, text, jsonb, timestamptz, boolean, text);
DROP FUNCTION chunk_text_candidates(tsquery, integer, text, boolean, text[], jsonb);
ALTER TABLE memories DROP COLUMN fts;
ALTER TABLE chunks DROP COLUMN fts;
