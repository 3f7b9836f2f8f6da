"""The steps by name (engram.pipeline.steps), each in its own module (engram.pipeline.stages), so that a
step's Lambda imports only its own step's code and what that uses (load_step, in its init phase)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.documents.runs import DocumentRef
    from engram.pipeline.context import PipelineContext

# A step's output beyond the ids (detect's {"family": ...}, which routes the next step), or None.
StepFunction = Callable[["PipelineContext", "DocumentRef"], "dict[str, Any] | None"]

# By step name, as in engram.pipeline.steps.STEPS (every extract function runs `extract`): the module
# under engram.pipeline.stages, whose function `<module>_step` runs it.
STEP_MODULES: dict[str, str] = {
    "detect": "detect",
    "extract": "extract",
    "chunk": "chunk",
    "embed": "embed",
    "llm-extract": "llm_extract",
    "graph-link": "graph_link",
}

# The modules of the collaborators a step uses in every run, which the context builds only when a step
# first asks (engram.pipeline.context): imported with the step's own, so that they too load in the init
# phase. (What only some documents need, a type's reader library or the URL fetcher, is not here.)
COLLABORATOR_MODULES: dict[str, tuple[str, ...]] = {
    "llm-extract": ("engram.memories.writer",),
    "graph-link": ("engram.memories.writer",),
}


def load_step(step: str) -> StepFunction:
    """The step's function, its module and those of the collaborators it always uses imported now (a
    step's handler calls this as it is imported)."""
    for collaborator in COLLABORATOR_MODULES.get(step, ()):
        importlib.import_module(collaborator)
    module = STEP_MODULES[step]
    stage = importlib.import_module(f"engram.pipeline.stages.{module}")
    found: StepFunction = getattr(stage, f"{module}_step")
    return found


def _loaded_when_run(step: str) -> StepFunction:
    def run(ctx: PipelineContext, ref: DocumentRef) -> dict[str, Any] | None:
        return load_step(step)(ctx, ref)

    run.__name__ = f"{STEP_MODULES[step]}_step"
    return run


# What run_step calls (tests replace entries to inject failures). Each entry imports its module when
# first run, so that whoever runs one step (a step's Lambda, a test) loads no other step's code.
STEP_FUNCTIONS: dict[str, StepFunction] = {step: _loaded_when_run(step) for step in STEP_MODULES}
