"""The HTTP front of `engram local`: a small ASGI app, served by Hypercorn, that does what API
Gateway does before a Lambda runs: match the route (JSON 404/405 otherwise, for any method), enforce
the payload limit, and hand the request to a worker process, which builds the proxy event.

HTTP parsing (strict, h11), connection and read timeouts are Hypercorn's job (see `server_config`);
the body limit is counted here on the bytes actually received, so no header (a negative or
duplicated Content-Length, chunked encoding) gets a larger body through. A request whose framing two
parsers could read differently (Transfer-Encoding beside Content-Length, or in HTTP/1.0), which h11
reads by Transfer-Encoding, is refused here, and its connection closed (RFC 9112, 6.1).

A route marked `streamed_body` (an import, an upload) takes a body of any size up to
MAX_STREAMED_REQUEST_BYTES: it is not read here first, but sent on to the worker piece by piece as it
arrives (`RequestBody`), while Hypercorn holds back the client when the worker reads more slowly (nothing
here holds more than a piece). If the client goes away, sends too much, or stops sending for `body_timeout`,
the worker is told that the body broke off (and keeps nothing of it). A response that comes before the
body's end (an error) is sent once the rest of the body has been read and dropped (up to DRAIN_LIMIT_BYTES),
so that the client reads it.

A streamed response (an export) is sent with chunked transfer encoding, each piece as the worker makes
it. If the body breaks off (the worker died, or failed), the connection is closed without the final
chunk, so that the client knows its body is incomplete; if the client goes away, the worker is told to
stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from engram.limits import MAX_REQUEST_BYTES, MAX_STREAMED_REQUEST_BYTES, STREAMED_TOO_LARGE_MESSAGE
from engram.local import unparsable
from engram.local.channel import HttpCall
from engram.local.gateway import OPENAPI_PATH, HttpResponse, Matched, error, match_route, too_large
from engram.observability import logger


class Body(Protocol):
    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class StreamedResponse:
    head: HttpResponse  # the status and headers (its body is empty)
    body: Body  # read to its end, and closed in any case


# The call, and the body of a streamed call (None: the body is whole in the call).
Invoke = Callable[[HttpCall, AsyncIterator[bytes] | None], Awaitable[HttpResponse | StreamedResponse]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

# An oversized body up to this size is read and dropped, so that the client reads the 413 instead
# of a connection reset; beyond it the connection is closed after the 413.
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
BODY_TIMEOUT_SECONDS = 60.0
# A client that does not take a piece of a streamed body for this long is given up (it holds a worker).
SEND_TIMEOUT_SECONDS = 60.0
# API Gateway's limit on the request line and header values together.
MAX_HEADER_BYTES = 10240
_HOP_BY_HOP = {"content-length", "connection", "transfer-encoding", "keep-alive"}


class BodyRefused(Exception):
    """A streamed request body that may go no further; `response` tells the client why."""

    def __init__(self, response: HttpResponse, reason: str) -> None:
        super().__init__(reason)
        self.response = response


class ClientGone(Exception):
    """The client went away before the end of its body."""

    def __init__(self) -> None:
        super().__init__("the client went away before the end of its body")


class RequestBody:
    """The body of a streamed request, piece by piece as the client sends it: BodyRefused past `limit` bytes
    (counted as received) or after `timeout` seconds without a piece, ClientGone if the client leaves."""

    def __init__(self, receive: Receive, limit: int, timeout: float) -> None:
        self._receive, self.limit, self.timeout = receive, limit, timeout
        self.received = 0
        self.ended = False  # read to its end, or broken off

    def __aiter__(self) -> RequestBody:
        return self

    async def __anext__(self) -> bytes:
        if self.ended:
            raise StopAsyncIteration
        try:
            message = await asyncio.wait_for(self._receive(), self.timeout)
        except TimeoutError:
            self.ended = True
            raise BodyRefused(
                error(408, "request_timeout", f"no part of the body came for {self.timeout:.0f} s"),
                "too slow",
            ) from None
        if message["type"] == "http.disconnect":
            self.ended = True
            raise ClientGone
        data: bytes = message.get("body", b"")
        self.received += len(data)
        if self.received > self.limit:
            self.ended = True  # not read further: the connection is closed after the 413
            raise BodyRefused(too_large(STREAMED_TOO_LARGE_MESSAGE), f"more than {self.limit} bytes")
        if not message.get("more_body", False):
            self.ended = True
        return data

    async def drop_rest(self, limit: int) -> None:
        """Read the rest of the body and drop it, up to `limit` bytes more (then the connection is closed)."""
        dropped = 0
        try:
            async for piece in self:
                dropped += len(piece)
                if dropped > limit:
                    return
        except (BodyRefused, ClientGone):
            return


class GatewayApp:
    def __init__(
        self,
        invoke: Invoke,
        *,
        body_timeout: float = BODY_TIMEOUT_SECONDS,
        streamed_limit: int = MAX_STREAMED_REQUEST_BYTES,
    ) -> None:
        self.invoke = invoke
        self.body_timeout = body_timeout
        self.streamed_limit = streamed_limit

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: closed by the server
        response = await self._serve(scope, receive)
        if isinstance(response, StreamedResponse):
            await _stream(send, receive, response)
        elif response is not None:
            await _respond(send, response)

    async def _serve(self, scope: dict[str, Any], receive: Receive) -> HttpResponse | StreamedResponse | None:
        method: str = scope["method"]
        raw_path = scope["raw_path"].decode("latin-1")
        size = len(raw_path) + len(scope["query_string"]) + sum(len(k) + len(v) for k, v in scope["headers"])
        if size > MAX_HEADER_BYTES:
            return error(
                431,
                "headers_too_large",
                f"the request line and headers are limited to {MAX_HEADER_BYTES} bytes",
            )
        ambiguous = _ambiguous_framing(scope)
        if ambiguous:
            return replace(error(400, "bad_request", ambiguous), close_connection=True)
        openapi = method == "GET" and raw_path == OPENAPI_PATH
        matched = None if openapi else match_route(method, raw_path)
        query = scope["query_string"].decode("latin-1")
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        target = f"{raw_path}?{query}" if query else raw_path
        if isinstance(matched, Matched) and matched.route.streamed_body:
            return await self._streamed(HttpCall(method, target, headers, b"", streamed=True), receive)
        body = await self._read_body(receive)
        if body is None:
            return None  # the client went away
        if isinstance(body, HttpResponse):
            return body
        if isinstance(matched, HttpResponse):
            return matched
        return await self.invoke(HttpCall(method, target, headers, body), None)

    async def _streamed(self, call: HttpCall, receive: Receive) -> HttpResponse | StreamedResponse | None:
        """Invoke with the body sent on as it arrives; a body the worker did not read to its end (it answered
        first) is read and dropped before the answer, which the client then reads instead of a reset."""
        declared = [value for name, value in call.headers if name.lower() == "content-length"]
        if len(declared) == 1 and declared[0].strip().isdigit() and int(declared[0]) > self.streamed_limit:
            return too_large(STREAMED_TOO_LARGE_MESSAGE)  # said before it is sent: refused before it is read
        body = RequestBody(receive, self.streamed_limit, self.body_timeout)
        try:
            response = await self.invoke(call, body)
        except BodyRefused as refused:
            return refused.response
        except ClientGone:
            return None
        if not body.ended:
            await body.drop_rest(DRAIN_LIMIT_BYTES)
        return response

    async def _read_body(self, receive: Receive) -> bytes | HttpResponse | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        chunks: list[bytes] = []
        received = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return error(
                    408, "request_timeout", f"the body did not arrive within {self.body_timeout:.0f} s"
                )
            if message["type"] == "http.disconnect":
                return None
            data: bytes = message.get("body", b"")
            received += len(data)
            if received <= MAX_REQUEST_BYTES:
                chunks.append(data)
            elif received > DRAIN_LIMIT_BYTES:
                return too_large()
            if not message.get("more_body", False):
                break
        return too_large() if received > MAX_REQUEST_BYTES else b"".join(chunks)


def _ambiguous_framing(scope: dict[str, Any]) -> str | None:
    names = {name.lower() for name, _ in scope["headers"]}
    if b"transfer-encoding" not in names:
        return None
    if b"content-length" in names:
        return "a request may not carry both Transfer-Encoding and Content-Length"
    if scope["http_version"] == "1.0":
        return "an HTTP/1.0 request may not carry Transfer-Encoding"
    return None


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _respond(send: Send, response: HttpResponse) -> None:
    headers = _headers(response)
    headers.append((b"content-length", str(len(response.body)).encode()))
    if response.close_connection:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


async def _stream(send: Send, receive: Receive, response: StreamedResponse) -> None:
    """Each piece of the body as it comes (no Content-Length: chunked); only a body read to its end
    gets the final chunk."""
    gone = asyncio.ensure_future(_disconnected(receive))
    pieces = aiter(response.body)
    try:
        await send(
            {
                "type": "http.response.start",
                "status": response.head.status,
                "headers": _headers(response.head),
            }
        )
        while True:
            piece = asyncio.ensure_future(anext(pieces))
            await asyncio.wait({piece, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not piece.done():  # the client went away: the body is closed below, which stops the worker
                piece.cancel()
                await asyncio.gather(piece, return_exceptions=True)
                return
            try:
                data = piece.result()
            except StopAsyncIteration:
                break
            body = {"type": "http.response.body", "body": data, "more_body": True}
            await asyncio.wait_for(send(body), SEND_TIMEOUT_SECONDS)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except Exception as exc:
        # Returning without the final chunk: the server closes the connection, and the client sees
        # a body cut short.
        logger.warning("a streamed body broke off", extra={"error": f"{type(exc).__name__}: {exc}"})
    finally:
        gone.cancel()
        await response.body.aclose()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _headers(response: HttpResponse) -> list[tuple[bytes, bytes]]:
    return [
        (name.encode("latin-1", "replace"), value.encode("latin-1", "replace"))
        for name, value in response.lines()
        if name.lower() not in _HOP_BY_HOP
    ]


def server_config(bind: str, *, keep_alive_timeout: float = 5.0, read_timeout: int | None = None) -> Any:
    """Hypercorn's settings for the local front.

    - `keep_alive_timeout` also bounds how long a new connection may take to send its request line
      and headers (Hypercorn's idle timer runs until the headers are in): half-open and slowloris
      connections are closed after it, and never hold a worker, which only sees whole requests.
    - `read_timeout` (none by default): Hypercorn closes a connection that sends nothing for this
      long, whatever it is waiting for, so a streamed answer (an export) longer than it would be cut
      off. A body that does not come is the app's to refuse (408 after `BODY_TIMEOUT_SECONDS`), and a
      client that stops reading a streamed body is given up after `SEND_TIMEOUT_SECONDS`.
    - Header names keep their case (API Gateway passes them as sent); 16 KB of request line and
      headers at most.
    - A request h11 cannot read is answered in the API's error shape, a 4xx (engram.local.unparsable).
    """
    from hypercorn.config import Config

    unparsable.install()

    config = Config()
    config.bind = [bind]
    config.keep_alive_timeout = keep_alive_timeout
    config.read_timeout = read_timeout
    config.h11_max_incomplete_size = 16 * 1024
    config.h11_pass_raw_headers = True
    config.include_server_header = False
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    config.graceful_timeout = 10.0
    config.backlog = 1024
    return config
