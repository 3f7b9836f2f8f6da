"""An invocation that adds no metric (a request refused before it did anything) prints nothing about it:
Powertools warns 'No application metrics to publish' on each, into Lambda's logs and onto `engram local`'s
terminal. Run in a fresh interpreter, as a Lambda runs: pytest's own warning filters would hide it."""

from __future__ import annotations

import subprocess
import sys

INVOKE = """
from engram.observability import metrics

@metrics.log_metrics
def handler(event, context):
    return {"statusCode": 422}

for _ in range(3):
    assert handler({}, None) == {"statusCode": 422}
print("invoked")
"""


def test_an_invocation_without_metrics_warns_nothing() -> None:
    run = subprocess.run([sys.executable, "-c", INVOKE], capture_output=True, text=True, timeout=60)

    assert run.stdout.strip() == "invoked", run.stderr
    assert "No application metrics" not in run.stderr
