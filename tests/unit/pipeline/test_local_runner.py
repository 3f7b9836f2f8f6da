"""The in-process runner calls the step handlers through the invoker it is given (the local stack
gives it engram.local.functions.invoke_pipeline_step), and composition refuses to guess one."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engram import deps
from engram.documents.runs import DocumentRef
from engram.pipeline.runner import LocalRunner
from engram.pipeline.steps import DETECT, EXTRACT_FAMILIES, FINISH, STAGES
from engram.settings import Settings


def _invoker(family: str | None, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        calls.append((function, event))
        output = {k: v for k, v in event.items() if k != "outcome"}
        return {**output, "family": family} if function == DETECT.function else output

    return invoke


@pytest.mark.parametrize("family", sorted(EXTRACT_FAMILIES))
def test_the_runner_calls_each_step_and_the_detected_familys_extract_then_finish(family: str) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    ref = DocumentRef(uuid.uuid4(), uuid.uuid4(), 1)

    status = LocalRunner(_invoker(family, calls), sleep=lambda _: None).run(ref)

    assert status == "done"
    expected = [stage.choose({"family": family}).function for stage in STAGES]
    assert [function for function, _ in calls] == [*expected, FINISH.function]
    assert expected[1] == EXTRACT_FAMILIES[family].function
    assert all(event == ref.to_event() for _, event in calls[:-1])  # ids only, as a Task's payload
    assert calls[-1][1]["outcome"] == "done"


def test_a_family_no_extract_function_knows_fails_the_document_at_extract() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    status = LocalRunner(_invoker("spreadsheets", calls), sleep=lambda _: None).run(
        DocumentRef(uuid.uuid4(), uuid.uuid4(), 1)
    )

    assert status == "failed"
    assert [function for function, _ in calls] == [DETECT.function, FINISH.function]
    assert calls[-1][1]["step"] == "extract" and calls[-1][1]["outcome"] == "failed"


def test_without_a_state_machine_or_a_local_invoker_no_pipeline_can_start() -> None:
    previous = deps.current()
    deps.install(deps.Deps(settings=Settings(state_machine_arn=None)))
    try:
        with pytest.raises(RuntimeError, match="ENGRAM_STATE_MACHINE_ARN"):
            deps.pipeline_starter()
    finally:
        deps.install(previous)
