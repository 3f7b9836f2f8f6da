"""Ingestion in `engram local`: what Step Functions and the step Lambdas are in AWS.

`IngestCoordinator` is the pipeline starter of `engram local`. Each document runs through the state
machine's steps (engram.pipeline.runner.LocalRunner, in a thread of its own), and each step is an
invocation on the pool of ingestion workers with the step's time limit from engram.pipeline.steps:
a step that outlives it is killed and the document fails with `timeout`, as in AWS.

Fairness: documents are admitted round-robin across tenants (the tenant with the fewest documents
running first), steps get workers the same way (engram.local.workers), and a large document's step
never takes the last free worker, so small documents keep flowing beside a large one.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from engram import deps
from engram.db.database import Database
from engram.documents.runs import DocumentRef
from engram.local.channel import LambdaCall, Reply
from engram.local.workers import PoolClosed, WorkerFailed, WorkerPool
from engram.observability import logger
from engram.pipeline.runner import LocalRunner
from engram.pipeline.steps import FINISH, STEPS
from engram.pipeline.sweep import resume
from engram.pipeline.watch import DropWatcher
from engram.settings import Settings
from engram.tenants.service import ensure_existing_tenant

# A document at least this large holds a worker for long (its embed step above all).
LARGE_DOCUMENT_BYTES = 1024 * 1024
# In the data directory: what the drop folder's watcher took (engram.pipeline.watch).
DROP_STATE_FILE = "drop-taken.json"
STEP_TIMEOUTS = {step.function: step.timeout_seconds for step in (*STEPS, FINISH)}


class StepError(Exception):
    """What a step function raised in its worker, under the name Step Functions would see."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(message)
        self.error_name = error_name


class Interrupted(BaseException):
    """`engram local` is stopping: the run ends where it is, and the document is resumed at the
    next start (not an Exception: the runner must not record it as the document's failure)."""


class IngestCoordinator:
    def __init__(
        self,
        pool: WorkerPool,
        loop: asyncio.AbstractEventLoop,
        *,
        documents_running: int,
        step_timeout_seconds: float | None = None,
    ) -> None:
        self.pool = pool
        self.loop = loop
        self.step_timeout_seconds = step_timeout_seconds
        self._lock = threading.Lock()
        self._queued: dict[UUID, deque[tuple[DocumentRef, str]]] = {}
        self._names: set[str] = set()  # queued or running
        self._running: dict[UUID, int] = {}  # tenant -> documents running
        self._capacity = documents_running
        self._threads = ThreadPoolExecutor(documents_running, thread_name_prefix="engram-ingest")
        self._stopping = False
        self._stopped = threading.Event()

    # --- PipelineStarter -----------------------------------------------------------------------

    def start(self, ref: DocumentRef, name: str) -> None:
        with self._lock:
            if self._stopping or name in self._names:
                return
            self._names.add(name)
            self._queued.setdefault(ref.tenant_id, deque()).append((ref, name))
            self._admit()

    def _admit(self) -> None:
        while sum(self._running.values()) < self._capacity and self._queued:
            tenant = min(self._queued, key=lambda t: self._running.get(t, 0))
            ref, name = self._queued[tenant].popleft()
            if not self._queued[tenant]:
                del self._queued[tenant]
            self._running[tenant] = self._running.get(tenant, 0) + 1
            self._threads.submit(self._run, ref, name)

    def _run(self, ref: DocumentRef, name: str) -> None:
        try:
            LocalRunner(self._invoker(ref, self._is_large(ref)), sleep=self._sleep).run(ref)
        except Interrupted:
            logger.info(
                "ingestion interrupted; resumed at the next start",
                extra={"document_id": str(ref.document_id)},
            )
        except Exception:
            logger.exception("local pipeline run crashed", extra={"document_id": str(ref.document_id)})
        finally:
            with self._lock:
                self._names.discard(name)
                self._running[ref.tenant_id] -= 1
                if not self._running[ref.tenant_id]:
                    del self._running[ref.tenant_id]
                if not self._stopping:
                    self._admit()

    def _sleep(self, seconds: float) -> None:
        """The runner's backoff between retries, cut short when `engram local` stops."""
        if self._stopped.wait(seconds):
            raise Interrupted()

    @staticmethod
    def _is_large(ref: DocumentRef) -> bool:
        try:
            size = deps.document_service().get(ref.tenant_id, ref.document_id).size_bytes
        except Exception:
            return False
        return (size or 0) >= LARGE_DOCUMENT_BYTES

    def _invoker(self, ref: DocumentRef, large: bool) -> Any:
        def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
            if self._stopping:
                raise Interrupted()
            timeout = self.step_timeout_seconds or STEP_TIMEOUTS[function]
            call = LambdaCall(f"pipeline/{function}", event)
            future = asyncio.run_coroutine_threadsafe(
                self.pool.invoke(call, timeout=timeout, tenant=str(ref.tenant_id), heavy=large), self.loop
            )
            try:
                reply = future.result()
            except (PoolClosed, WorkerFailed):
                if self._stopping:
                    raise Interrupted() from None
                raise
            assert isinstance(reply, Reply)  # a step's result is never streamed
            if reply.error is not None:
                raise StepError(*reply.error)
            result: dict[str, Any] = reply.value
            return result

        return invoke

    # --- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop admitting documents; runs end at their next step (or when the pool closes)."""
        with self._lock:
            self._stopping = True
            self._queued.clear()
        self._stopped.set()
        self._threads.shutdown(wait=False, cancel_futures=True)

    def join(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the runs' threads to end."""
        waiter = threading.Thread(target=self._threads.shutdown, kwargs={"wait": True}, daemon=True)
        waiter.start()
        waiter.join(timeout)

    @property
    def active(self) -> int:
        with self._lock:
            return sum(self._running.values()) + sum(len(q) for q in self._queued.values())


@dataclass
class DropFolder:
    watcher: DropWatcher
    resumed: int

    def stop(self) -> None:
        self.watcher.stop()


def start_drop_folder(settings: Settings, admin_db: Database, tenant_name: str) -> DropFolder:
    """Resume documents a previous run left unfinished, then watch drop/<container>/ for new files
    (they belong to `tenant_name`, the dev tenant)."""
    tenant_id = ensure_existing_tenant(admin_db, tenant_name)
    resumed = resume(deps.database(), deps.pipeline_starter())
    watcher = DropWatcher(
        settings.drop_dir,
        tenant_id,
        deps.document_service(),
        max_file_bytes=settings.max_file_bytes,
        interval=settings.watch_interval_seconds,
        state_file=settings.data_dir / DROP_STATE_FILE,
    )
    watcher.start()
    return DropFolder(watcher, resumed)
