"""A pool of worker processes (engram.local.worker), each running one invocation at a time, as a
Lambda function's containers do. A worker that crashes is replaced; one that outlives its
invocation's time limit is killed and replaced, as Lambda ends a function at its timeout.

Who gets the next free worker: the API pool serves requests in arrival order. The ingestion pool is
fair: the waiting call of the tenant with the fewest calls running goes first, and a call for a
large document never takes the last free worker, which stays for small documents.

A worker is freed the moment its reply comes, and sent the next waiting call in that same turn of the
event loop (the call was encoded before it waited). A call that waits longer than its `wait` gives up in
one turn of the event loop too (`_give_up`): it is either granted a worker or refused with NoWorkerFree,
never both, so a refused call ran nowhere. The pipeline runs a reply asks for (`on_start`) are
started then too, whether or not the caller is still there to read the reply.

A streamed reply (engram.local.channel) keeps its worker until the body's end has been read: its reader
(`StreamedReply.body`) returns the worker to the pool then; if the reader stops early (its client went
away), the worker is told to stop and is returned once it has; a worker that dies or falls silent for
the time limit mid-body is killed, and the reader raises.

A streamed request (`invoke(..., body=)`) sends its body on to the worker piece by piece as the caller's
iterator yields it; the time limit then bounds the worker's wait for each piece to be taken, and for the
reply after the body's end, not the whole upload. If the body breaks off (the iterator raises: the client
went away, sent too much), the worker is told so, its reply awaited (it keeps nothing), and the iterator's
error raised to the caller; if the worker replies first, the rest of the body is not sent.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
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
    encode,
    read_message,
)
from engram.observability import logger
from engram.runtime import FUNCTION_ENVIRONMENT

BootProvider = Callable[[], Awaitable[Boot]]
READY_TIMEOUT_SECONDS = 180.0
STOP_GRACE_SECONDS = 10.0
# A worker that keeps dying at start is restarted ever more slowly, up to this.
MAX_RESTART_DELAY_SECONDS = 30.0


class WorkerFailed(Exception):
    """The worker process died during the invocation (Lambda reports `Runtime.ExitError`)."""

    error_name = "Runtime.ExitError"


class InvocationTimedOut(Exception):
    """The invocation outlived its time limit; the worker was killed (Lambda: `Sandbox.Timedout`)."""

    error_name = "Sandbox.Timedout"


class PoolClosed(Exception):
    pass


class StreamBroken(Exception):
    """The worker could not make the rest of a streamed body (its error is logged there)."""


@dataclass(frozen=True)
class StreamedReply:
    """A reply whose body follows: read `body` to its end, and close it (aclose) in any case."""

    reply: Reply
    body: StreamedBody


class StreamedBody:
    """The pieces of a streamed body, as the worker sends them. The worker goes back to its pool after
    the body's end; `aclose` before the end tells it to stop (its client went away), and the pool takes
    it back once it has. InvocationTimedOut if no piece comes within `timeout` seconds, WorkerFailed if
    the worker dies (both kill it), StreamBroken if the worker could not make the rest."""

    def __init__(self, pool: WorkerPool, worker: Worker, timeout: float, tenant: str) -> None:
        self._pool, self._worker, self._timeout, self._tenant = pool, worker, timeout, tenant
        self._ended = False

    def __aiter__(self) -> StreamedBody:
        return self

    async def __anext__(self) -> bytes:
        if self._ended:
            raise StopAsyncIteration
        worker = self._worker
        try:
            message = await asyncio.wait_for(worker.receive(), self._timeout)
        except TimeoutError:
            self._end()
            worker.kill()
            raise InvocationTimedOut(f"no part of the body came within {self._timeout:.2f} seconds") from None
        except WorkerFailed:
            self._end()
            worker.kill()
            raise
        if isinstance(message, Chunk):
            return message.data
        self._end()
        if not isinstance(message, StreamEnd):
            worker.kill()  # a broken exchange: never reuse the worker
            raise WorkerFailed(f"worker {worker.name} sent {type(message).__name__} inside a body")
        self._pool._make_idle(worker)
        if message.error is not None:
            raise StreamBroken(*message.error)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self._ended:
            return
        self._end()
        if self._worker.usable:
            self._pool._track(self._pool._cancel_stream(self._worker, self._timeout))

    def _end(self) -> None:
        self._ended = True
        self._pool._done_running(self._tenant)


class BodyBroke(Exception):
    """The request body's iterator raised (`cause`); the worker has replied, and keeps nothing of it."""

    def __init__(self, cause: Exception, reply: Reply) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.reply = reply


