"""Vectors in pgvector's text form: the one place a vector becomes SQL text.

pgvector stores single-precision floats, so each value is rounded to float32 first and written with
9 significant digits, the fewest that always read back as the same float32: the stored vector is the
one `repr()` of each double gave, in about 60% of the text (a 384-d query is ~5 KB, not ~8 KB, and
is parsed once per statement that names it, several times per search).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import cache

from psycopg import sql

from engram.errors import InvalidInput


@cache
def _template(dimensions: int) -> str:
    return "[" + ",".join(["%.9g"] * dimensions) + "]"


def vector_literal(vector: Sequence[float]) -> str:
    """'[x1,x2,...]' for a `vector` parameter or literal."""
    n = len(vector)
    try:
        single = struct.unpack(f"<{n}f", struct.pack(f"<{n}f", *vector))
    except (OverflowError, struct.error) as exc:
        raise InvalidInput(f"a vector value is out of single-precision range: {exc}") from exc
    return _template(n) % single


def vector_sql(vector: Sequence[float]) -> sql.SQL:
    """The vector as a quoted SQL constant (untyped: cast it where it is used), made once per query
    rather than once per place a statement names it. Safe as raw SQL: the text holds only digits,
    signs, '.', 'e', ',', brackets and 'nan'/'inf', never a quote."""
    return sql.SQL("'" + vector_literal(vector) + "'")
