"""How the legs' scores become one: the fused score that ranks hybrid results, and the calibrated
score (0-1, a probability of relevance) that hybrid results carry for `score_threshold`.

The fused score is a weighted mean of the legs' own scores, each already 0-1 and absolute (cosine
similarity, BM25 over the best score the query allows, the share of the query's entities a row
mentions): unlike reciprocal-rank fusion, a row that is only the least bad of poor matches does not
score high. The weights were chosen on SciFact's train split, against tuned reciprocal-rank fusion
(`make bench` prints the split beside each setting; tests/bench/tuning.py reruns the choice).
"""

from __future__ import annotations

import math

from psycopg import sql

# Hybrid: fused = VECTOR_WEIGHT * similarity
#               + TEXT_WEIGHT * (BM25 / the best BM25 in the pool)
#               + COVERAGE_WEIGHT * (the share of the query's idf the row's terms carry)
#               + GRAPH_WEIGHT * (the share of the query's entities the row mentions).
# The BM25 part counts the best text match as such whatever its absolute score (long documents
# score low in absolute terms: length normalisation); coverage is absolute, so a row that only shares
# a common word with the query gains little, and one holding every rare word of it gains a lot.
# Chosen on SciFact's train split (nDCG@10, tests/bench/tuning.py; make bench prints the split):
# within 0.003 of the best of the grid, and 0.01 above reciprocal-rank fusion tuned on the same
# split. Cosine similarity's range depends on the model: retune for another default model.
VECTOR_WEIGHT = 0.6
TEXT_WEIGHT = 0.2
COVERAGE_WEIGHT = 0.2
# No benchmark here names entities (SciFact's claims do not): a row that mentions every entity the
# query names gains as much as the pool's best text match that holds every word of the query.
GRAPH_WEIGHT = TEXT_WEIGHT + COVERAGE_WEIGHT

# Logistic calibration of the hybrid fused score, fitted on SciFact's train split with the default
# local model (each claim's top 10, relevant or not): score = 1 / (1 + exp(-(a + b * fused))), a
# probability that the result is relevant. The mapping is monotone, so results stay in fused order.
CALIBRATION = (-10.2, 14.33)
# The floor that lost at most 2% of the relevant results there (make bench measures it on test).
SCIFACT_FLOOR = 0.0102


def fused(
    similarity: sql.Composable | None,
    text: sql.Composable | None,
    coverage: sql.Composable | None,
    graph: sql.Composable | None,
) -> sql.Composable:
    """The fused score over the columns of the pooled rows (None for a leg that did not run). One leg
    alone: its own score (similarity, or the BM25 share of the query's best possible score)."""
    if text is None and graph is None:
        return sql.SQL("coalesce({}, 0)::float8").format(similarity or sql.SQL("NULL"))
    if similarity is None and graph is None:
        return sql.SQL("coalesce({}, 0)::float8").format(text)
    parts: list[sql.Composable] = []
    if similarity is not None:
        parts.append(sql.SQL("{} * coalesce({}, 0)").format(sql.Literal(VECTOR_WEIGHT), similarity))
    if text is not None and coverage is not None:
        parts.append(
            sql.SQL("{} * coalesce({t} / nullif(max({t}) OVER (), 0), 0)").format(
                sql.Literal(TEXT_WEIGHT), t=text
            )
        )
        parts.append(sql.SQL("{} * coalesce({}, 0)").format(sql.Literal(COVERAGE_WEIGHT), coverage))
    if graph is not None:
        parts.append(sql.SQL("{} * coalesce({}, 0)").format(sql.Literal(GRAPH_WEIGHT), graph))
    return sql.SQL("({})::float8").format(sql.SQL(" + ").join(parts))


def calibrated(fused_score: float) -> float:
    a, b = CALIBRATION
    return 1.0 / (1.0 + math.exp(-(a + b * fused_score)))
