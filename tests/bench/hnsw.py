"""On request (`--only hnsw`): how much of the true top 10 an HNSW walk finds, by its candidate list
(hnsw.ef_search) and the size of the index, on real vectors: the local model's vectors of SciFact's corpus
sentences, with SciFact train's claims as queries (the train split: settings are chosen on it). Each size is
an index of a random sample of the sentences, built as search's indexes are (pgvector's defaults); each
walk returns 40 candidates, which are ranked by their exact distance as search ranks its candidates.
This is what engram.memories.search.planner.WALK_EF_SEARCH was chosen from: for each size, the smallest
list that finds 99 % of the true top 10.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from tests.bench import loader, scifact
from tests.bench.report import Figure

SIZES = (5_000, 10_000, 20_000, None)  # None: every sentence (~44K)
LISTS = (40, 64, 100, 160)
CANDIDATES, K = 40, 10
SECTION = (
    "HNSW recall@10 by ef_search and index size (SciFact corpus sentences, train claims, local model; "
    "40 candidates ranked exactly)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences(corpus: scifact.Corpus) -> list[str]:
    """The corpus's sentences of 40 to 400 characters, in corpus order."""
    found = []
    for text in corpus.texts:
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            if 40 <= len(sentence) <= 400:
                found.append(sentence)
    return found


def ef_recall(bench_dir: Path, data_dir: Path, embedder: Any, log: Callable[[str], None]) -> list[Figure]:
    corpus = scifact.load_corpus(data_dir, "train")
    texts = sentences(corpus)
    slug = f"{embedder.model_id.replace('/', '_')}-{embedder.revision}"
    log(f"hnsw: {len(texts)} SciFact sentences, {len(corpus.queries)} train claims")
    vectors = _unit(
        scifact.cached_embeddings(
            bench_dir / "cache",
            f"scifact-sentences-{corpus.digest}-{slug}",
            texts,
            embedder.embed_documents,
            log,
        )
    )
    queries = _unit(
        scifact.cached_embeddings(
            bench_dir / "cache",
            f"scifact-queries-train-{corpus.digest}-{slug}",
            list(corpus.queries.values()),
            embedder.embed_documents,
            log,
        )
    )
    rng = np.random.default_rng(7)
    figures = []
    settings = loader.bench_settings(bench_dir / "db-hnsw", bench_dir / "models")
    with (
        loader.bench_database(settings) as local,
        psycopg.connect(local.admin_conninfo, autocommit=True) as conn,
    ):
        register_vector(conn)
        for size in SIZES:
            n = len(vectors) if size is None else min(size, len(vectors))
            sample = vectors[rng.permutation(len(vectors))[:n]]
            table = _index(conn, sample, log)
            truth = np.argsort(-(queries @ sample.T), axis=1)[:, :K]
            for ef in LISTS:
                recall = _recall(conn, table, sample, queries, truth, ef)
                figures.append(
                    Figure(
                        key=f"hnsw.recall.ef{ef}@{n}",
                        section=SECTION,
                        name=f"{n:,} vectors, ef_search {ef}",
                        value=float(recall.mean()),
                        note=f"{(recall < 0.9).mean():.1%} of claims under 0.9",
                    )
                )
            log(f"  {n} vectors: " + ", ".join(f"{f.value:.4f}" for f in figures[-len(LISTS) :]))
    return figures


def _unit(vectors: np.ndarray) -> np.ndarray:
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def _index(conn: psycopg.Connection[Any], sample: np.ndarray, log: Callable[[str], None]) -> sql.Identifier:
    """A table of `sample`'s vectors (ids: their rows) with an HNSW index, kept between runs (the same
    seed draws the same sample)."""
    table = sql.Identifier(f"hnsw_sample_{len(sample)}")
    conn.execute(
        sql.SQL("CREATE TABLE IF NOT EXISTS {} (id int PRIMARY KEY, embedding vector)").format(table)
    )
    (rows,) = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone() or (0,)
    if rows == len(sample):
        return table
    started = time.perf_counter()
    conn.execute(sql.SQL("TRUNCATE {}").format(table))
    with conn.cursor().copy(
        sql.SQL("COPY {} (id, embedding) FROM STDIN (FORMAT BINARY)").format(table)
    ) as copy:
        copy.set_types(["int4", "vector"])
        for i, vector in enumerate(sample):
            copy.write_row((i, vector))
    dims = sql.Literal(sample.shape[1])
    conn.execute(
        sql.SQL("CREATE INDEX ON {} USING hnsw ((embedding::vector({})) vector_cosine_ops)").format(
            table, dims
        )
    )
    conn.execute(sql.SQL("ANALYZE {}").format(table))
    log(f"    indexed {len(sample)} vectors in {time.perf_counter() - started:.0f}s")
    return table


def _recall(
    conn: psycopg.Connection[Any],
    table: sql.Identifier,
    sample: np.ndarray,
    queries: np.ndarray,
    truth: np.ndarray,
    ef: int,
) -> np.ndarray:
    """Per query: the share of its true top K among the K nearest of the walk's candidates."""
    dims = sql.Literal(sample.shape[1])
    walk = sql.SQL("SELECT id FROM {} ORDER BY embedding::vector({}) <=> %s::vector({}) LIMIT {}").format(
        table, dims, dims, sql.Literal(CANDIDATES)
    )
    found = []
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        for query, true_top in zip(queries, truth, strict=True):
            ids = np.array([row[0] for row in conn.execute(walk, (query,)).fetchall()], dtype=int)
            top = ids[np.argsort(-(sample[ids] @ query))[:K]] if len(ids) else ids
            found.append(len(set(top.tolist()) & set(true_top.tolist())) / K)
    return np.array(found)