class _Feeder:
    """Sends a request's body on to its worker, piece by piece, then its end (once)."""

    def __init__(self, worker: Worker, body: AsyncIterator[bytes], timeout: float) -> None:
        self.worker, self.body, self.timeout = worker, body, timeout
        self.ended = False  # its StreamEnd is on its way

    async def run(self) -> Exception | None:
        """None once the whole body is sent; the error the body raised (it broke off), once the worker has
        been told; InvocationTimedOut (the worker killed) if a piece is not taken in time."""
        pieces = aiter(self.body)
        while True:
            try:
                piece = await anext(pieces)
            except StopAsyncIteration:
                await self._end(StreamEnd())
                return None
            except Exception as exc:  # the client went away, or sent too much or too slowly
                await self._end(StreamEnd((type(exc).__name__, str(exc)[:500] or type(exc).__name__)))
                return exc
            if not piece:
                continue
            try:
                await asyncio.wait_for(self.worker.send(Chunk(piece)), self.timeout)
            except TimeoutError:
                self.worker.kill()
                raise InvocationTimedOut(
                    f"the handler took no part of the body for {self.timeout:.2f} seconds"
                ) from None

    async def _end(self, end: StreamEnd) -> None:
        self.ended = True
        await self.worker.send(end)


class NoWorkerFree(Exception):
    """No worker became free within the wait allowed (Lambda would throttle): the call went to no worker."""


class Worker:
    def __init__(self, role: str, index: int) -> None:
        self.role = role
        self.name = f"{role}-{index}"
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Future[Any] | None = None
        self.started_at = 0.0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def start(self, boot: BootProvider) -> None:
        """Start the process (it imports its handlers meanwhile), send it `boot()`, wait until it
        is ready to serve."""
        parent_end, child_end = socket.socketpair()
        self.started_at = time.monotonic()
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "engram.local.worker",
                self.role,
                str(child_end.fileno()),
                str(os.getpid()),
                pass_fds=(child_end.fileno(),),
                env={**os.environ, **FUNCTION_ENVIRONMENT},  # as a Lambda's
                start_new_session=True,  # the terminal's Ctrl-C goes to `engram local` alone
            )
        finally:
            child_end.close()
        self._reader, self._writer = await asyncio.open_unix_connection(sock=parent_end, limit=1 << 20)
        self._writer.write(encode(await boot()))
        await self._writer.drain()
        ready = await asyncio.wait_for(read_message(self._reader), READY_TIMEOUT_SECONDS)
        if not (isinstance(ready, tuple) and ready[0] == "ready"):
            raise RuntimeError(f"worker {self.name} answered {ready!r} instead of ready")

    def begin(self, call: bytes) -> None:
        """Send a call (`encode`d) now, in this turn of the event loop: the pool hands a freed worker its
        next call before anything else runs. (A worker that died meanwhile fails the call's `receive`.)"""
        assert self._writer is not None
        self._writer.write(call)

    async def send(self, message: object) -> None:
        assert self._writer is not None
        try:
            self._writer.write(encode(message))
            await self._writer.drain()
        except ConnectionError as exc:
            raise WorkerFailed(f"worker {self.name} exited during the invocation") from exc

    async def receive(self) -> Any:
        """The worker's next message. A read cut short (its caller cancelled or timed out) goes on, and
        the next call answers its message: the framing of the channel is never lost."""
        assert self._reader is not None
        if self._reading is None:
            self._reading = asyncio.ensure_future(read_message(self._reader))
            # A read left behind by a worker killed meanwhile fails unseen: no "never retrieved" noise.
            self._reading.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            message = await asyncio.shield(self._reading)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise WorkerFailed(f"worker {self.name} exited during the invocation") from exc
        self._reading = None
        return message

    @property
    def usable(self) -> bool:
        """Not known to have exited (its end of the socket closes the moment it dies)."""
        return (
            self.process is not None
            and self.process.returncode is None
            and self._reader is not None
            and not self._reader.at_eof()
        )

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()

    async def stop(self, grace: float) -> None:
        """Close our end: the worker finishes its invocation, reads EOF and exits; after `grace`
        seconds it is killed."""
        if self._writer is not None:
            self._writer.close()
        if self.process is None:
            return
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            self.kill()
            await self.process.wait()


