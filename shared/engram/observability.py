"""The one place that owns Powertools' Logger, Tracer and Metrics.

X-Ray SDK tracing is opt-in: `ENGRAM_TRACING=xray`. Importing the SDK (and the botocore it pulls in)
costs every function ~0.5 s of CPU at cold start, more than all the rest of a handler's imports;
`make bench` measures it. Without it, Lambda's own active tracing still records each invocation.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics

SERVICE = "engram"
F = TypeVar("F", bound=Callable[..., Any])


class NoTracer:
    """Tracer's decorators and annotations, doing nothing: the default, without the X-Ray SDK."""

    def capture_lambda_handler(self, handler: F | None = None, **_: Any) -> Any:
        return handler if handler is not None else (lambda f: f)

    def capture_method(self, method: F | None = None, **_: Any) -> Any:
        return method if method is not None else (lambda f: f)

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def make_tracer(mode: str) -> Any:
    """A Powertools Tracer when `mode` is 'xray', else NoTracer."""
    if mode.strip().lower() == "xray":
        from aws_lambda_powertools import Tracer

        return Tracer(service=SERVICE)
    return NoTracer()


class InvocationLogger(Logger):
    """Powertools' Logger whose keys belong to the invocation that appends them.

    Powertools keeps appended keys (the Lambda context, the correlation id, a document id) on the
    logger itself, for the life of the process: a warm Lambda's next invocation, or a request that a
    local worker serves at the same time in another thread, logged them as its own. Here every key is
    kept in Powertools' context-variable ("thread-safe") keys instead, and `inject_lambda_context`
    starts and ends each invocation with none: a log line carries only its own invocation's keys."""

    def append_keys(self, **additional_keys: object) -> None:
        self.thread_safe_append_keys(**additional_keys)

    def remove_keys(self, keys: Iterable[str]) -> None:
        gone = set(keys)
        # A new dict, never the one another context may share.
        kept = {k: v for k, v in self.thread_safe_get_current_keys().items() if k not in gone}
        self.thread_safe_clear_keys()
        self.thread_safe_append_keys(**kept)

    def inject_lambda_context(self, lambda_handler: Any = None, **options: Any) -> Any:  # type: ignore[override]
        if lambda_handler is None:
            return functools.partial(self.inject_lambda_context, **options)
        inner = super().inject_lambda_context(lambda_handler, **options)

        @functools.wraps(lambda_handler)
        def invocation(event: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
            self.thread_safe_clear_keys()
            try:
                return inner(event, context, *args, **kwargs)
            finally:
                self.thread_safe_clear_keys()

        return invocation


logger = InvocationLogger(service=SERVICE)
# Decided once at import, as Lambda configuration is: the process entry point's environment.
tracer = make_tracer(os.environ.get("ENGRAM_TRACING", "off"))
metrics = Metrics(namespace="Engram", service=SERVICE)
# A request refused before it does anything (a 4xx) adds no metric, and that is expected: Powertools would
# warn on every such invocation, into the Lambda's logs and onto `engram local`'s terminal.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
