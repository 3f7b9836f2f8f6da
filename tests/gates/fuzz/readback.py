"""Stored as sent: after a 2xx write, read the item back through the API and compare it with what was
sent. Which read, and which fields, come from the OpenAPI document alone, so a new route is covered
as soon as it is documented:

- the read is the GET of the write's own path when that path names an item (PUT /v1/working/{scope}/
  {key}, PATCH /v1/memories/{id}), else the GET of `<path>/{p}` or `<parent path>/{p}` whose `p` the
  answer holds (POST /v1/memories -> GET /v1/memories/{id}; POST /v1/memories/upsert -> the same);
- every field sent in the body that the read's schema also has must come back equal: timestamps as
  the same instant (they come back in UTC), typed objects field by field, free JSON (metadata,
  values) exactly, numbers as the decimals JSON writes (1.5e3 is 1500); a null sent is not compared
  (it means "not given" as often as "none");
- every field of the write's answer must equal the stored one, unless the write was accepted (202)
  and work goes on after it;
- the read passes on the `user_id`/`agent_id` the write named (a private item is theirs);
- a write whose item expired at once (`expires_at` in the past) or that another writer changed
  meanwhile (another `version`) is not compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import quote

WRITES = ("post", "put", "patch")
_REF = "#/components/schemas/"
_PARTY_PARAMETERS = ("user_id", "agent_id")


@dataclass(frozen=True)
class Exchange:
    """A write as sent (`path` with its parameters filled in) and its answer."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int
    answer: Any


@dataclass(frozen=True)
class Read:
    path: str
    query: dict[str, str] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=dict)  # the read's 200 body


@dataclass(frozen=True)
class _Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    spec: dict[str, Any]


def _regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$")


