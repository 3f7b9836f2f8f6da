"""`engram local` starts a crashed embedded PostgreSQL again, in a thread. Stopping must wait for a
restart under way: stopping PostgreSQL while another thread is still starting it left the new server
running, or raced its start (the flaky `test_a_crashed_postgresql_is_started_again` under load)."""

from __future__ import annotations

import asyncio
import threading
import time

from engram.local.run import PostgresWatch


class SlowRestart:
    """An embedded server that has died, and takes a while to start again."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.finished = False

    def ensure_running(self) -> bool:
        self.entered.set()
        time.sleep(0.5)
        self.finished = True
        return True


def test_closing_the_watch_waits_for_the_restart_under_way() -> None:
    embedded = SlowRestart()

    async def scenario() -> bool:
        watch = PostgresWatch(embedded, interval=0.01)
        task = asyncio.get_running_loop().create_task(watch.run())
        await asyncio.to_thread(embedded.entered.wait, 5)
        await watch.close(task)
        return embedded.finished  # read as soon as close returns: the restart must be over

    assert asyncio.run(scenario()) is True
