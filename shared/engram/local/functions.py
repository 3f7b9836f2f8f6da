"""Loading the Lambda handlers from `functions/<name>/handler.py`, as Lambda would."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def functions_dir() -> Path:
    # shared/engram/local/functions.py -> repository root
    return Path(__file__).resolve().parents[3] / "functions"


@cache
def load_function(name: str, root: Path | None = None) -> ModuleType:
    path = (root or functions_dir()) / name / "handler.py"
    if not path.is_file():
        raise FileNotFoundError(f"no handler for function {name!r} at {path}")
    module_name = f"engram_function_{name.replace('/', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def handler_of(name: str) -> Handler:
    handler: Handler = load_function(name).handler
    return handler


@dataclass
class LocalLambdaContext:
    """What Powertools reads from a Lambda context object."""

    function_name: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "local"
    log_stream_name: str = "local"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def invoke_pipeline_step(function: str, event: dict[str, Any]) -> dict[str, Any]:
    """Call functions/pipeline/<function>/handler.py exactly as Lambda would: the local runner's Invoke."""
    result: dict[str, Any] = handler_of(f"pipeline/{function}")(
        event, LocalLambdaContext(f"pipeline-{function}")
    )
    return result
