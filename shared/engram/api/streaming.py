"""A response body streamed as it is made, where the runtime can stream one (`engram local`).

API Gateway's REST proxy answers a Lambda's whole body at once, so in AWS handlers never stream (a large
answer is a job, and a presigned link). A worker of `engram local` installs a `BodyStream`: a handler that
finds one (`engram.deps.body_stream()`) offers it the body's pieces and returns its response without a
body; the worker then sends the pieces as they are made, after the handler has returned.

The other way, a request body (an import of any size) comes to the handler in pieces: `RequestStream`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from engram.errors import EngramError, InvalidInput, PayloadTooLarge
from engram.limits import MAX_REQUEST_BYTES, TOO_LARGE_MESSAGE


class BodyStream:
    """The body a handler left to be streamed: one per process, one invocation at a time."""

    def __init__(self) -> None:
        self._pending: Iterator[bytes] | None = None

    def offer(self, chunks: Iterator[bytes]) -> None:
        """The response's body: made lazily, piece by piece, once the handler has returned."""
        self.discard()
        self._pending = chunks

    def take(self) -> Iterator[bytes] | None:
        pending, self._pending = self._pending, None
        return pending

    def discard(self) -> None:
        """Drop a body never sent."""
        pending = self.take()
        if pending is not None:
            close_body(pending)


def close_body(chunks: Iterator[bytes]) -> None:
    """End a body before its end: a generator's `finally` (its transaction) runs now."""
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


class RequestStream:
    """A request body that comes in pieces as the client sends it, where the runtime streams request bodies
    (`engram local`'s workers, for the routes marked `streamed_body` in engram.api.routes): one per process,
    one invocation at a time. The worker offers the pieces before the handler runs; a handler that finds them
    (`engram.deps.request_body()`) reads them as they arrive, and its event has no body. Reading past a body
    that broke off (its client went away, or sent too much) raises `RequestBodyBroken`."""

    def __init__(self) -> None:
        self._pending: Iterable[bytes] | None = None

    def offer(self, pieces: Iterable[bytes]) -> None:
        self._pending = pieces

    def take(self) -> Iterable[bytes] | None:
        pending, self._pending = self._pending, None
        return pending


class RequestBodyBroken(EngramError):
    """The request body ended before its end: nothing of it may be kept."""

    status_code = 400
    code = "body_incomplete"


def read_whole(pieces: Iterable[bytes]) -> bytes:
    """A body that came in pieces, read whole where a route needs all of it (a JSON body): refused past
    the limit of a request that is not streamed."""
    body = bytearray()
    for piece in pieces:
        body += piece
        if len(body) > MAX_REQUEST_BYTES:
            raise PayloadTooLarge(TOO_LARGE_MESSAGE)
    return bytes(body)


def lines_of(pieces: Iterable[bytes]) -> Iterator[str]:
    """The lines of a body that arrives in pieces, each as soon as it is complete (a line may span pieces):
    only the line being completed is held."""
    pending = bytearray()
    number = 0
    for piece in pieces:
        pending += piece
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            number += 1
            yield _decoded(bytes(pending[start : end + 1]), number)
            start = end + 1
        del pending[:start]
    if pending:
        yield _decoded(bytes(pending), number + 1)


def _decoded(line: bytes, number: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"line {number} is not UTF-8 text ({exc.reason})") from None
