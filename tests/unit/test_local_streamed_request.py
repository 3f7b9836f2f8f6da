"""The local front's streamed request bodies (a route marked `streamed_body`: POST /v1/import), driven as
Hypercorn drives the ASGI app: the body goes on to the invocation piece by piece; its limit is counted on the
bytes received, whatever the headers say; and the lines of a body in pieces are the lines of the whole."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from engram.api.streaming import lines_of, read_whole
from engram.errors import InvalidInput, PayloadTooLarge
from engram.limits import MAX_REQUEST_BYTES
from engram.local.asgi import GatewayApp, StreamedResponse
from engram.local.channel import HttpCall
from engram.local.gateway import HttpResponse, json_response


class Recorder:
    """An invocation that reads its streamed body to the end, noting each piece (and how it ended)."""

    def __init__(self) -> None:
        self.calls: list[HttpCall] = []
        self.pieces: list[bytes] = []
        self.broke: Exception | None = None

    async def __call__(
        self, call: HttpCall, body: AsyncIterator[bytes] | None
    ) -> HttpResponse | StreamedResponse:
        self.calls.append(call)
        if body is not None:
            try:
                async for piece in body:
                    self.pieces.append(piece)
            except Exception as exc:
                self.broke = exc
                raise
        return json_response(200, {"pieces": len(self.pieces)})


def _exchange(
    app: GatewayApp, path: str, pieces: list[bytes], headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, dict[str, Any]]:
    """One request whose body comes in `pieces` (as a chunked body does); the status and JSON answered."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
        for i, piece in enumerate(pieces)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/x-ndjson"), *(headers or [])],
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


def test_an_import_body_goes_on_in_pieces_past_the_limit_of_other_routes() -> None:
    # Given: an import body of 7 MB in 1 MB pieces
    invoke = Recorder()
    pieces = [b"x" * (1024 * 1024)] * 7

    # When
    status, _ = _exchange(GatewayApp(invoke), "/v1/import", pieces)

    # Then: the invocation had them one by one, the call itself carrying none
    assert status == 200 and invoke.pieces == pieces
    assert invoke.calls[0].streamed and invoke.calls[0].body == b""


def test_a_streamed_body_past_its_limit_is_refused_on_the_bytes_received() -> None:
    # Given: a front whose import limit is 1,000 bytes, and a body of 1,200 sent in pieces with no length
    invoke = Recorder()

    # When
    status, answer = _exchange(
        GatewayApp(invoke, streamed_limit=1000), "/v1/import", [b"a" * 600, b"b" * 600]
    )

    # Then: 413, and the invocation saw its body break off after what the limit allowed
    assert status == 413 and answer["error"]["code"] == "payload_too_large"
    assert invoke.pieces == [b"a" * 600] and invoke.broke is not None


def test_a_declared_length_past_the_limit_is_refused_before_any_invocation() -> None:
    invoke = Recorder()
    headers = [(b"content-length", b"5000")]
    status, _ = _exchange(GatewayApp(invoke, streamed_limit=1000), "/v1/import", [b"a" * 10], headers)
    assert status == 413 and invoke.calls == []


def test_other_routes_keep_their_limit() -> None:
    invoke = Recorder()
    pieces = [b"x" * (1024 * 1024)] * (MAX_REQUEST_BYTES // (1024 * 1024) + 1)
    status, answer = _exchange(GatewayApp(invoke), "/v1/memories", pieces)
    assert status == 413 and answer["error"]["code"] == "payload_too_large" and invoke.calls == []


def test_lines_of_a_body_in_pieces_are_the_lines_of_the_whole() -> None:
    whole = "first line\nsecond, é split\n\nlast without a newline".encode()
    for size in (1, 2, 3, 7, len(whole)):
        pieces = [whole[i : i + size] for i in range(0, len(whole), size)]
        assert list(lines_of(pieces)) == whole.decode().splitlines(keepends=True)
    with pytest.raises(InvalidInput, match="line 2 is not UTF-8"):
        list(lines_of([b"ok\n", b"\xff\xfe\n"]))


def test_a_body_in_pieces_read_whole_is_refused_past_its_limit() -> None:
    piece = b"x" * (1024 * 1024)
    at_the_limit = [piece] * (MAX_REQUEST_BYTES // len(piece))
    assert read_whole(at_the_limit) == b"".join(at_the_limit)
    with pytest.raises(PayloadTooLarge, match="6 MB"):
        read_whole([*at_the_limit, b"x"])
