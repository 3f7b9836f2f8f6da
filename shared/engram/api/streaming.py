"""A response body streamed as it is made, where the runtime can stream one (`engram local`).

API Gateway's REST proxy answers a Lambda's whole body at once, so in AWS handlers never stream (a large
answer is a job, and a presigned link). A worker of `engram local` installs a `BodyStream`: a handler that
finds one (`engram.deps.body_stream()`) offers it the body's pieces and returns its response without a
body; the worker then sends the pieces as they are made, after the handler has returned."""

from __future__ import annotations

from collections.abc import Iterator


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
