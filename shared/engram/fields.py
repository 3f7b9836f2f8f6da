"""What a request field accepts: the rules every request model shares, in one place.

A value that cannot be stored exactly as sent is refused with a 422 naming the field, never rewritten:

- strings hold no NUL character (PostgreSQL text and jsonb cannot store one);
- numbers are JSON numbers: never `true`/`false` or a string, and within a double's range: one too
  large (`1e400`) or too small to be anything but 0.0 (`1e-400`, refused where the body is decoded:
  `underflow_parser`); digits past a double's precision are rounded to the nearest double, as every JSON
  reader does (RFC 8259 §6);
- booleans are `true` or `false`, in a body and in a query string alike;
- timestamps are ISO 8601 strings with a UTC offset (a number is not a timestamp), to the microsecond,
  and their instant lies within what PostgreSQL stores and the API returns in any time zone;
- JSON documents (metadata, working values) nest at most `MAX_JSON_DEPTH` levels and hold only finite
  numbers and NUL-free strings and keys;
- vectors hold finite numbers within single precision (`float4`, what pgvector stores);
- labels (tags, filenames, titles, content types, URLs) and ids (user_id, agent_id, conversation_id)
  do not start or end with whitespace: nothing is trimmed.

The OpenAPI document states what JSON Schema can say (`pattern`, bounds); the validators say the rest.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    Field,
    JsonValue,
    Strict,
    StrictBool,
    ValidationInfo,
)

NO_NUL = r"^[^\x00]*$"
# Starts and ends with something other than whitespace, and holds no NUL.
NO_NUL_TRIMMED = r"^[^\s\x00](?:[^\x00]*[^\s\x00])?$"
MAX_JSON_DEPTH = 32
FLOAT4_MAX = 3.4028234663852886e38
# The instant must be representable between years 1 and 9999 wherever it is shown: a day of margin
# on each side keeps it so in every UTC offset.
MIN_TIMESTAMP = datetime(1, 1, 2, tzinfo=UTC)
MAX_TIMESTAMP = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.(?P<fraction>\d+))?)?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def no_nul(value: str) -> str:
    """Text PostgreSQL can store as sent: no NUL, no lone UTF-16 surrogate (JSON's "\\ud800")."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters (\\u0000)")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("must be valid Unicode: it holds a lone surrogate (\\ud800-\\udfff)") from None
    return value


def _storable(text: str, where: str) -> None:
    try:
        no_nul(text)
    except ValueError as exc:
        raise ValueError(f"{where} {exc}") from None


def not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


def not_null(value: Any, info: ValidationInfo) -> Any:
    """A field validator for a field a PATCH may leave out but not set to null (the 422 names the field,
    as a model validator's could not): `_not_null = field_validator("a", "b")(not_null)`."""
    if value is None:
        raise ValueError(f"cannot be null: leave {info.field_name} out to keep it as it is")
    return value


def trimmed(value: str) -> str:
    if value != value.strip():
        raise ValueError("must not start or end with whitespace (nothing is trimmed: send it as meant)")
    return value


NOT_A_NUMBER = "must be a JSON number (not true/false, not a string)"
NOT_FINITE = "must be a finite number"
# pydantic's own errors that mean the same, by their type: the API words them as above.
NATIVE_MESSAGES = {"float_type": NOT_A_NUMBER, "finite_number": NOT_FINITE}


EMPTY = "must not be empty"
EMPTY_PARAMETER = "must not be empty (leave the parameter out, or give it a value)"
# The errors an empty string gets from a bound on its length or from a pattern: said as empty.
_EMPTY_TYPES = frozenset({"too_short", "string_too_short", "string_pattern_mismatch"})
# Bounds on a length: pydantic words a string's bound checked after its validators (an Identifier's, a
# Tag's, a query parameter's Query(max_length=...)) as a list's ("at most 255 items").
_LENGTH_BOUNDS = {"too_short": ("min_length", "at least"), "too_long": ("max_length", "at most")}


def error_message(error: Mapping[str, Any]) -> str:
    """One of pydantic's errors in the API's words, whichever validator found it (a vector's numbers:
    pydantic's own): what the API's 422s, an import's refusals and a PUT that creates say. An empty
    string that must not be is said to be empty (a query parameter's, `?user_id=`, with how to mend
    it), and a string's length is counted in characters."""
    kind, value = str(error.get("type")), error.get("input")
    native = NATIVE_MESSAGES.get(kind)
    if native is None and value == "" and kind in _EMPTY_TYPES:
        native = EMPTY_PARAMETER if tuple(error.get("loc", ()))[:1] == ("query",) else EMPTY
    elif native is None and isinstance(value, str) and kind in _LENGTH_BOUNDS:
        native = _characters(error, value)
    return native or str(error.get("msg", "invalid value")).removeprefix("Value error, ")


def _characters(error: Mapping[str, Any], value: str) -> str | None:
    name, bound = _LENGTH_BOUNDS[str(error.get("type"))]
    limit = (error.get("ctx") or {}).get(name)
    if not isinstance(limit, int):
        return None
    return f"must have {bound} {limit} character{'' if limit == 1 else 's'}, not {len(value)}"


def _json_number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(NOT_A_NUMBER)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(NOT_FINITE)
    return value


# A number that can underflow has an exponent of -100 or below, or some 300 zeros after its point: only a
# body holding one is decoded through underflow_parser (a Python call per number), so that a search's
# 384-number vector is read at the C decoder's speed. Each pattern starts with a literal, which re finds
# with a fast scan (a character class first made the check cost more than the decoding: 0.1 ms).
_SMALL_EXPONENT = re.compile(r"e-0*[1-9][0-9]{2}")
_SMALL_EXPONENT_UPPER = re.compile(r"E-0*[1-9][0-9]{2}")
_MANY_ZEROS = "0" * 300


def may_underflow(text: str) -> bool:
    return bool(
        _SMALL_EXPONENT.search(text)
        or ("E-" in text and _SMALL_EXPONENT_UPPER.search(text))
        or _MANY_ZEROS in text
    )


@dataclass(frozen=True, eq=False)
class InexactNumber:
    """A JSON number a double can hold only as 0.0, left in the decoded body where it stood, to be named."""

    text: str

    @property
    def problem(self) -> str:
        return f"{self.text} is too small for a double: it would be stored as 0.0"


def underflow_parser(inexact: list[InexactNumber]) -> Callable[[str], Any]:
    """json.loads' parse_float: the double a JSON number (one with a fraction or an exponent) stands for,
    or, when that is 0.0 for a number that is not zero, an InexactNumber, also appended to `inexact`."""

    def parse(text: str) -> Any:
        value = float(text)
        if value != 0.0 or not any(c in "123456789" for c in text.split("e")[0].split("E")[0]):
            return value
        found = InexactNumber(text)
        inexact.append(found)
        return found

    return parse


def _query_flag(value: Any) -> Any:
    if isinstance(value, bool):  # the parameter's default, or a Python caller
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("must be true or false")


def _timestamp_text(value: Any) -> Any:
    if isinstance(value, datetime):  # from Python callers; JSON always sends a string
        return value
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string with a UTC offset, e.g. 2025-03-05T09:30:00Z")
    found = _RFC3339.fullmatch(value)
    if found is None:
        raise ValueError("must be an ISO 8601 date-time with a UTC offset, e.g. 2025-03-05T09:30:00Z")
    if len((found.group("fraction") or "").rstrip("0")) > 6:
        raise ValueError("is more precise than a microsecond: timestamps are stored to the microsecond")
    return value


def utc_text(moment: datetime) -> str:
    """A timestamp as the API writes one: ISO 8601 in UTC, with a Z."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def timestamp_in_range(value: datetime) -> datetime:
    """The instant, in UTC: what is stored and returned. An offset PostgreSQL cannot read (beyond
    15:59; RFC 3339 allows up to 23:59) then never reaches it."""
    try:
        instant = value.astimezone(UTC)
    except OverflowError:
        return _out_of_range()
    if not MIN_TIMESTAMP <= instant <= MAX_TIMESTAMP:
        return _out_of_range()
    return instant


def _out_of_range() -> datetime:
    raise ValueError(
        "is out of range: timestamps lie between 0001-01-02T00:00:00Z and 9999-12-30T23:59:59.999999Z"
    )


def check_json(value: Any) -> Any:
    """A JSON document as stored in jsonb: finite numbers, no NUL in strings or keys, nested at most
    MAX_JSON_DEPTH levels. Walked iteratively, so a deep document cannot exhaust the stack."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise ValueError(f"{path or 'the value'} is nested deeper than {MAX_JSON_DEPTH} levels")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(key, str):
                    _storable(key, f"a key of {path or 'the value'}")
                step = f"[{key}]" if isinstance(key, int) else (f".{key}" if path else str(key))
                stack.append((child, depth + 1, path + step))
        elif isinstance(node, str):
            _storable(node, path or "the value")
        elif isinstance(node, float) and not math.isfinite(node):
            raise ValueError(f"{path or 'the value'} is not a finite number")
    return value


# --- the types request models use --------------------------------------------------------------

NoNul = (AfterValidator(no_nul), Field(json_schema_extra={"pattern": NO_NUL}))
"""Annotated[str, *NoNul, ...]: refuses NUL with a clear message, and says so in the OpenAPI document."""

Text = Annotated[str, *NoNul]
"""Any string without NUL; add its own bounds where it is used."""
Filled = Annotated[str, *NoNul, AfterValidator(not_blank)]
"""A string with more than whitespace in it (a name to look up); add its own bounds where it is used."""
Number = Annotated[float, BeforeValidator(_json_number)]
"""A finite JSON number; an integer is a number too."""
Integer = Annotated[int, BeforeValidator(_json_number)]
"""A JSON integer (5.0 is 5); never true/false or a string."""
Flag = StrictBool
"""true or false, nothing else."""
QueryFlag = Annotated[bool, BeforeValidator(_query_flag)]
"""A boolean query parameter: the text `true` or `false`, nothing else (pydantic alone also reads yes,
1, on, t, y and True as true: a `?confirm=yes` would delete a container)."""
Timestamp = Annotated[AwareDatetime, BeforeValidator(_timestamp_text), AfterValidator(timestamp_in_range)]
JsonDocument = Annotated[JsonValue, BeforeValidator(check_json)]
JsonObject = Annotated[dict[str, JsonValue], BeforeValidator(check_json)]
Float4 = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=-FLOAT4_MAX, le=FLOAT4_MAX)]
"""A number pgvector stores as it is (single precision): beyond this range it cannot. Number's rules,
checked by pydantic itself (strict: no true/false, no string; finite), because a vector has hundreds of
them: 384 took 0.6 ms through Number's Python validator, and take 0.01 ms this way."""


