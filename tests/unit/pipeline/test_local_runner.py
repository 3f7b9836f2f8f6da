"""The in-process runner calls the step handlers through the invoker it is given (the local stack
gives it engram.local.functions.invoke_pipeline_step), and composition refuses to guess one."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engram import deps
from engram.documents.runs import DocumentRef
from engram.pipeline.runner import LocalRunner
from engram.pipeline.steps import FINISH, STEPS
from engram.settings import Settings


def test_the_runner_calls_each_step_then_finish_through_its_invoker() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        calls.append((function, event))
        return {k: v for k, v in event.items() if k != "outcome"}

    ref = DocumentRef(uuid.uuid4(), uuid.uuid4(), 1)
    status = LocalRunner(invoke, sleep=lambda _: None).run(ref)

    assert status == "done"
    assert [function for function, _ in calls] == [*(s.function for s in STEPS), FINISH.function]
    assert calls[-1][1]["outcome"] == "done"


def test_without_a_state_machine_or_a_local_invoker_no_pipeline_can_start() -> None:
    previous = deps.current()
    deps.install(deps.Deps(settings=Settings(state_machine_arn=None)))
    try:
        with pytest.raises(RuntimeError, match="ENGRAM_STATE_MACHINE_ARN"):
            deps.pipeline_starter()
    finally:
        deps.install(previous)
