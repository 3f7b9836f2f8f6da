"""The ingestion state machine as synthesized: every Task has a timeout, transient errors are retried
with backoff, every failure is caught into MarkFailed, success ends in MarkDone, and states carry ids
only. Read from the CloudFormation template of a tiny stack holding just the construct."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from engram.pipeline import steps
from engram.settings import WORK_PREFIX
from infra.pipeline_construct import PipelineStateMachine

IDS = {"tenant_id.$": "$.tenant_id", "document_id.$": "$.document_id", "revision.$": "$.revision"}


def _function(stack: Stack, name: str) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
    )


@pytest.fixture(scope="module")
def template() -> Template:
    app = App()
    stack = Stack(app, "PipelineTest")
    bucket = s3.Bucket(stack, "Documents", event_bridge_enabled=True)
    api = _function(stack, "DocumentsApi")
    PipelineStateMachine(
        stack,
        "Pipeline",
        step_functions={step.function: _function(stack, step.state) for step in steps.STEPS},
        finish_function=_function(stack, "Finish"),
        trigger_function=_function(stack, "Trigger"),
        sweeper_function=_function(stack, "Sweeper"),
        bucket=bucket,
        starters=[api],
    )
    return Template.from_stack(stack)


def _render(value: Any) -> str:
    """Fn::Join of strings and tokens -> one string; the tokens become placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_render(part) for part in parts)
    return "TOKEN"


@pytest.fixture(scope="module")
def definition(template: Template) -> dict[str, Any]:
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    return json.loads(_render(machine["Properties"]["DefinitionString"]))


def _walk(states: dict[str, Any], start: str) -> list[str]:
    order = [start]
    while "Next" in states[order[-1]]:
        order.append(states[order[-1]]["Next"])
    return order


def test_the_steps_run_in_the_shared_order_then_mark_done(definition: dict[str, Any]) -> None:
    states = definition["States"]
    detect, route, *rest = steps.STAGES
    assert isinstance(route, steps.Route)
    tail = [s.state for s in rest if isinstance(s, steps.Step)] + ["MarkDone", "Done"]

    assert _walk(states, definition["StartAt"]) == [detect.state, route.state]
    assert states["Done"]["Type"] == "Succeed"
    assert definition["TimeoutSeconds"] == steps.EXECUTION_TIMEOUT_SECONDS
    # Each family's extract function goes on to the same chunk step.
    for family, step in route.branches.items():
        assert _walk(states, step.state) == [step.state, *tail], family


def test_detect_routes_each_family_to_its_own_extract_function(definition: dict[str, Any]) -> None:
    choice = definition["States"][steps.EXTRACT.state]

    assert choice["Type"] == "Choice"
    assert {(c["Variable"], c["StringEquals"], c["Next"]) for c in choice["Choices"]} == {
        ("$.family", family, step.state) for family, step in steps.EXTRACT_FAMILIES.items()
    }
    assert set(steps.EXTRACT_FAMILIES) == {"documents", "office", "code", "media"}
    # A family no branch knows fails the document (never a States.Runtime error, never a silent skip).
    unknown = definition["States"][choice["Default"]]
    assert unknown["Type"] == "Pass" and unknown["Next"] == "MarkFailed"
    assert unknown["Parameters"]["error"]["Error"] == "UnsupportedType"


@pytest.mark.parametrize("step", steps.STEPS, ids=lambda s: s.name)
def test_every_step_has_a_timeout_retries_transient_errors_and_catches_the_rest(
    definition: dict[str, Any], step: steps.Step
) -> None:
    state = definition["States"][step.state]

    assert state["Type"] == "Task"
    assert state["TimeoutSeconds"] == step.timeout_seconds + steps.TASK_TIMEOUT_MARGIN_SECONDS
    assert state["Parameters"] == IDS  # ids only, never content
    (retry,) = state["Retry"]
    assert retry["ErrorEquals"] == list(steps.TRANSIENT_ERRORS)
    assert {"TransientError", "Lambda.ServiceException", "Lambda.TooManyRequestsException"} <= set(
        retry["ErrorEquals"]
    )
    assert "States.ALL" not in retry["ErrorEquals"]  # bad input is never retried
    assert retry["BackoffRate"] == steps.RETRY_BACKOFF_RATE > 1
    assert retry["IntervalSeconds"] == steps.RETRY_INTERVAL_SECONDS
    assert retry["MaxAttempts"] == steps.RETRY_MAX_ATTEMPTS
    assert retry["JitterStrategy"] == "FULL"
    (catch,) = state["Catch"]
    assert catch == {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": f"{step.state}Failed"}
    note = definition["States"][f"{step.state}Failed"]
    assert note["Type"] == "Pass" and note["Next"] == "MarkFailed"
    assert note["Parameters"] == {**IDS, "step": step.name, "error.$": "$.error"}


def test_mark_failed_records_the_error_and_the_execution_fails(definition: dict[str, Any]) -> None:
    states = definition["States"]
    mark_failed, mark_done = states["MarkFailed"], states["MarkDone"]

    assert mark_failed["Parameters"] == {**IDS, "outcome": "failed", "step.$": "$.step", "error.$": "$.error"}
    assert mark_failed["Next"] == "Failed" and states["Failed"]["Type"] == "Fail"
    assert mark_failed["Catch"][0]["Next"] == "MarkFailedFailed"
    assert mark_done["Parameters"] == {**IDS, "outcome": "done"}
    assert mark_done["Catch"][0]["Next"] == "MarkDoneFailed"
    for state in (mark_failed, mark_done):
        assert state["TimeoutSeconds"] == steps.FINISH.timeout_seconds + steps.TASK_TIMEOUT_MARGIN_SECONDS
        assert state["Retry"][0]["ErrorEquals"] == list(steps.TRANSIENT_ERRORS)
    tasks = [s for s in states.values() if s["Type"] == "Task"]
    assert len(tasks) == len(steps.STEPS) + 2 and all("TimeoutSeconds" in s for s in tasks)


def test_s3_drops_outside_the_work_prefix_reach_the_trigger(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.s3"],
                "detail-type": ["Object Created"],
                "detail": {
                    "object": {"key": [{"anything-but": {"prefix": WORK_PREFIX}}]},
                    "bucket": {"name": [Match.any_value()]},
                },
            },
            "Targets": [
                Match.object_like({"Arn": {"Fn::GetAtt": [Match.string_like_regexp("Trigger"), "Arn"]}})
            ],
        },
    )


def test_executions_that_time_out_or_are_aborted_still_fail_their_document(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {
                    "source": ["aws.states"],
                    "detail": {
                        "status": ["FAILED", "TIMED_OUT", "ABORTED"],
                        "stateMachineArn": [Match.any_value()],
                    },
                }
            ),
        },
    )
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(15 minutes)"})


def test_the_trigger_and_the_api_may_start_executions_and_know_the_machine(template: Template) -> None:
    policies = template.find_resources("AWS::IAM::Policy")
    starters = [
        name
        for name, p in policies.items()
        if any(
            "states:StartExecution" in json.dumps(s["Action"])
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
    ]
    assert any("Trigger" in name for name in starters) and any("DocumentsApi" in name for name in starters)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "ENGRAM_STATE_MACHINE_ARN": Match.any_value(),
                        "ENGRAM_DOCUMENTS_BUCKET": Match.any_value(),
                    }
                )
            },
        },
    )