def has_direction(vector: list[float]) -> list[float]:
    if not any(vector):
        raise ValueError("is all zeros: a vector with no direction has no cosine similarity to anything")
    return vector


Float4Vector = list[Float4]
"""A vector as pgvector stores it (an export's, restored as it was)."""
DirectedVector = Annotated[Float4Vector, AfterValidator(has_direction)]
"""A vector a request sends: one with no direction is refused (a backup that holds one still restores)."""
Label = Annotated[
    str, AfterValidator(no_nul), AfterValidator(trimmed), Field(json_schema_extra={"pattern": NO_NUL_TRIMMED})
]
"""A short name (tag, filename, title, an id such as user_id): no NUL, no whitespace at either end."""


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]')


def field_nested_too_deep(text: str) -> str | None:
    """The top-level field of a JSON body under which values nest deeper than MAX_JSON_DEPTH levels
    ("body" when the body itself is an array), or None. For bodies too deep for the JSON decoder."""
    depth, key, last = 0, None, None
    for token in _JSON_TOKENS.finditer(text):
        symbol = token.group()
        if symbol in ("{", "["):
            depth += 1
            if depth > MAX_JSON_DEPTH + 1:  # + 1: the body itself
                return key or "body"
        elif symbol in ("}", "]"):
            depth -= 1
        elif symbol == ":":
            if depth == 1 and last is not None:
                key = last
        else:
            try:
                last = json.loads(symbol)
            except ValueError:
                last = symbol.strip('"')
    return None
