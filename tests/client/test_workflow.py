"""WorkflowState over working memory: values, a read-modify-write that survives another writer, and an
action history that two agents writing at once never lose an entry of."""

from __future__ import annotations

import threading
from collections.abc import Callable

from engram.tenants.service import IssuedKey
from engram_client import Engram
from engram_client.workflow import WorkflowState


def _race(*workers: Callable[[], None]) -> None:
    start = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        start.wait()
        try:
            work()
        except BaseException as exc:  # surfaced below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


def test_values_are_set_read_and_deleted(engram: Engram) -> None:
    state = WorkflowState(engram, "trip-1")

    state.set("stage", {"name": "booking"})

    assert state.get("stage") == {"name": "booking"} and state.get("missing", "none") == "none"
    assert state.delete("stage") is True and state.delete("stage") is False and state.get("stage") is None


def test_two_writers_racing_lose_no_action(live_url: str, tenant: IssuedKey) -> None:
    with Engram(live_url, tenant.plaintext) as one, Engram(live_url, tenant.plaintext) as two:
        planner, booker = WorkflowState(one, "trip-2"), WorkflowState(two, "trip-2")

        _race(
            lambda: [planner.record_action("plan", {"n": n}, agent_id="planner") for n in range(15)],
            lambda: [booker.record_action("book", {"n": n}, agent_id="booker") for n in range(15)],
        )

        history = WorkflowState(one, "trip-2").get_action_history()

    assert [entry["position"] for entry in history] == list(range(1, 31))
    for agent in ("planner", "booker"):
        assert [e["data"]["n"] for e in history if e["agent_id"] == agent] == list(range(15))


def test_two_writers_updating_one_value_lose_no_update(live_url: str, tenant: IssuedKey) -> None:
    with Engram(live_url, tenant.plaintext) as one, Engram(live_url, tenant.plaintext) as two:
        first, second = WorkflowState(one, "trip-3"), WorkflowState(two, "trip-3")

        _race(
            lambda: [first.update("count", lambda n: n + 1, default=0) for _ in range(12)],
            lambda: [second.update("count", lambda n: n + 1, default=0) for _ in range(12)],
        )

        assert first.get("count") == 24


def test_cleanup_removes_the_plans_values_and_history(engram: Engram) -> None:
    state = WorkflowState(engram, "trip-4")
    state.set("a", 1)
    state.record_action("start")
    state.record_action("stop")

    removed = state.cleanup()

    assert removed == 3 and state.get_action_history() == [] and state.get("a") is None
    assert state.record_action("again")["position"] == 1
