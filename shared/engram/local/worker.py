"""One worker process of `engram local`: what a Lambda container is in AWS.

It loads the handlers and the model once, then runs one invocation at a time, as Lambda does (and as
Powertools requires: its resolvers keep the current event in a class attribute). An API worker
serves HTTP requests through a `LocalGateway` (authorizer, proxy event, handler); an ingestion
worker runs pipeline step functions. It exits when `engram local` closes its end of the socket, and
dies with it if `engram local` is killed.

A response body a handler left to stream (engram.api.streaming) is sent after the reply, piece by piece
as it is made (engram.local.channel); the worker takes its next call once the body is sent. A streamed
request's body is read from the socket as the handler reads it (`IncomingBody`), never held whole; what the
handler left unread is dropped after the reply.

    python -m engram.local.worker ROLE FD PARENT_PID
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

from engram.documents.runs import DocumentRef
from engram.local.channel import (
    Boot,
    CancelStream,
    Chunk,
    HttpCall,
    LambdaCall,
    Reply,
    StreamEnd,
    receive,
    send,
)


class ForwardingStarter:
    """The pipeline starter of a worker: documents registered during an invocation are handed to
    `engram local` with the reply, which runs them on its ingestion workers (as StartExecution
    hands them to Step Functions)."""

    def __init__(self) -> None:
        self._pending: list[tuple[DocumentRef, str]] = []

    def start(self, ref: DocumentRef, name: str) -> None:
        self._pending.append((ref, name))

    def drain(self) -> list[tuple[DocumentRef, str]]:
        pending, self._pending = self._pending, []
        return pending


class Runtime:
    def __init__(self, boot: Boot) -> None:
        from engram import deps
        from engram.api.streaming import BodyStream, RequestStream
        from engram.db.database import Database
        from engram.local.gateway import LocalGateway

        self.boot = boot
        self.starter = ForwardingStarter()
        self.body_stream = BodyStream()
        self.request_stream = RequestStream()
        database = Database(boot.app_conninfo, set_role=boot.set_role, min_size=1, max_size=2)
        deps.install(
            deps.Deps(
                settings=boot.settings,
                database=database.open(),
                starter=self.starter,
                body_stream=self.body_stream,
                request_stream=self.request_stream,
            )
        )
        self.gateway = LocalGateway()

    def warm(self) -> None:
        """Load the model and open a connection now: the first request should not pay for them
        (Lambda's provisioned concurrency does the same)."""
        from engram import deps

        with deps.database().transaction() as cur:
            cur.execute("SELECT 1")
        if self.boot.settings.embedding_provider == "local":
            deps.embedder().embed_query("warm up")

    def serve(self, sock: socket.socket, call: HttpCall | LambdaCall) -> None:
        """Answer `call`: its reply, then the body it streams, if any."""
        if isinstance(call, LambdaCall):
            send(sock, self.invoke(call))
            return
        from engram.api.streaming import close_body

        incoming = IncomingBody(sock) if call.streamed else None
        if incoming is not None:
            self.request_stream.offer(incoming)
        response = self._http(call)
        self.request_stream.take()
        body = self.body_stream.take()
        if body is not None and not 200 <= response.status < 300:  # failed after it offered a body
            close_body(body)
            body = None
        send(sock, Reply(value=response, starts=self.starter.drain(), stream=body is not None))
        if incoming is not None:
            incoming.skip_rest()
        if body is not None:
            stream_body(sock, body)

    def invoke(self, call: LambdaCall) -> Reply:
        from engram.local.functions import LocalLambdaContext, handler_of

        try:
            result = handler_of(call.function)(
                call.event, LocalLambdaContext(call.function.replace("/", "-"))
            )
        except Exception as exc:
            return Reply(error=(type(exc).__name__, str(exc)), starts=self.starter.drain())
        return Reply(value=result, starts=self.starter.drain())

    def _http(self, call: HttpCall) -> Any:
        from engram.local.gateway import error
        from engram.observability import logger

        try:
            return self.gateway.handle(call.method, call.raw_path, call.headers, call.body)
        except Exception:
            logger.exception("local gateway failed")
            return error(500, "internal_error", "an internal error occurred; it has been logged")


class IncomingBody:
    """The body of a streamed request, piece by piece as `engram local` sends it on: read from the socket as
    the handler iterates, up to its `StreamEnd`. A body that broke off (the client went away, sent too much
    or too slowly, or the handler answered first) raises RequestBodyBroken, so that the handler's transaction
    ends without keeping any of it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.ended = False

    def __iter__(self) -> Iterator[bytes]:
        from engram.api.streaming import RequestBodyBroken

        while not self.ended:
            message = receive(self.sock)
            if isinstance(message, Chunk):
                yield message.data
                continue
            self.ended = True
            if not isinstance(message, StreamEnd):  # None: engram local has gone
                raise RequestBodyBroken("the request body broke off: the server is stopping")
            if message.error is not None:
                raise RequestBodyBroken(f"the request body broke off: {message.error[1]}")

    def skip_rest(self) -> None:
        """After the reply: drop what the handler did not read, up to the body's end."""
        from engram.api.streaming import RequestBodyBroken

        with contextlib.suppress(RequestBodyBroken):
            for _ in self:
                pass


def stream_body(sock: socket.socket, body: Iterator[bytes]) -> None:
    """Send each piece of `body` as it is made, then its end: complete, or the error that broke it off,
    or cancelled (`engram local`'s client went away). If the socket is gone, the next receive ends the
    worker."""
    from engram.api.streaming import close_body
    from engram.observability import logger

    pieces = iter(body)
    try:
        while True:
            try:
                data = next(pieces)
            except StopIteration:
                end = StreamEnd()
                break
            except Exception as exc:
                logger.exception("a streamed body broke off")
                end = StreamEnd((type(exc).__name__, str(exc)[:500]))
                break
            if _cancelled(sock):
                end = StreamEnd(("Cancelled", "the client went away"))
                break
            send(sock, Chunk(data))
        send(sock, end)
    except ConnectionError:
        return
    finally:
        close_body(pieces)  # a generator: its transaction ends now


def _cancelled(sock: socket.socket) -> bool:
    """A CancelStream has arrived (or the socket was closed: nobody reads the body either). Nothing
    else comes from `engram local` during a body."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    message = receive(sock)
    return message is None or isinstance(message, CancelStream)


def preload(role: str) -> None:
    """Import every handler this worker serves (done before the boot message arrives, while
    `engram local` starts the database)."""
    from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
    from engram.local.functions import load_function
    from engram.pipeline.steps import FINISH, STEPS

    if role == "api":
        names = [*API_FUNCTIONS, AUTHORIZER_FUNCTION]
    else:
        names = [f"pipeline/{step.function}" for step in (*STEPS, FINISH)]
    for name in names:
        load_function(name)
    with contextlib.suppress(ImportError):  # most of the local model's load time
        import onnxruntime  # noqa: F401


def _die_with(parent_pid: int) -> None:
    """Linux: be killed when `engram local` dies, even by SIGKILL (it cannot stop us then)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    role, fd, parent_pid = args[0], int(args[1]), int(args[2])
    _die_with(parent_pid)
    # Ctrl-C reaches `engram local`, which stops the workers in order; a worker ends its current
    # invocation first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    preload(role)
    boot: Boot | None = receive(sock)
    if boot is None:
        return 0
    runtime = Runtime(boot)
    runtime.warm()
    send(sock, ("ready", os.getpid()))
    while True:
        call = receive(sock)
        if call is None:
            return 0
        if isinstance(call, CancelStream):
            continue  # it crossed the end of the stream it meant to cancel
        runtime.serve(sock, call)


if __name__ == "__main__":
    sys.exit(main())
