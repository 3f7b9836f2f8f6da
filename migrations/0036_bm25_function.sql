-- BM25 of one corpus's postings for a query: the scores search's text leg ranks by
-- (engram.memories.search.text), as a PL/pgSQL function. Its statements are planned once per
-- connection and their plans kept, as PL/pgSQL keeps every statement's (a generic plan of its
-- parameters), where the same SQL written into every search statement was planned at each search: at
-- make bench's 10K memories per tenant, planning a hybrid search took 0.85 ms, 0.28 ms of it for these
-- four steps. Nothing is prepared on the session, so RDS Proxy does not pin the connection for it.
--
-- For each document of the corpus holding a term of the query (in the container range
-- [p_from, p_to) when p_from is set):
-- - score: its BM25 score (saturation p_k1, length normalisation p_b) over the best the query allows
--   (every term, saturated), 0-1;
-- - coverage: the share of the query's idf its terms carry, 0-1.
-- The idf is Lucene's always-positive one, of the folded statistics plus the deltas not yet folded
-- (exact in the caller's snapshot: the function is STABLE, and RLS keeps it to the transaction's tenant,
-- as the caller: it runs as its invoker). A term no document has gets the idf of df 0; a corpus with no
-- document gives no rows. float8 throughout: numeric arithmetic on every posting cost a query with 9K
-- postings ~30 ms at 100K memories.
CREATE FUNCTION engram_bm25(
    p_tenant uuid,
    p_corpus "char",
    p_query text,
    p_from text,
    p_to text,
    p_k1 float8,
    p_b float8
)
RETURNS TABLE (id uuid, score float8, coverage float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = public, pg_temp
AS $$
DECLARE
    v_terms text[] := engram_query_terms(p_query);
    v_idf float8[];
    v_avgdl float8;
    v_total float8;  -- the query's idf: the best score it allows is v_total * (p_k1 + 1)
BEGIN
    WITH stats AS (
        SELECT x.term, sum(x.docs) AS docs, sum(x.length) AS length
        FROM (SELECT s.term, s.docs, s.length FROM text_stats s
              WHERE s.tenant_id = p_tenant AND s.corpus = p_corpus AND s.term = ANY(v_terms || ''::text)
              UNION ALL
              SELECT d.term, d.docs, d.length FROM text_stat_deltas d
              WHERE d.tenant_id = p_tenant AND d.corpus = p_corpus AND d.term = ANY(v_terms || ''::text)) x
        GROUP BY x.term),
    weights AS (
        SELECT q.ord,
               ln(1 + (n.docs - coalesce(s.docs, 0) + 0.5) / (coalesce(s.docs, 0) + 0.5))::float8 AS idf,
               n.length::float8 / greatest(n.docs, 1) AS avgdl
        FROM unnest(v_terms) WITH ORDINALITY q(term, ord)
        CROSS JOIN (SELECT t.docs, t.length FROM stats t WHERE t.term = '' AND t.docs > 0) n
        LEFT JOIN stats s ON s.term = q.term)
    SELECT array_agg(w.idf ORDER BY w.ord), max(w.avgdl), sum(w.idf) INTO v_idf, v_avgdl, v_total
    FROM weights w;
    IF v_idf IS NULL THEN
        RETURN;  -- no document in the corpus, or no term in the query
    END IF;
    IF p_from IS NULL THEN
        RETURN QUERY
        SELECT p.doc_id,
               sum(w.idf * p.tf * (p_k1 + 1) / (p.tf + p_k1 * (1 - p_b + p_b * p.doc_length / v_avgdl)))
               / (v_total * (p_k1 + 1)),
               sum(w.idf) / v_total
        FROM unnest(v_terms, v_idf) w(term, idf)
        JOIN text_postings p ON p.term = w.term
        WHERE p.tenant_id = p_tenant AND p.corpus = p_corpus
        GROUP BY p.doc_id;
    ELSE
        -- The same, in one index range of containers per term.
        RETURN QUERY
        SELECT p.doc_id,
               sum(w.idf * p.tf * (p_k1 + 1) / (p.tf + p_k1 * (1 - p_b + p_b * p.doc_length / v_avgdl)))
               / (v_total * (p_k1 + 1)),
               sum(w.idf) / v_total
        FROM unnest(v_terms, v_idf) w(term, idf)
        JOIN text_postings p ON p.term = w.term
        WHERE p.tenant_id = p_tenant AND p.corpus = p_corpus AND p.container >= p_from AND p.container < p_to
        GROUP BY p.doc_id;
    END IF;
END
$$;
