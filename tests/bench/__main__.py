"""python -m tests.bench [--quick | --full] [--scale 10k,100k] [--only latency,recall,...]"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench import (
    coldstart,
    concurrency,
    context,
    dev,
    extract_types,
    graph,
    harness,
    hnsw,
    latency,
    loader,
    pipeline,
    recall,
    report,
    scifact,
    synthetic,
    text_writers,
    tuning,
    writes,
)

REPO = Path(__file__).resolve().parents[2]
SECTIONS = (
    "coldstart",
    "latency",
    "recall",
    "writes",
    "pipeline",
    "scifact",
    "dev",
    "concurrency",
    "graph",
    "context",
)
# On request only: rerun the choice of search's settings on SciFact's train split (minutes each): the
# fusion's (tuning), the HNSW walk's candidate list by index size (hnsw).
ON_REQUEST = ("tuning", "hnsw")
# pdf_pages: the PDF has 100 pages, in both profiles (about a minute, mostly embedding).
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "scales": ["10K"],
        "queries": 300,
        "recall_queries": 30,
        "writes": 100,
        "pdf_pages": 100,
        "concurrency_seconds": 20,
        "context_calls": 100,
        "graph": graph.GraphSpec(entities=10_000, relations=100_000, memories=10_000),
        "graph_queries": 200,
        "text_writers_seconds": 8,
    },
    "full": {
        "scales": ["10K", "100K"],
        "queries": 1000,
        "recall_queries": 100,
        "writes": 300,
        "pdf_pages": 100,
        "concurrency_seconds": 40,
        "context_calls": 300,
        "graph": graph.GraphSpec(entities=100_000, relations=1_000_000, memories=100_000),
        "graph_queries": 500,
        "text_writers_seconds": 20,
    },
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--quick",
        dest="profile",
        action="store_const",
        const="quick",
        help="10K memories per tenant (default; a few minutes once the caches exist)",
    )
    group.add_argument(
        "--full", dest="profile", action="store_const", const="full", help="10K and 100K memories per tenant"
    )
    parser.add_argument(
        "--scale", help="memories per tenant, comma-separated (e.g. 100k or 1m); 10 tenants each"
    )
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--queries", type=int, help="search latency queries per mode")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(SECTIONS + ON_REQUEST)}")
    parser.add_argument("--bench-dir", type=Path, default=REPO / ".bench")
    parser.add_argument("--scifact-dir", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    parser.add_argument(
        "--scifact-split",
        default="test",
        choices=("test", "train"),
        help="qrels to score (report on test; tune on train)",
    )
    parser.add_argument(
        "--dev-split",
        default="dev",
        choices=tuple(dev.SPLITS),
        help="conversational set: dev (settings are chosen on it) or held-out (run once per final setting)",
    )
    parser.set_defaults(profile="quick")
    args = parser.parse_args(argv)
    args.options = dict(PROFILES[args.profile])
    if args.scale:
        args.options["scales"] = [
            synthetic.human_count(synthetic.parse_count(s)) for s in args.scale.split(",")
        ]
        args.profile = "scale-" + "-".join(args.options["scales"]).lower()
    if args.queries:
        args.options["queries"] = args.queries
    args.sections = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = args.sections - set(SECTIONS + ON_REQUEST)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS + ON_REQUEST)}")
    if "tuning" in args.sections:
        args.scifact_split = "train"  # settings are chosen on train, never on test
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    bench_dir: Path = args.bench_dir.resolve()
    bench_dir.mkdir(parents=True, exist_ok=True)
    from engram import deps
    from engram.memories.search.service import MemorySearch
    from engram.providers.local_embeddings import LocalEmbedder

    embedder = LocalEmbedder(model_dir=bench_dir / "models")
    result = report.Report(
        profile=args.profile,
        meta={
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "options": args.options,
            "machine": {
                "cpus": _cpus(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            },
            "data": "synthetic clustered 384-d unit vectors, pseudo-word texts (tests/bench/synthetic.py); "
            "SciFact with the local model; a generated PDF (tests/bench/sample_pdf.py)",
        },
    )
    handlers = harness.Handlers()
    corpus = scifact.load_corpus(args.scifact_dir, args.scifact_split) if args.scifact_dir.is_dir() else None
    claims = list(corpus.queries.values()) if corpus else ["how do tenants stay isolated"] * 100

    if "coldstart" in args.sections:
        log("cold start: importing each handler in fresh interpreters")
        result.extend(coldstart.import_times(REPO))
        result.extend(coldstart.package_sizes(REPO))

    wrote = False
    for scale in args.options["scales"]:
        if not args.sections & {"latency", "recall", "writes"}:
            break
        spec = synthetic.Spec(per_tenant=synthetic.parse_count(scale), tenants=args.tenants)
        settings = loader.bench_settings(bench_dir / f"db-{scale.lower()}", bench_dir / "models")
        log(f"scale {scale}/tenant: starting the database in {settings.data_dir}")
        with loader.bench_database(settings) as local:
            dataset = loader.ensure_dataset(local, spec, log)
            log(f"  prewarmed the table and its indexes in {loader.prewarm(local):.0f}s")
            deps.install(deps.Deps(settings=settings, database=local.app, embedder=embedder))
            world = synthetic.World(spec)
            result.extend(writes.bulk_load_figures(dataset))
            if "latency" in args.sections:
                result.extend(
                    latency.search_latency(
                        handlers, world, dataset, args.options["queries"], log, local.admin_conninfo
                    )
                )
                result.extend(
                    latency.filtered_latency(handlers, world, dataset, args.options["queries"] // 2, log)
                )
            if "recall" in args.sections:
                forced = MemorySearch(
                    local.app,
                    embedder,
                    exact_scan_threshold=0,
                    ef_search=settings.hnsw_ef_search,
                    max_scan_tuples=settings.hnsw_max_scan_tuples,
                )
                result.extend(
                    recall.filtered_recall(
                        handlers,
                        world,
                        dataset,
                        local.admin_conninfo,
                        forced,
                        args.options["recall_queries"],
                        log,
                    )
                )
                result.extend(
                    recall.container_recall(
                        handlers, world, dataset, local.admin_conninfo, args.options["recall_queries"], log
                    )
                )
            if "writes" in args.sections and not wrote:
                result.extend(
                    writes.write_latency(
                        handlers, local, claims[: args.options["writes"]], embedder.embed_query, log
                    )
                )
                result.extend(writes.sentence_embedding(embedder.embed_documents, claims[:100]))
                result.extend(
                    text_writers.concurrent_writers(
                        local, claims[:500], args.options["text_writers_seconds"], log
                    )
                )
                wrote = True
    if "pipeline" in args.sections:
        result.extend(_pipeline(bench_dir, embedder, handlers, args.options["pdf_pages"]))
    if "context" in args.sections:
        result.extend(_context(bench_dir, embedder, handlers, args.options["context_calls"]))

    if "latency" in args.sections:
        result.extend(latency.embedding_latency(embedder.embed_query, claims[:100]))
    if "concurrency" in args.sections:
        result.extend(concurrency.concurrency(bench_dir, args.options["concurrency_seconds"], log))
    if "graph" in args.sections:
        result.extend(_graph(bench_dir, embedder, handlers, args.options))
    if args.sections & {"scifact", "tuning"}:
        if corpus is None:
            log(f"scifact: {args.scifact_dir} not found; skipped")
        else:
            result.extend(_scifact(corpus, bench_dir, embedder, handlers, args.sections))
    if "dev" in args.sections:
        result.extend(_dev(bench_dir, embedder, handlers, args.dev_split))
    if "hnsw" in args.sections:
        result.extend(hnsw.ef_recall(bench_dir, args.scifact_dir, embedder, log))

    result.meta["seconds"] = round(time.perf_counter() - started, 1)
    result.meta["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    previous, previous_name = report.previous_figures(bench_dir / "history", args.profile)
    latest, archived = report.save(result, bench_dir)
    machine = result.meta["machine"]
    print(
        f"\nEngram bench ({args.profile}), {result.meta['seconds']:.0f}s on {machine['cpus']} CPUs; "
        f"load average (5 min) {machine['load_average_at_start'][1]:.1f} at start, "
        f"{machine['load_average_at_end'][1]:.1f} at end"
        + (f"; 'previous' is {previous_name}" if previous_name else "")
    )
    print(report.render(result, previous))
    print(
        f"\nwritten: {latest.relative_to(REPO) if latest.is_relative_to(REPO) else latest} "
        f"and {archived.name}"
    )
    return 0


def _scifact(
    corpus: scifact.Corpus, bench_dir: Path, embedder: Any, handlers: harness.Handlers, sections: set[str]
) -> list[Any]:
    from engram import deps
    from engram.memories.search.service import MemorySearch

    log(f"scifact: {len(corpus.ids)} documents, {len(corpus.queries)} {corpus.split} queries")
    # The model and how it turns texts into vectors (LocalEmbedder.revision: windows of a long text).
    slug = f"{embedder.model_id.replace('/', '_')}-{embedder.revision}"
    vectors = scifact.cached_embeddings(
        bench_dir / "cache",
        f"scifact-corpus-{corpus.digest}-{slug}",
        corpus.texts,
        embedder.embed_documents,
        log,
    )
    qids = list(corpus.queries)
    qvectors = scifact.cached_embeddings(
        bench_dir / "cache",
        f"scifact-queries-{corpus.split}-{corpus.digest}-{slug}",
        [corpus.queries[q] for q in qids],
        embedder.embed_documents,
        log,
    )
    settings = loader.bench_settings(bench_dir / "db-scifact", bench_dir / "models")
    with loader.bench_database(settings) as local:
        tenant_id = scifact.ensure_loaded(local, corpus, vectors, embedder.model_id, embedder.revision)
        deps.install(deps.Deps(settings=settings, database=local.app, embedder=embedder))
        by_query = dict(zip(qids, np.asarray(qvectors), strict=True))
        figures = []
        if "scifact" in sections:
            figures += scifact.quality(handlers, corpus, tenant_id, by_query, log)
        if "tuning" in sections:
            search = MemorySearch(
                local.app,
                embedder,
                exact_scan_threshold=settings.exact_scan_threshold,
                ef_search=settings.hnsw_ef_search,
                max_scan_tuples=settings.hnsw_max_scan_tuples,
            )
            figures += tuning.tune(handlers, corpus, search, tenant_id, by_query, log)
        return figures


def _dev(bench_dir: Path, embedder: Any, handlers: harness.Handlers, split: str) -> list[Any]:
    from engram import deps

    log(f"dev: the conversational dev set ({split} split), written and searched through the API")
    settings = loader.bench_settings(bench_dir / "db-dev", bench_dir / "models")
    with loader.bench_database(settings) as local:
        deps.install(deps.Deps(settings=settings, database=local.app, embedder=embedder))
        return dev.dev_recall(handlers, local, split, log)


def _pipeline(bench_dir: Path, embedder: Any, handlers: harness.Handlers, pages: int) -> list[Any]:
    """Its own small database: the steps do not need the synthetic data sets, and `--only pipeline`
    should not have to load them."""
    log(f"pipeline: a generated {pages}-page PDF through extract, chunk and embed")
    settings = loader.bench_settings(bench_dir / "db-pipeline", bench_dir / "models")
    with loader.bench_database(settings) as local:
        figures = pipeline.pipeline_throughput(handlers, local, embedder, bench_dir / "pipeline", log, pages)
        log("pipeline: extract per type of file")
        return figures + extract_types.extract_by_type(handlers, local, embedder, log)


def _context(bench_dir: Path, embedder: Any, handlers: harness.Handlers, calls: int) -> list[Any]:
    """Its own small database, as the pipeline's: the context call needs a conversation, not the
    synthetic data sets."""
    from engram import deps

    log("context: the travel agent's conversation, then POST /v1/context")
    settings = loader.bench_settings(bench_dir / "db-context", bench_dir / "models")
    with loader.bench_database(settings) as local:
        deps.install(deps.Deps(settings=settings, database=local.app, embedder=embedder))
        return context.context_latency(handlers, local, calls, log)


def _graph(bench_dir: Path, embedder: Any, handlers: harness.Handlers, options: dict[str, Any]) -> list[Any]:
    """Its own database: one tenant's large graph, independent of the memory data sets."""
    from engram import deps

    spec: graph.GraphSpec = options["graph"]
    settings = loader.bench_settings(bench_dir / f"db-graph-{spec.entities // 1000}k", bench_dir / "models")
    log(f"graph: {spec.name} in {settings.data_dir}")
    with loader.bench_database(settings) as local:
        dataset = graph.ensure_graph(local, spec, log)
        log(f"  prewarmed the graph tables in {loader.prewarm(local, graph.WARM_TABLES):.0f}s")
        deps.install(deps.Deps(settings=settings, database=local.app, embedder=embedder))
        return graph.graph_walks(handlers, local.app, dataset, options["graph_queries"], log)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


if __name__ == "__main__":
    sys.exit(main())
