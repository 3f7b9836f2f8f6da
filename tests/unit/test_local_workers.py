"""Who gets a free worker of `engram local` first."""

from __future__ import annotations

from engram.local.workers import Waiter, next_waiter


def _waiter(seq: int, tenant: str, heavy: bool = False) -> Waiter:
    return Waiter(seq, tenant, heavy)


def test_api_invocations_get_workers_in_order_of_arrival() -> None:
    waiting = [_waiter(1, "a"), _waiter(2, "b")]
    assert next_waiter(waiting, {"a": 5}, idle=1, size=2, fair=False) is waiting[0]


def test_the_tenant_with_the_fewest_steps_running_goes_first() -> None:
    waiting = [_waiter(1, "busy"), _waiter(2, "busy"), _waiter(3, "quiet")]
    assert next_waiter(waiting, {"busy": 1}, idle=1, size=2, fair=True) is waiting[2]
    assert next_waiter(waiting[:2], {"busy": 1}, idle=1, size=2, fair=True) is waiting[0]


def test_a_large_document_never_takes_the_last_free_worker() -> None:
    large, small = _waiter(1, "a", heavy=True), _waiter(2, "b")
    assert next_waiter([large], {}, idle=1, size=2, fair=True) is None
    assert next_waiter([large, small], {}, idle=1, size=2, fair=True) is small
    assert next_waiter([large, small], {}, idle=2, size=2, fair=True) is large
    assert next_waiter([large], {}, idle=1, size=1, fair=True) is large  # one worker: nothing to keep
