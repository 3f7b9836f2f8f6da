"""How a worker of `engram local` passes from one invocation to the next: the waiting call is sent the
moment the reply before it comes, a reply never gets a worker killed or handed out twice, and a call
refused for want of a free worker is sent to none."""

from __future__ import annotations

import asyncio
import pickle
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, cast
from uuid import uuid4

import pytest

from engram.documents.runs import DocumentRef
from engram.local.channel import LambdaCall, Reply
from engram.local.workers import NoWorkerFree, Worker, WorkerPool


class ScriptedWorker:
    """A worker whose replies the test sends (`reply`), recording what it was sent in `log`."""

    name = "api-test"

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.replies: asyncio.Queue[Reply] = asyncio.Queue()
        self.killed = False
        self.on_begin: Callable[[str], object] = lambda name: None

    @property
    def usable(self) -> bool:
        return not self.killed

    def begin(self, call: bytes) -> None:
        message: LambdaCall = pickle.loads(call[8:])  # noqa: S301 - engram.local.channel.encode, after its length
        self.log.append(f"sent {message.function}")
        self.on_begin(message.function)

    async def receive(self) -> Any:
        return await self.replies.get()

    def kill(self) -> None:
        self.killed = True


async def _boot() -> Any:
    raise AssertionError("no process is started here")


def _pool(log: list[str]) -> tuple[WorkerPool, ScriptedWorker]:
    pool = WorkerPool("api", 1, _boot, on_start=lambda ref, name: log.append(f"run {name}"))
    worker = ScriptedWorker(log)
    pool._workers.add(cast(Worker, worker))
    pool._make_idle(cast(Worker, worker))
    return pool, worker


def test_the_next_call_is_sent_before_the_last_caller_has_its_reply() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        pool, worker = _pool(log)

        async def caller(name: str) -> None:
            reply = await pool.invoke(LambdaCall(name, {}), timeout=5.0)
            log.append(f"{name} got {reply.value}")

        first = asyncio.ensure_future(caller("one"))
        second = asyncio.ensure_future(caller("two"))
        await asyncio.sleep(0.01)
        assert log == ["sent one"]  # one worker: the second call waits
        worker.replies.put_nowait(Reply(value=1))
        await asyncio.wait_for(first, 5)
        worker.replies.put_nowait(Reply(value=2))
        await asyncio.wait_for(second, 5)
        return log

    assert asyncio.run(scenario()) == ["sent one", "sent two", "one got 1", "two got 2"]


def test_a_reply_that_came_as_the_time_ran_out_is_returned_and_its_worker_lives() -> None:
    async def scenario() -> tuple[Any, bool]:
        pool, worker = _pool([])
        worker.replies.put_nowait(Reply(value=1))
        # No time at all: the reply comes while the timeout is being taken. It has freed the worker
        # (which may be serving another call already), so it is the answer, and nobody kills the worker.
        reply = await asyncio.wait_for(pool.invoke(LambdaCall("one", {}), timeout=0.0), 5)
        return reply.value, worker.killed

    assert asyncio.run(scenario()) == (1, False)


def test_a_call_whose_caller_left_as_it_was_sent_runs_to_its_end_and_frees_the_worker() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        pool, worker = _pool(log)
        first = asyncio.ensure_future(pool.invoke(LambdaCall("one", {}), timeout=5.0))
        second = asyncio.ensure_future(pool.invoke(LambdaCall("two", {}), timeout=5.0))
        await asyncio.sleep(0.01)
        # "two" goes to the worker as "one" is answered; its caller leaves before it resumes.
        worker.on_begin = lambda name: name == "two" and asyncio.get_running_loop().call_soon(second.cancel)
        worker.replies.put_nowait(Reply(value=1))
        await asyncio.wait_for(first, 5)
        await asyncio.gather(second, return_exceptions=True)
        assert second.cancelled()
        third = asyncio.ensure_future(pool.invoke(LambdaCall("three", {}), timeout=5.0))
        await asyncio.sleep(0.01)
        assert log == ["sent one", "sent two"]  # the worker is still running "two"
        worker.replies.put_nowait(Reply(value=2))
        await asyncio.sleep(0.01)
        worker.replies.put_nowait(Reply(value=3))
        assert (await asyncio.wait_for(third, 5)).value == 3
        assert not worker.killed
        return log

    assert asyncio.run(scenario()) == ["sent one", "sent two", "sent three"]


