"""The one place that owns Powertools' Logger, Tracer and Metrics.

X-Ray SDK tracing is opt-in: `ENGRAM_TRACING=xray`. Importing the SDK (and the botocore it pulls in)
costs every function ~0.5 s of CPU at cold start, more than all the rest of a handler's imports;
`make bench` measures it. Without it, Lambda's own active tracing still records each invocation.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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


logger = Logger(service=SERVICE)
# Decided once at import, as Lambda configuration is: the process entry point's environment.
tracer = make_tracer(os.environ.get("ENGRAM_TRACING", "off"))
metrics = Metrics(namespace="Engram", service=SERVICE)
