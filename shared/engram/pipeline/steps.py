"""THE step list. The CDK state machine (infra/pipeline_construct.py) and the local runner both read
it, so AWS and `engram local` run the same steps in the same order with the same time limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    name: str  # as the logs and a failed document's error name it: "llm-extract"
    state: str  # the Step Functions state name: "LlmExtract"
    function: str  # folder under functions/pipeline/: "llm_extract"
    status: str  # the document's status while this step runs
    timeout_seconds: int  # the Lambda's timeout; the Task's TimeoutSeconds adds TASK_TIMEOUT_MARGIN
    memory_mb: int
    extras: tuple[str, ...] = ()  # optional-dependency groups (pyproject.toml) it gets as its own layers

    def choose(self, state: Mapping[str, object]) -> Step:
        return self


@dataclass(frozen=True)
class Route:
    """A stage that runs one of several functions, chosen by a field of the previous step's output:
    a Choice state in AWS, a lookup in the local runner."""

    name: str
    state: str  # the Choice state's name
    key: str  # the output field that chooses: "family"
    branches: Mapping[str, Step]

    def choose(self, state: Mapping[str, object]) -> Step:
        value = state.get(self.key)
        if not isinstance(value, str) or value not in self.branches:
            raise KeyError(f"{self.name}: no branch for {self.key}={value!r}")
        return self.branches[value]


# The first step reads the file's first bytes (a URL's whole answer), tells its type and so its family,
# and the extract function of that family, holding only that family's libraries, reads it. Families and
# content types: engram.pipeline.readers.family_of.
DETECT = Step("detect", "Detect", "detect", "extracting", timeout_seconds=120, memory_mb=1024)
EXTRACT_FAMILIES: Mapping[str, Step] = {
    # text, Markdown, HTML and URLs, PDF (scanned pages through OCR), CSV/JSON, gzip, unknown types
    "documents": Step(
        "extract", "Extract", "extract", "extracting", 600, memory_mb=2048, extras=("extractors",)
    ),
    "office": Step(
        "extract", "ExtractOffice", "extract_office", "extracting", 300, memory_mb=1024, extras=("office",)
    ),
    "code": Step(
        "extract", "ExtractCode", "extract_code", "extracting", 120, memory_mb=1024, extras=("code",)
    ),
    # images (OCR, a vision model) and audio (transcription services)
    "media": Step(
        "extract", "ExtractMedia", "extract_media", "extracting", 600, memory_mb=1024, extras=("media",)
    ),
}
EXTRACT = Route("extract", "ByFamily", "family", EXTRACT_FAMILIES)

# What the state machine and the local runner run, in order.
STAGES: tuple[Step | Route, ...] = (
    DETECT,
    EXTRACT,
    Step("chunk", "Chunk", "chunk", "chunking", timeout_seconds=180, memory_mb=1024),
    Step("embed", "Embed", "embed", "embedding", timeout_seconds=600, memory_mb=1024),
    Step("llm-extract", "LlmExtract", "llm_extract", "indexing", timeout_seconds=600, memory_mb=1024),
    Step("graph-link", "GraphLink", "graph_link", "indexing", timeout_seconds=300, memory_mb=512),
)
# Every step function, each once (the routes' branches in place of their route).
STEPS: tuple[Step, ...] = tuple(
    step for stage in STAGES for step in (stage.branches.values() if isinstance(stage, Route) else (stage,))
)

# mark-done and mark-failed are one small function ("finish") invoked with an outcome.
FINISH = Step("finish", "MarkDone", "finish", "done", timeout_seconds=60, memory_mb=256)
MARK_FAILED_STATE = "MarkFailed"

# Starts executions for S3 drops, and the sweeper that fails documents left unfinished.
TRIGGER_FUNCTION = "trigger"
SWEEPER_FUNCTION = "sweeper"

# All functions under functions/pipeline/, for whoever packages them.
PIPELINE_FUNCTIONS: tuple[str, ...] = (
    *(step.function for step in STEPS),
    FINISH.function,
    TRIGGER_FUNCTION,
    SWEEPER_FUNCTION,
)

TASK_TIMEOUT_MARGIN_SECONDS = 30
EXECUTION_TIMEOUT_SECONDS = 2 * 3600

# Retry policy for transient errors, shared by the state machine and the local runner.
RETRY_INTERVAL_SECONDS = 2
RETRY_BACKOFF_RATE = 2.0
RETRY_MAX_ATTEMPTS = 4  # retries after the first attempt
RETRY_MAX_DELAY_SECONDS = 60
TRANSIENT_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "TransientError",
)

STATUSES = ("queued", *dict.fromkeys(step.status for step in STEPS), "done", "failed")
FINAL_STATUSES = ("done", "failed")
