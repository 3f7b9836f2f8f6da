"""The local embedding models side by side: `python -m tests.bench.models [--split train] [--models a,b]`.

For each model of engram.providers.local_embeddings.LOCAL_MODELS that is installed: BEIR SciFact's
nDCG@10 and Recall@100 of the vector leg alone (an exact cosine scan over the whole corpus, queries
embedded with `embed_query`, documents with `embed_documents`), and the embedding cost of one text on
one thread: a claim (a sentence) and an abstract (the corpus's median length), median of the runs.
The train split by default: models are compared there, and the test split is read only once a
configuration is final. Corpus vectors are cached in .bench/cache/ like the scifact section's.

`--queries N --distractors M`: a sample, for a model too slow to embed the 5 183 abstracts on a shared
2-core machine: N claims (the first by a hash of their id), every abstract judged for them, and M other
abstracts (the first by a hash of their id). The figures are then for that smaller corpus: higher
than the full corpus's, comparable between models only.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engram.providers.local_embeddings import LOCAL_MODELS, make_local_embedder
from tests.bench import scifact

REPO = Path(__file__).resolve().parents[2]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sample(corpus: scifact.Corpus, queries: int, distractors: int) -> scifact.Corpus:
    qids = sorted(corpus.queries, key=_hash)[:queries]
    judged = {doc for q in qids for doc in corpus.qrels[q]}
    others = sorted((d for d in corpus.ids if d not in judged), key=_hash)[:distractors]
    keep = judged | set(others)
    pairs = [(d, t) for d, t in zip(corpus.ids, corpus.texts, strict=True) if d in keep]
    return scifact.Corpus(
        ids=[d for d, _ in pairs],
        texts=[t for _, t in pairs],
        queries={q: corpus.queries[q] for q in qids},
        qrels={q: corpus.qrels[q] for q in qids},
        digest=f"{corpus.digest}-q{queries}-d{distractors}",
        split=corpus.split,
    )


def cost_ms(embed: Callable[[Any], object], text: Any, runs: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds (CPU time is what a loaded machine distorts least)."""
    wall, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        embed(text)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.models", description=__doc__)
    parser.add_argument("--split", default="train", choices=("train", "test"))
    parser.add_argument("--models", help="comma-separated model names (default: every installed one)")
    parser.add_argument("--scifact-dir", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    parser.add_argument("--bench-dir", type=Path, default=REPO / ".bench")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--queries", type=int, help="a sample of this many claims")
    parser.add_argument("--distractors", type=int, default=0, help="and this many unjudged abstracts")
    args = parser.parse_args(argv)
    corpus = scifact.load_corpus(args.scifact_dir, args.split)
    if args.queries:
        corpus = sample(corpus, args.queries, args.distractors)
    names = args.models.split(",") if args.models else list(LOCAL_MODELS)
    abstract = sorted(corpus.texts, key=len)[len(corpus.texts) // 2]
    claim = next(iter(corpus.queries.values()))
    print(
        f"SciFact {args.split}: {len(corpus.queries)} queries, {len(corpus.ids)} docs; vector leg, exact scan"
    )
    print(f"cost: 1 thread, median of {args.runs}; claim {len(claim)} chars, abstract {len(abstract)} chars")
    print("| model | dims | nDCG@10 | Recall@100 | ms/claim wall (cpu) | ms/abstract wall (cpu) |")
    print("|---|---|---|---|---|---|")
    per_query: dict[str, dict[str, float]] = {}
    for name in names:
        if LOCAL_MODELS[name].files() is None:
            log(f"{name}: not installed ({LOCAL_MODELS[name].packages}); skipped")
            continue
        embedder = make_local_embedder(name, model_dir=args.bench_dir / "models", threads=1)
        slug = f"{name.replace('/', '_')}-{embedder.revision}"
        docs = scifact.cached_embeddings(
            args.bench_dir / "cache",
            f"scifact-corpus-{corpus.digest}-{slug}",
            corpus.texts,
            embedder.embed_documents,
            log,
        )
        qids = list(corpus.queries)
        queries = np.asarray([embedder.embed_query(corpus.queries[q]) for q in qids], dtype=np.float32)
        top = np.argsort(-(queries @ docs.T), axis=1)[:, :100]
        run = {q: [corpus.ids[i] for i in row] for q, row in zip(qids, top, strict=True)}
        at10 = scifact.evaluate(corpus.qrels, {q: docs_[:10] for q, docs_ in run.items()})
        per_query[name] = ndcg_per_query(corpus.qrels, run)
        at100 = scifact.evaluate(corpus.qrels, run)
        embedder.embed_query("warm up")
        ms_claim = cost_ms(embedder.embed_query, claim, args.runs)
        ms_abstract = cost_ms(embedder.embed_documents, [abstract], args.runs)
        print(
            f"| {name} | {embedder.dimensions} | {at10['ndcg@10']:.3f} | {at100['recall@100']:.3f} "
            f"| {ms_claim[0]:.1f} ({ms_claim[1]:.1f}) | {ms_abstract[0]:.1f} ({ms_abstract[1]:.1f}) |",
            flush=True,
        )
    if len(per_query) > 1:
        first, *others = per_query
        for other in others:
            low, mean, high = paired_difference(per_query[first], per_query[other])
            print(f"nDCG@10 {other} - {first}: {mean:+.3f} (95% bootstrap {low:+.3f} .. {high:+.3f})")
    return 0


def ndcg_per_query(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> dict[str, float]:
    import pytrec_eval

    scored = {q: {doc: float(len(docs) - i) for i, doc in enumerate(docs[:10])} for q, docs in run.items()}
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(scored)
    return {q: found.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels}


def paired_difference(
    a: dict[str, float], b: dict[str, float], rounds: int = 10_000
) -> tuple[float, float, float]:
    """The mean per-claim difference b - a and its 95% interval, resampling claims (seeded)."""
    diff = np.array([b[q] - a[q] for q in a])
    draws = np.random.default_rng(19).integers(0, len(diff), size=(rounds, len(diff)))
    means = diff[draws].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(diff.mean()), float(np.percentile(means, 97.5))


if __name__ == "__main__":
    raise SystemExit(main())
