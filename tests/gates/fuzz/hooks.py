"""The fuzz gate's own check, loaded into schemathesis with SCHEMATHESIS_HOOKS=tests.gates.fuzz.hooks.

`stored_as_sent`: after every 2xx write, the item is read back through the API as the writer (it must
hold what was sent: tests.gates.fuzz.readback) and as the second tenant (it must not see it)."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import schemathesis

from tests.gates.fuzz.readback import Exchange, Readback

KEY_HEADER = "x-api-key"
PEER_KEY_ENV = "ENGRAM_FUZZ_PEER_KEY"  # the second tenant's key


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """A body of JSON Lines (POST /v1/import): generated text or bytes as they are, anything else one
    JSON line per item."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    items = value if isinstance(value, list) else [value]
    return "".join(json.dumps(item) + "\n" for item in items).encode()


@cache
def _readback(openapi_url: str) -> Readback:
    return Readback(httpx.get(openapi_url, timeout=60).json())


def exchange_of(
    method: str, url: str, body: bytes | str | None, status: int, answer: bytes
) -> Exchange | None:
    """A sent request and its answer, as the read-back compares them (None: not JSON)."""
    parts = urlsplit(url)
    try:
        sent = json.loads(body) if body else None
        answered = json.loads(answer) if answer else None
    except (ValueError, UnicodeDecodeError, RecursionError):  # not JSON, or deeper than it reads
        return None
    return Exchange(method, parts.path, dict(parse_qsl(parts.query)), sent, status, answered)


def read_back(base_url: str, readback: Readback, sent: Exchange, key: str, peer_key: str | None) -> list[str]:
    """What is wrong with the item this write stored, read as its writer and as the other tenant."""
    read = readback.plan(sent)
    if read is None:
        return []
    with httpx.Client(base_url=base_url, timeout=60) as http:
        mine = http.get(read.path, params=read.query, headers={KEY_HEADER: key})
        if mine.status_code != 200:
            return [
                f"{sent.method} {sent.path} answered {sent.status}, but GET {read.path} answered "
                f"{mine.status_code}: {mine.text[:300]}"
            ]
        problems = [f"{sent.method} {sent.path}: {d}" for d in readback.differences(sent, read, mine.json())]
        if peer_key:
            theirs = http.get(read.path, params=read.query, headers={KEY_HEADER: peer_key})
            if theirs.status_code != 404:
                problems.append(
                    f"the other tenant's GET {read.path} answered {theirs.status_code}, not 404: "
                    f"{theirs.text[:300]}"
                )
    return problems


@schemathesis.check
def stored_as_sent(ctx: Any, response: Any, case: Any) -> bool | None:
    request = response.request
    if request.method.upper() not in ("POST", "PUT", "PATCH") or not 200 <= response.status_code < 300:
        return None
    key = request.headers.get(KEY_HEADER)
    content_type = request.headers.get("content-type", "")
    if not key or not content_type.startswith("application/json"):
        return None
    sent = exchange_of(request.method, request.url, request.body, response.status_code, response.content)
    if sent is None:
        return None
    parts = urlsplit(request.url)
    base_url = f"{parts.scheme}://{parts.netloc}"
    problems = read_back(
        base_url, _readback(base_url + "/openapi.json"), sent, key, os.environ.get(PEER_KEY_ENV)
    )
    if problems:
        raise AssertionError("stored otherwise than sent:\n" + "\n".join(problems))
    return True
