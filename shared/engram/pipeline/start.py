"""Starting a pipeline run for a document (engram.documents.runs.PipelineStarter): a Step Functions
execution in AWS, the local runner in a background thread otherwise. Both are idempotent per run name."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from engram.documents.failures import TransientError
from engram.documents.runs import DocumentRef
from engram.observability import logger
from engram.pipeline.runner import LocalRunner


class StepFunctionsStarter:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self.client = client
        self.arn = state_machine_arn

    def start(self, ref: DocumentRef, name: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.start_execution(stateMachineArn=self.arn, name=name, input=json.dumps(ref.to_event()))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ExecutionAlreadyExists":
                logger.info("execution already started", extra={"name": name})
                return
            if code in ("ThrottlingException", "ServiceUnavailable", "InternalFailure"):
                raise TransientError(f"Step Functions {code}") from exc
            raise
        except BotoCoreError as exc:
            raise TransientError(f"Step Functions unreachable: {exc}") from exc


class LocalStarter:
    """Runs documents through the local runner on a small thread pool (one worker by default: the
    embedding model already uses the cores). A name already running is not started twice."""

    def __init__(self, runner: LocalRunner, *, workers: int = 1) -> None:
        self.runner = runner
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="engram-pipeline")
        self._lock = threading.Lock()
        self._active: dict[str, Future[str]] = {}

    def start(self, ref: DocumentRef, name: str) -> None:
        with self._lock:
            if name in self._active:
                return
            self._active[name] = self._pool.submit(self._run, ref, name)

    def _run(self, ref: DocumentRef, name: str) -> str:
        try:
            return self.runner.run(ref)
        except Exception:
            logger.exception("local pipeline run crashed", extra={"document_id": str(ref.document_id)})
            return "failed"
        finally:
            with self._lock:
                self._active.pop(name, None)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is running (runs started meanwhile included); False on timeout."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._active.values())
            if not pending:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            wait(pending, timeout=remaining)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
