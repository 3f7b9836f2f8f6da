"""The benchmark's own arithmetic: percentiles, targets, recall, nDCG, import-time parsing, data,
the generated PDF and the pipeline figures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from uuid import uuid4

import numpy as np
import pymupdf
import pytest

from tests.bench import tuning
from tests.bench.coldstart import heaviest, parse_importtime, total_ms
from tests.bench.pipeline import throughput_figures
from tests.bench.recall import recall_at_k
from tests.bench.report import (
    Figure,
    Report,
    Target,
    format_value,
    percentiles,
    previous_figures,
    render,
    save,
)
from tests.bench.sample_pdf import write_handbook
from tests.bench.scifact import evaluate
from tests.bench.synthetic import SELECTIVITY_TAGS, Spec, World, human_count, parse_count


def test_percentiles_interpolate_between_closest_ranks() -> None:
    samples = [float(x) for x in range(1, 101)]  # 1..100

    p = percentiles(samples)

    assert p[50] == pytest.approx(50.5)
    assert p[95] == pytest.approx(95.05)
    assert p[99] == pytest.approx(99.01)
    assert p == {
        k: pytest.approx(v) for k, v in zip((50, 95, 99), np.percentile(samples, [50, 95, 99]), strict=True)
    }


def test_a_figure_passes_or_misses_its_target_and_without_a_value_is_not_applicable() -> None:
    assert Figure("a", "s", "n", 19.9, "ms", Target("<=", 20)).status == "PASS"
    assert Figure("a", "s", "n", 20.1, "ms", Target("<=", 20)).status == "MISS"
    assert Figure("a", "s", "n", 0.94, "", Target(">=", 0.95)).status == "MISS"
    assert Figure("a", "s", "n", 3.0, "ms").status == "info"
    assert Figure("a", "s", "n", None, "ms", Target("<=", 20)).status == "n/a"


def test_the_table_shows_value_target_status_and_the_previous_run(tmp_path: Path) -> None:
    first = Report(
        "quick", figures=[Figure("search.p95", "latency", "hybrid p95", 25.0, "ms", Target("<=", 20))]
    )
    save(first, tmp_path)
    previous, name = previous_figures(tmp_path / "history", "quick")
    second = Report(
        "quick", figures=[Figure("search.p95", "latency", "hybrid p95", 12.5, "ms", Target("<=", 20))]
    )

    table = render(second, previous)

    row = next(line for line in table.splitlines() if "hybrid p95" in line)
    assert "12.5 ms" in row and "<= 20.0 ms" in row and "PASS" in row and "25.0 ms" in row
    assert name is not None and name.endswith("-quick.json")
    assert (
        json.loads((tmp_path / "latest.json").read_text())["figures"][0]["status"] == "MISS"
    )  # the first run
    assert previous_figures(tmp_path / "history", "full") == ({}, None)


def test_recall_counts_the_true_top_k_that_was_found() -> None:
    truth = [uuid4() for _ in range(10)]

    assert recall_at_k(truth, truth) == 1.0
    assert recall_at_k([*truth[:9], uuid4()], truth) == 0.9
    assert recall_at_k(truth[:3], truth[:3]) == 1.0  # fewer than k rows match the filter at all
    assert recall_at_k([], truth) == 0.0


def test_ndcg_and_recall_match_a_hand_computed_example_and_count_empty_runs_as_zero() -> None:
    qrels = {"q1": {"d1": 1, "d2": 1}, "q2": {"d9": 1}}
    # q1: relevant at ranks 1 and 3 -> DCG = 1 + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3).
    run = {"q1": ["d1", "x", "d2"], "q2": []}

    scores = evaluate(qrels, run)

    q1_ndcg = 1.5 / (1 + 1 / math.log2(3))
    assert scores["ndcg@10"] == pytest.approx(q1_ndcg / 2)
    assert scores["recall@100"] == pytest.approx(0.5)


def test_import_time_lines_are_parsed_with_their_depth() -> None:
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |     json.decoder\n"
        "import time:       200 |        300 |   json\n"
        "import time:      5000 |       5000 |   pydantic\n"
        "import time:       700 |       6000 | handler\n"
    )

    lines = parse_importtime(stderr)

    assert [(line.module, line.depth) for line in lines] == [
        ("json.decoder", 2),
        ("json", 1),
        ("pydantic", 1),
        ("handler", 0),
    ]
    assert total_ms(lines, "handler") == 6.0
    assert heaviest(lines, 1) == [("pydantic", 5.0)]


def test_the_heaviest_imports_are_the_handlers_own_not_the_interpreters_startup() -> None:
    # Given site, which imported the dev venv's editable-install hook before the handler was imported
    stderr = (
        "import time:      9000 |       9000 |   __editable___engram_client_0_1_0_finder\n"
        "import time:       100 |       9100 | site\n"
        "import time:      5000 |       5000 |   pydantic\n"
        "import time:       100 |        100 |     json.decoder\n"
        "import time:       200 |        300 |   json\n"
        "import time:       700 |       6000 | handler\n"
    )

    # When
    top = heaviest(parse_importtime(stderr))

    # Then
    assert top == [("pydantic", 5.0), ("json", 0.3)]


def test_counts_read_and_print_the_same() -> None:
    assert [parse_count(s) for s in ("10k", "100K", "1m", "2500")] == [10_000, 100_000, 1_000_000, 2500]
    assert [human_count(n) for n in (10_000, 1_000_000, 2500)] == ["10K", "1M", "2500"]
    with pytest.raises(ValueError):
        parse_count("10")


def test_each_selectivity_tag_marks_exactly_its_share_of_a_tenant() -> None:
    world = World(Spec(per_tenant=2000, topics=10, subtopics=2, vocabulary=2000))

    batch = world.tenant(0)

    for share, tag in SELECTIVITY_TAGS.items():
        if tag is not None:
            assert sum(tag in tags for tags in batch.tags) == round(2000 * share)
    assert np.allclose(np.linalg.norm(batch.vectors, axis=1), 1.0, atol=1e-5)
    assert world.tenant(0).contents == batch.contents  # seeded: the same data every run


def test_counts_print_as_whole_numbers() -> None:
    assert format_value(73, "chunks") == "73 chunks"
    assert format_value(0.0017, "") == "0.0017"
    assert format_value(0.738, "") == "0.738"
    assert format_value(1460, "chunks") == "1,460 chunks"
    assert format_value(73.0, "s") == "73.0 s"


def test_the_generated_pdf_is_seeded_prose_with_headings(tmp_path: Path) -> None:
    data = write_handbook(tmp_path / "a.pdf", 12)

    with pymupdf.open(stream=data, filetype="pdf") as doc:
        texts = [page.get_text() for page in doc]
    assert len(texts) == 12
    assert texts[0].startswith("Chapter 1: ") and texts[10].startswith("Chapter 2: ")
    assert all(len(text.split()) > 300 for text in texts)  # a full page of prose on every page
    assert len(set(texts)) == 12
    assert write_handbook(tmp_path / "b.pdf", 12) == data  # the same bytes every run
    assert write_handbook(tmp_path / "c.pdf", 12, seed=6) != data


def test_pipeline_throughput_is_pages_over_the_three_steps_and_has_no_target() -> None:
    figures = {f.key: f for f in throughput_figures(50, 73, {"extract": 1.0, "chunk": 0.5, "embed": 3.5})}

    assert figures["pipeline.pages_per_s"].value == pytest.approx(10.0)
    assert figures["pipeline.embed.seconds"].value == 3.5
    assert figures["pipeline.chunks"].value == 73
    assert {f.status for f in figures.values()} == {"info"}


def test_the_floor_loss_is_the_highest_target_that_held_out_claims_keep_under_the_bound() -> None:
    # Given 300 claims whose relevant results mostly score high, but a few in every hundred score low
    rng = np.random.default_rng(3)
    pooled, qrels = {}, {}
    for claim in range(300):
        relevant = rng.random(10) < 0.2
        fused = np.where(relevant, rng.uniform(0.5, 1.0, 10), rng.uniform(0.0, 0.6, 10))
        fused[relevant & (rng.random(10) < 0.03)] = rng.uniform(0.0, 0.3)
        qid = f"q{claim}"
        ids = [f"{qid}-d{i}" for i in range(10)]
        pooled[qid] = tuning.Pooled(ids, fused, np.zeros(10), np.zeros(10), np.zeros(10), np.zeros(10))
        qrels[qid] = {ids[i]: 1 for i in np.flatnonzero(relevant)}

    # When the loss target is chosen over repeated splits (the similarity alone is the fused score)
    chosen, misses = tuning._floor_loss(pooled, (1.0, 0.0, 0.0), qrels)

    # Then it is the highest target whose held-out parts stay under the bound often enough
    assert misses[chosen] <= tuning.FLOOR_MISS_SHARE
    assert all(misses[target] > tuning.FLOOR_MISS_SHARE for target in tuning.FLOOR_LOSSES if target > chosen)
    assert set(misses) == set(tuning.FLOOR_LOSSES)