def test_a_call_that_cannot_be_sent_fails_its_caller_and_the_worker_stays_free() -> None:
    async def scenario() -> Any:
        log: list[str] = []
        pool, worker = _pool(log)
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            await pool.invoke(LambdaCall("broken", {"handle": lambda: None}), timeout=5.0)
        later = asyncio.ensure_future(pool.invoke(LambdaCall("next", {}), timeout=5.0))
        await asyncio.sleep(0.01)
        worker.replies.put_nowait(Reply(value="ok"))
        reply = await asyncio.wait_for(later, 5)
        assert log == ["sent next"]
        return reply.value

    assert asyncio.run(scenario()) == "ok"


def test_the_runs_a_reply_asks_for_start_whether_or_not_its_caller_is_still_there() -> None:
    ref = DocumentRef(uuid4(), uuid4(), 1)

    async def scenario() -> list[str]:
        log: list[str] = []
        pool, worker = _pool(log)
        read = asyncio.ensure_future(pool.invoke(LambdaCall("read", {}), timeout=5.0))
        await asyncio.sleep(0.01)
        worker.replies.put_nowait(Reply(value=1, starts=[(ref, "doc-read")]))
        await asyncio.wait_for(read, 5)
        gone = asyncio.ensure_future(pool.invoke(LambdaCall("gone", {}), timeout=5.0))
        await asyncio.sleep(0.01)
        gone.cancel()  # its client went away while the handler ran
        await asyncio.gather(gone, return_exceptions=True)
        worker.replies.put_nowait(Reply(value=2, starts=[(ref, "doc-gone")]))
        await asyncio.sleep(0.01)
        return log

    assert asyncio.run(scenario()) == ["sent read", "run doc-read", "sent gone", "run doc-gone"]


class _JumpingSelector(selectors.DefaultSelector):
    """Never blocks: when the loop would wait for its next timer, its clock jumps there instead."""

    def __init__(self, clock: _ManualClockLoop) -> None:
        super().__init__()
        self.clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if not events and timeout:
            self.clock.now += timeout
        elif not events and timeout is None:
            raise RuntimeError("nothing is ready and no timer is set: the scenario is stuck")
        return events


class _ManualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose time stands still while anything is ready to run, so that timers set for
    the same instant fall due together and run in one step, one after the other."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now


def _on_manual_clock(scenario: Coroutine[Any, Any, Any]) -> Any:
    loop = _ManualClockLoop()
    try:
        return loop.run_until_complete(scenario)
    finally:
        loop.close()


@pytest.mark.parametrize("first", ["the wait runs out", "the worker comes free"])
def test_a_worker_freed_as_the_wait_runs_out_runs_the_call_only_if_its_caller_is_answered(first: str) -> None:
    async def scenario() -> tuple[str, list[str]]:
        log: list[str] = []
        loop = asyncio.get_running_loop()
        # Given a pool whose one worker is not free yet (it is starting), and comes free at the very
        # instant a waiting call's wait runs out, just after it or just before
        pool = WorkerPool("api", 1, _boot)
        worker = ScriptedWorker(log)
        pool._workers.add(cast(Worker, worker))

        def comes_free() -> None:  # what _run_worker does once its worker is ready
            pool._make_idle(cast(Worker, worker))

        if first == "the worker comes free":
            loop.call_later(1.0, comes_free)
        waiting = asyncio.ensure_future(pool.invoke(LambdaCall("two", {}), timeout=5.0, wait=1.0))
        await asyncio.sleep(0)  # it waits, its wait's timer set
        if first == "the wait runs out":
            loop.call_later(1.0, comes_free)
        loop.call_later(1.5, lambda: worker.replies.put_nowait(Reply(value="ran")))

        # When the caller's wait runs out
        try:
            outcome = (await waiting).value
        except NoWorkerFree:
            outcome = "refused"
        await asyncio.sleep(2.0)
        return outcome, log

    # Then a call refused for want of a worker was sent to none; one that was sent answers its caller
    outcome, log = _on_manual_clock(scenario())
    assert (outcome, log) in [("refused", []), ("ran", ["sent two"])]
    assert outcome == ("refused" if first == "the wait runs out" else "ran")  # (the timers ran in that order)
