"""The relay: work that follows a committed write, done outside the request that made it. It brings
queued conversation summaries up to date, then delivers the change events the outbox holds (to webhooks
locally, to the EventBridge bus in AWS). `engram local` runs it in a background thread every
ENGRAM_RELAY_INTERVAL_SECONDS; in AWS the relay function runs it every minute."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol

from engram.observability import logger
from engram.sessions.summaries import SummaryService

# In AWS a run starts no pass with less time left than this: a pass (an LLM summary, a batch of events)
# ends within it (the relay's LLM calls are budgeted to: infra/functions.py).
PASS_MARGIN_S = 20


class EventSink(Protocol):
    def run_once(self) -> int: ...


@dataclass(frozen=True)
class RelayReport:
    summarized: int
    delivered: int


class Relay:
    def __init__(self, summaries: SummaryService, events: EventSink) -> None:
        self.summaries = summaries
        self.events = events

    def run_once(self) -> RelayReport:
        """Summaries first, so that their session.summarized events go out in the same pass."""
        summarized = sum(
            self.summaries.refresh_queued(tenant_id) for tenant_id in self.summaries.tenants_with_work(100)
        )
        return RelayReport(summarized=summarized, delivered=self.events.run_once())

    def run_until(self, stop: threading.Event, interval: float) -> None:
        """Pass after pass until `stop` is set; a failing pass is logged and the next one tries again."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                report = self.run_once()
            except Exception:
                logger.exception("relay pass failed")
                report = RelayReport(0, 0)
            if report.summarized or report.delivered:
                continue  # more may be waiting
            stop.wait(max(0.0, interval - (time.monotonic() - started)))