@dataclass
class Waiter:
    """An invocation waiting for a worker."""

    seq: int  # arrival order
    tenant: str
    heavy: bool  # for a large document
    granted: asyncio.Future[Worker] | None = None
    # Sent to the worker the moment it is granted, encoded (None: the caller sends its call itself).
    call: bytes | None = None


def next_waiter(
    waiting: Sequence[Waiter], running: Mapping[str, int], idle: int, size: int, *, fair: bool
) -> Waiter | None:
    """Who gets the next free worker. In order of arrival; or, `fair`: the tenant with the fewest
    invocations running first, and a heavy invocation never takes the last free worker of a pool
    of several (None: nobody may have it now)."""
    if not waiting:
        return None
    if not fair:
        return waiting[0]
    keep_one = size > 1 and idle == 1
    eligible = [w for w in waiting if not (w.heavy and keep_one)]
    if not eligible:
        return None
    return min(eligible, key=lambda w: (running.get(w.tenant, 0), w.seq))


class WorkerPool:
    def __init__(
        self,
        role: str,
        size: int,
        boot: BootProvider,
        *,
        fair: bool = False,
        on_start: Callable[[DocumentRef, str], None] | None = None,
    ) -> None:
        """`on_start`: given each pipeline run a reply asks for (a document registered), as the reply
        comes, whether or not its caller is still there to read it."""
        if size < 1:
            raise ValueError(f"a {role} pool needs at least one worker")
        self.role = role
        self.size = size
        self.fair = fair
        self._boot = boot
        self._on_start = on_start
        self._workers: set[Worker] = set()
        self._idle: list[Worker] = []
        self._waiting: list[Waiter] = []
        self._running: dict[str, int] = {}  # tenant -> calls running
        self._seq = itertools.count()
        self._index = itertools.count()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._ready = asyncio.Event()
        self.restarts = 0

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the first worker alone, so that the pool serves as soon as it can on a busy machine;
        the others start once it is ready."""
        self._spawn(delay=0.0)

    async def wait_ready(self) -> None:
        """Until at least one worker is serving."""
        await self._ready.wait()

    def pids(self) -> list[int]:
        return [w.pid for w in self._workers if w.pid is not None]

    async def close(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop every worker: each ends its invocation, if it does within `grace` seconds."""
        self._closed = True
        for waiter in self._waiting:
            if waiter.granted is not None and not waiter.granted.done():
                waiter.granted.set_exception(PoolClosed(f"the {self.role} pool is stopping"))
        self._waiting.clear()
        await asyncio.gather(*(w.stop(grace) for w in list(self._workers)), return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, delay: float) -> None:
        task = asyncio.get_running_loop().create_task(self._run_worker(delay))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_worker(self, delay: float) -> None:
        """Start a worker, serve with it until it exits, then start its replacement."""
        if delay:
            await asyncio.sleep(delay)
        if self._closed:
            return
        worker = Worker(self.role, next(self._index))
        self._workers.add(worker)
        try:
            await worker.start(self._boot)
        except Exception:
            if not self._closed:  # else: stopped while starting
                logger.exception("worker failed to start", extra={"worker": worker.name})
            worker.kill()
        else:
            self._make_idle(worker)
            if not self._ready.is_set():
                self._ready.set()
                for _ in range(self.size - 1):
                    self._spawn(delay=0.0)
        if worker.process is not None:
            await worker.process.wait()
        self._workers.discard(worker)
        if worker in self._idle:
            self._idle.remove(worker)
        if self._closed:
            return
        self.restarts += 1
        lived = time.monotonic() - worker.started_at
        next_delay = 0.0 if lived > 10 else min(MAX_RESTART_DELAY_SECONDS, max(0.5, 2 * delay))
        logger.warning(
            "worker exited; starting another",
            extra={"worker": worker.name, "code": worker.process and worker.process.returncode},
        )
        self._spawn(next_delay)

    # --- invocations ---------------------------------------------------------------------------

    async def invoke(
        self,
        message: HttpCall | LambdaCall,
        *,
        timeout: float,
        wait: float | None = None,
        tenant: str = "",
        heavy: bool = False,
        body: AsyncIterator[bytes] | None = None,
    ) -> Reply | StreamedReply:
        """Run `message` on the next free worker. NoWorkerFree if none is free within `wait`
        seconds, InvocationTimedOut after `timeout` seconds of running (the worker is killed),
        WorkerFailed if the worker dies. A streamed reply's body may take longer: `timeout` then
        bounds the wait for each piece. `body`: the request's body, sent on as it comes (`message`
        is then a streamed HttpCall); `timeout` bounds the wait for each piece to be taken, and for
        the reply after the body's end. If `body` raises, that error is raised here, once the worker
        has replied."""
        sent_on_grant = encode(message) if body is None else None  # (a call that cannot be sent fails here)
        worker = await self._acquire(tenant, heavy, sent_on_grant, timeout, wait)
        self._running[tenant] = self._running.get(tenant, 0) + 1
        if body is None:
            call: asyncio.Future[Reply] = asyncio.ensure_future(worker.receive())
        else:
            call = asyncio.ensure_future(self._call_streamed(worker, message, body, timeout))
        call.add_done_callback(lambda done: self._on_reply(worker, done))
        streamed = False
        try:
            try:
                if body is None:
                    reply = await asyncio.wait_for(asyncio.shield(call), timeout)
                else:  # its own time limits: for each piece, then for the reply
                    reply = await asyncio.shield(call)
            except TimeoutError:
                if not _replied(call):
                    worker.kill()
                    call.cancel()
                    raise InvocationTimedOut(f"Task timed out after {timeout:.2f} seconds") from None
                reply = call.result()  # it came as the time ran out (the worker may already be serving again)
            streamed = reply.stream
        except BodyBroke as broke:
            self._release(worker, broke.reply)
            raise broke.cause from None
        except asyncio.CancelledError:
            # The caller went away (a client disconnected): the invocation still runs to its end,
            # as in Lambda, and the worker is free again after it.
            call.add_done_callback(lambda done: self._after_abandoned(worker, done))
            raise
        except Exception:
            worker.kill()  # a broken exchange: never reuse the worker
            raise
        finally:
            if not streamed:  # else the body's reader ends the invocation
                self._done_running(tenant)
        if streamed:
            return StreamedReply(reply, StreamedBody(self, worker, timeout, tenant))
        return reply  # its worker was freed as the reply came (_on_reply)

    def _on_reply(self, worker: Worker, call: asyncio.Future[Reply]) -> None:
        """A whole reply frees its worker the moment it comes, so that the next call is sent at once, not
        after its caller (and the waiter's) have resumed; a streamed reply keeps it until its body ends."""
        if _replied(call):
            reply = call.result()
            self._start_runs(reply)
            if not reply.stream:
                self._make_idle(worker)

    def _start_runs(self, reply: Reply) -> None:
        if self._on_start is not None:
            for ref, name in reply.starts:
                self._on_start(ref, name)

    async def _call_streamed(
        self, worker: Worker, message: HttpCall | LambdaCall, body: AsyncIterator[bytes], timeout: float
    ) -> Reply:
        """The call, then its body piece by piece, while waiting for the reply (which may come first)."""
        await worker.send(message)
        answer = asyncio.ensure_future(worker.receive())
        feeder = _Feeder(worker, body, timeout)
        feeding = asyncio.ensure_future(feeder.run())
        await asyncio.wait({answer, feeding}, return_when=asyncio.FIRST_COMPLETED)
        broke: Exception | None = None
        if feeding.done():
            try:
                broke = feeding.result()
            except BaseException:
                answer.cancel()
                raise
        else:  # answered before the body's end: send no more of it
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
            if not feeder.ended and answer.exception() is None:
                await worker.send(StreamEnd(("Answered", "the handler answered before the body's end")))
        try:
            reply: Reply = await asyncio.wait_for(answer, timeout)
        except TimeoutError:
            worker.kill()
            raise InvocationTimedOut(f"no reply within {timeout:.2f} seconds of the body's end") from None
        if broke is not None:
            raise BodyBroke(broke, reply)
        return reply

    def _release(self, worker: Worker, reply: Reply) -> None:
        """A worker whose reply nobody reads: free once it has stopped streaming any body."""
        self._start_runs(reply)
        if reply.stream:
            self._track(self._cancel_stream(worker, STOP_GRACE_SECONDS))
        else:
            self._make_idle(worker)

    def _done_running(self, tenant: str) -> None:
        self._running[tenant] -= 1
        if not self._running[tenant]:
            del self._running[tenant]

    async def _cancel_stream(self, worker: Worker, timeout: float) -> None:
        """Nobody reads the body any more: the worker stops making it, and is free once it has."""
        try:
            await worker.send(CancelStream())
            while not isinstance(await asyncio.wait_for(worker.receive(), timeout), StreamEnd):
                pass
        except Exception:
            worker.kill()
            return
        self._make_idle(worker)

    def _track(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _after_abandoned(self, worker: Worker, call: asyncio.Future[Reply]) -> None:
        if not _replied(call):
            worker.kill()
        elif call.result().stream:
            self._track(self._cancel_stream(worker, STOP_GRACE_SECONDS))
        # else: freed as the reply came (_on_reply)

    async def _finish_sent(self, worker: Worker, timeout: float) -> None:
        """A call sent as its worker was granted, whose caller went away at that moment: it runs to its
        end (within its time limit), as in Lambda, and the worker is free again after it."""
        try:
            reply: Reply = await asyncio.wait_for(worker.receive(), timeout)
        except Exception:
            worker.kill()
            return
        self._release(worker, reply)

    async def _acquire(
        self, tenant: str, heavy: bool, call: bytes | None, timeout: float, wait: float | None
    ) -> Worker:
        """The next free worker, with `call` (if any) already sent to it. NoWorkerFree if none is granted
        within `wait` seconds (None: no limit): the call then went to no worker (`_give_up`)."""
        if self._closed:
            raise PoolClosed(f"the {self.role} pool is stopping")
        loop = asyncio.get_running_loop()
        granted: asyncio.Future[Worker] = loop.create_future()
        waiter = Waiter(next(self._seq), tenant, heavy, granted, call)
        self._waiting.append(waiter)
        self._dispatch()
        deadline = None
        if wait is not None and not granted.done():
            deadline = loop.call_later(wait, self._give_up, waiter, wait)
        try:
            return await granted
        except asyncio.CancelledError:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif granted.done() and not granted.cancelled() and granted.exception() is None:
                if call is None:
                    self._make_idle(granted.result())
                else:
                    self._track(self._finish_sent(granted.result(), timeout))
            raise
        finally:
            if deadline is not None:
                deadline.cancel()

    def _give_up(self, waiter: Waiter, wait: float) -> None:
        """The wait for a worker ran out: unless it was granted one, the waiter leaves the queue and fails
        with NoWorkerFree, in this one step of the event loop, as `_dispatch` grants in one: whichever
        comes first decides, so a refused call was sent to no worker (one freed now serves the next)."""
        assert waiter.granted is not None
        if waiter.granted.done():
            return
        if waiter in self._waiting:
            self._waiting.remove(waiter)
        waiter.granted.set_exception(NoWorkerFree(f"no {self.role} worker was free within {wait:.0f} s"))

    def _make_idle(self, worker: Worker) -> None:
        if not worker.usable or self._closed:
            return
        self._idle.append(worker)
        self._dispatch()

    def _dispatch(self) -> None:
        # A waiter whose caller was cancelled may still be listed until its task runs again; a worker
        # that died while idle, until its exit is reaped.
        self._waiting = [w for w in self._waiting if w.granted is not None and not w.granted.done()]
        self._idle = [w for w in self._idle if w.usable]
        while self._idle:
            waiter = next_waiter(self._waiting, self._running, len(self._idle), self.size, fair=self.fair)
            if waiter is None:
                return
            self._waiting.remove(waiter)
            assert waiter.granted is not None
            worker = self._idle.pop(0)
            if waiter.call is not None:
                worker.begin(waiter.call)
            waiter.granted.set_result(worker)

    @property
    def busy(self) -> int:
        return len(self._workers) - len(self._idle)

    @property
    def waiting(self) -> int:
        return len(self._waiting)


def _replied(call: asyncio.Future[Reply]) -> bool:
    return call.done() and not call.cancelled() and call.exception() is None