class Readback:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
        self.operations = [
            _Operation(method, template, _regex(template), spec)
            for template, ops in document["paths"].items()
            for method, spec in ops.items()
        ]

    # --- which read ----------------------------------------------------------------------------

    def plan(self, sent: Exchange) -> Read | None:
        """The GET that shows what this 2xx write stored, or None when there is none to compare."""
        if (
            sent.method.lower() not in WRITES
            or not 200 <= sent.status < 300
            or not isinstance(sent.answer, dict)
        ):
            return None
        if _expired_at_once(sent.body):
            return None
        write = self._find(sent.method.lower(), sent.path)
        if write is None:
            return None
        read = self._read_of(write, sent)
        if read is None:
            return None
        path, operation = read
        return Read(path, self._party(operation, sent), self._success_schema(operation))

    def _find(self, method: str, path: str) -> _Operation | None:
        # A literal segment wins over a parameter (/v1/memories/upsert is not /v1/memories/{id}).
        found = [op for op in self.operations if op.method == method and op.regex.match(path)]
        return min(found, key=lambda op: op.template.count("{"), default=None)

    def _read_of(self, write: _Operation, sent: Exchange) -> tuple[str, _Operation] | None:
        if "{" in write.template:
            same = self._get(write.template)
            if same is not None:
                return sent.path, same
        template, path = write.template, sent.path
        for _ in range(2):  # the write's path, then its parent (/v1/memories/upsert -> /v1/memories)
            for op in self.operations:
                child = re.fullmatch(re.escape(template) + r"/\{(\w+)\}", op.template)
                if op.method == "get" and child:
                    value = sent.answer.get(child.group(1), sent.answer.get("id"))
                    if isinstance(value, str) and value:
                        return f"{path}/{quote(value, safe='')}", op
            if "{" in template.rsplit("/", 1)[-1]:
                break
            template, path = template.rsplit("/", 1)[0], path.rsplit("/", 1)[0]
        return None

    def _get(self, template: str) -> _Operation | None:
        return next((op for op in self.operations if op.method == "get" and op.template == template), None)

    def _party(self, read: _Operation, sent: Exchange) -> dict[str, str]:
        names = {p["name"] for p in read.spec.get("parameters", []) if p.get("in") == "query"}
        body = sent.body if isinstance(sent.body, dict) else {}
        party: dict[str, str] = {}
        for name in _PARTY_PARAMETERS:
            value = sent.query.get(name, body.get(name))
            if name in names and isinstance(value, str) and value:
                party[name] = value
        return party

    def _success_schema(self, operation: _Operation) -> dict[str, Any]:
        media = operation.spec.get("responses", {}).get("200", {}).get("content", {})
        return self.resolve(media.get("application/json", {}).get("schema", {}))

    # --- what differs --------------------------------------------------------------------------

    def differences(self, sent: Exchange, read: Read, stored: Any) -> list[str]:
        """What the stored item says otherwise than the request or the write's answer did."""
        if not isinstance(stored, dict):
            return [f"the read-back of {read.path} is not an object: {str(stored)[:200]}"]
        version = sent.answer.get("version")
        if version is not None and stored.get("version") not in (None, version):
            return []  # another writer changed it in between
        properties = self.resolve(read.schema).get("properties", {})
        found: list[str] = []
        if isinstance(sent.body, dict):
            for name, value in sent.body.items():
                if name in properties and name in stored:
                    found += self._compare(value, stored[name], properties[name], f"sent {name}")
        if sent.status != 202:
            for name, value in sent.answer.items():
                if name in properties and name in stored and not _same_json(value, stored[name]):
                    found.append(f"answered {name}={_show(value)} but stored {name}={_show(stored[name])}")
        return found

    def resolve(self, schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            schema = self.schemas.get(schema["$ref"].removeprefix(_REF), {})
        return schema if isinstance(schema, dict) else {}

    def _branches(self, schema: dict[str, Any]) -> list[dict[str, Any]]:
        schema = self.resolve(schema)
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            return [b for option in options for b in self._branches(option)]
        return [schema]

    def _compare(self, sent: Any, stored: Any, schema: dict[str, Any], where: str) -> list[str]:
        if sent is None:
            return []  # a null in a request means "not given" (or a default) as often as "none"
        branches = self._branches(schema)
        typed = next((b for b in branches if b.get("type") not in (None, "null")), {})
        if typed.get("format") == "date-time" and isinstance(sent, str) and isinstance(stored, str):
            same = _instant(sent) == _instant(stored)
            return [] if same else [f"{where}: sent {sent!r}, stored {stored!r} (another instant)"]
        if typed.get("type") == "object" and typed.get("properties") and isinstance(sent, dict):
            if not isinstance(stored, dict):
                return [f"{where}: sent an object, stored {_show(stored)}"]
            inner = typed["properties"]
            return [
                d
                for key, value in sent.items()
                if key in inner and key in stored
                for d in self._compare(value, stored[key], inner[key], f"{where}.{key}")
            ]
        if typed.get("type") == "array" and isinstance(sent, list) and isinstance(stored, list):
            if len(sent) != len(stored):
                return [f"{where}: sent {len(sent)} items, stored {len(stored)}: {_show(stored)}"]
            items = typed.get("items", {})
            return [
                d
                for i, (a, b) in enumerate(zip(sent, stored, strict=True))
                for d in self._compare(a, b, items, f"{where}[{i}]")
            ]
        if not _same_json(sent, stored):
            return [f"{where}: sent {_show(sent)}, stored {_show(stored)}"]
        return []


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, true is not 1, key order does not count."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        # As decimals, as JSON writes them: 7.790416520417469e+86 is 7790416520417469 and 71 zeros.
        return Decimal(repr(a)) == Decimal(repr(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _instant(text: str) -> datetime | str:
    try:
        value = datetime.fromisoformat(text.upper().replace(" ", "T"))
    except ValueError:
        return text
    return value.astimezone(UTC) if value.tzinfo else value


def _expired_at_once(body: Any) -> bool:
    expires = body.get("expires_at") if isinstance(body, dict) else None
    if not isinstance(expires, str):
        return False
    instant = _instant(expires)
    return isinstance(instant, datetime) and instant.tzinfo is not None and instant <= datetime.now(UTC)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
