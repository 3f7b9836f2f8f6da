"""engram.db.vectors: the shorter text form of a vector stores exactly what the long one did."""

from __future__ import annotations

import random

import psycopg
import pytest

from engram.db.vectors import vector_literal, vector_sql
from engram.errors import InvalidInput
from engram.local.stack import LocalDatabase


def test_the_short_form_reads_back_as_the_same_vector_as_each_doubles_repr(local_db: LocalDatabase) -> None:
    # Given doubles of every magnitude an embedding or a user's vector may hold
    rng = random.Random(7)
    vector = [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(384)]
    long_form = "[" + ",".join(repr(x) for x in vector) + "]"
    # When pgvector reads both forms
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        same = conn.execute(
            "SELECT %s::vector = %s::vector, %s::vector::text = %s::vector::text",
            (vector_literal(vector), long_form, vector_literal(vector), long_form),
        ).fetchone()
        constant = conn.execute(
            psycopg.sql.SQL("SELECT {}::vector = %s::vector").format(vector_sql(vector)), (long_form,)
        ).fetchone()
    # Then it stores the same single-precision values, in less text
    assert same == (True, True)
    assert constant == (True,)
    assert len(vector_literal(vector)) < len(long_form)


def test_a_value_beyond_single_precision_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="single-precision"):
        vector_literal([1e39, 0.0])
