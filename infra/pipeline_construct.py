"""The ingestion state machine and what feeds it, as one construct the main stack wires in.

The step list comes from `engram.pipeline.steps` (shared with the local runner), so AWS and
`engram local` run the same steps in the same order with the same limits:

    Detect -> ByFamily -> Extract | ExtractOffice | ExtractCode | ExtractMedia
           -> Chunk -> Embed -> LlmExtract -> GraphLink -> MarkDone -> Done
         \\ (any failure, after retries) -> <Step>Failed (notes the step) -> MarkFailed -> Failed

- Detect names the file's family; the ByFamily Choice sends it to that family's extract function, which
  has only that family's libraries (each function stays within Lambda's 250 MB);

- every Task has TimeoutSeconds (the step's Lambda timeout plus a margin);
- Retry covers transient errors only (Lambda service errors and throttling, our TransientError),
  with exponential backoff and full jitter; a PipelineFailure (bad input) is never retried;
- Catch sends every other failure to MarkFailed, which records the error and removes whatever the
  run wrote; MarkDone marks the document done;
- states pass ids only ({tenant_id, document_id, revision}), never content.

Also here: the EventBridge rule that feeds S3 "Object Created" events (outside the work prefix) to the
trigger Lambda, the rule that hands executions that timed out or were aborted to the finish Lambda,
and the schedule of the sweeper that fails documents left unfinished.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

try:
    from engram.pipeline import steps as pipeline
    from engram.settings import WORK_PREFIX
except ImportError:  # the CDK app runs from infra/ without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
    from engram.pipeline import steps as pipeline
    from engram.settings import WORK_PREFIX

IDS = {"tenant_id.$": "$.tenant_id", "document_id.$": "$.document_id", "revision.$": "$.revision"}
# The extract functions that call Textract (scanned PDF pages, images) and Transcribe (audio).
OCR_AND_TRANSCRIPTION: dict[str, tuple[str, ...]] = {
    "documents": ("textract:DetectDocumentText",),
    "media": (
        "textract:DetectDocumentText",
        "transcribe:StartTranscriptionJob",
        "transcribe:GetTranscriptionJob",
    ),
}


class PipelineStateMachine(Construct):
    """Args:
    step_functions: the Lambda of each step, keyed by `Step.function` ("detect", "extract",
        "extract_office", ..., "chunk", "embed", "llm_extract", "graph_link"), each built from
        functions/pipeline/<key>/handler.py with timeout `Step.timeout_seconds` and memory `Step.memory_mb`.
    finish_function: functions/pipeline/finish (mark-done, mark-failed, execution-ended events).
    trigger_function: functions/pipeline/trigger (S3 object created -> document -> execution).
    sweeper_function: functions/pipeline/sweeper (scheduled).
    bucket: the documents bucket (drops under <tenant-id>/<container>/, work files under _engram/).
    starters: other functions that start executions and store uploads (the documents API).
    rule_target: makes each rule's Lambda target (function, retry_attempts=, max_event_age=); the stack
        passes one that keeps what fails in its async-failures queue (infra/failures.py).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        step_functions: Mapping[str, lambda_.IFunction],
        finish_function: lambda_.IFunction,
        trigger_function: lambda_.IFunction,
        sweeper_function: lambda_.IFunction,
        bucket: s3.IBucket,
        starters: Sequence[lambda_.IFunction] = (),
        sweep_every: Duration | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        rule_target: Callable[..., events.IRuleTarget] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._target = rule_target or targets.LambdaFunction
        missing = [s.function for s in pipeline.STEPS if s.function not in step_functions]
        if missing:
            raise ValueError(f"no Lambda given for pipeline step(s): {', '.join(missing)}")

        mark_failed = self._finish_task(
            "MarkFailed",
            finish_function,
            {**IDS, "outcome": "failed", "step.$": "$.step", "error.$": "$.error"},
        )
        # If even MarkFailed cannot run, the sweeper (and the execution-ended rule) fail the document.
        mark_failed.add_catch(
            sfn.Fail(
                self,
                "MarkFailedFailed",
                error="MarkFailedFailed",
                cause="could not record the failure; the sweeper will",
            )
        )
        mark_failed.next(
            sfn.Fail(
                self,
                "Failed",
                error="IngestFailed",
                cause="the document could not be ingested: see its error",
            )
        )

        chain: sfn.Chain | None = None
        for stage in pipeline.STAGES:
            if isinstance(stage, pipeline.Route):
                assert chain is not None, "a route needs a step before it to choose by"
                choice = self._route(stage, step_functions, mark_failed)
                chain = chain.next(choice)
                after = choice.afterwards()  # the branches' ends: the next stage follows each of them
                chain = sfn.Chain.custom(chain.start_state, after.end_states, after)
                continue
            task = self._step_task(stage, step_functions, mark_failed)
            chain = sfn.Chain.start(task) if chain is None else chain.next(task)
        assert chain is not None

        mark_done = self._finish_task("MarkDone", finish_function, {**IDS, "outcome": "done"})
        self._on_failure(mark_done, "MarkDone", "mark-done", mark_failed)
        chain = chain.next(mark_done).next(sfn.Succeed(self, "Done"))

        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(chain),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=Duration.seconds(pipeline.EXECUTION_TIMEOUT_SECONDS),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=logs.LogGroup(
                    self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
                ),
                level=sfn.LogLevel.ERROR,
            ),
        )

        self._permissions(step_functions, trigger_function, sweeper_function, starters)
        self._environment(
            [*step_functions.values(), finish_function, trigger_function, sweeper_function, *starters],
            bucket,
            [trigger_function, *starters],
        )
        self._rules(bucket, trigger_function, finish_function, sweeper_function, sweep_every)

    # --- states -------------------------------------------------------------------------------

    def _step_task(
        self,
        step: pipeline.Step,
        step_functions: Mapping[str, lambda_.IFunction],
        mark_failed: sfn.IChainable,
    ) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            step.state,
            lambda_function=step_functions[step.function],
            payload=sfn.TaskInput.from_object(dict(IDS)),
            payload_response_only=True,  # the step returns the ids (and detect the family): the next input
            retry_on_service_exceptions=False,  # our own Retry below covers them
            task_timeout=sfn.Timeout.duration(
                Duration.seconds(step.timeout_seconds + pipeline.TASK_TIMEOUT_MARGIN_SECONDS)
            ),
            comment=f"{step.name} ({step.function}): the document is '{step.status}' while this runs",
        )
        self._retry(task)
        self._on_failure(task, step.state, step.name, mark_failed)
        return task

    def _route(
        self,
        route: pipeline.Route,
        step_functions: Mapping[str, lambda_.IFunction],
        mark_failed: sfn.IChainable,
    ) -> sfn.Choice:
        """A Choice on the previous step's `route.key`, one branch (a Task) per value."""
        choice = sfn.Choice(self, route.state, comment=f"{route.name}: the function for the {route.key}")
        for value, step in route.branches.items():
            branch = self._step_task(step, step_functions, mark_failed)
            choice.when(sfn.Condition.string_equals(f"$.{route.key}", value), branch)
        unknown = sfn.Pass(
            self,
            f"{route.state}Unknown",
            parameters={
                **IDS,
                "step": route.name,
                "error": {
                    "Error": "UnsupportedType",
                    "Cause": f"no {route.name} function for this {route.key}",
                },
            },
        )
        choice.otherwise(unknown.next(mark_failed))
        return choice

    def _finish_task(
        self, state: str, function: lambda_.IFunction, payload: dict[str, object]
    ) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            state,
            lambda_function=function,
            payload=sfn.TaskInput.from_object(payload),
            payload_response_only=True,
            retry_on_service_exceptions=False,
            task_timeout=sfn.Timeout.duration(
                Duration.seconds(pipeline.FINISH.timeout_seconds + pipeline.TASK_TIMEOUT_MARGIN_SECONDS)
            ),
        )
        self._retry(task)
        return task

    @staticmethod
    def _retry(task: tasks.LambdaInvoke) -> None:
        task.add_retry(
            errors=list(pipeline.TRANSIENT_ERRORS),
            interval=Duration.seconds(pipeline.RETRY_INTERVAL_SECONDS),
            backoff_rate=pipeline.RETRY_BACKOFF_RATE,
            max_attempts=pipeline.RETRY_MAX_ATTEMPTS,
            max_delay=Duration.seconds(pipeline.RETRY_MAX_DELAY_SECONDS),
            jitter_strategy=sfn.JitterType.FULL,
        )

    def _on_failure(
        self, task: tasks.LambdaInvoke, state: str, step: str, mark_failed: sfn.IChainable
    ) -> None:
        # The Pass state names the failed step for the document's error; only ids and the error go on.
        note = sfn.Pass(self, f"{state}Failed", parameters={**IDS, "step": step, "error.$": "$.error"})
        note.next(mark_failed)
        task.add_catch(note, errors=["States.ALL"], result_path="$.error")

    # --- wiring -------------------------------------------------------------------------------

    def _permissions(
        self,
        step_functions: Mapping[str, lambda_.IFunction],
        trigger: lambda_.IFunction,
        sweeper: lambda_.IFunction,
        starters: Sequence[lambda_.IFunction],
    ) -> None:
        # What each function may do in the bucket is granted action by action by the stack
        # (infra/s3_access.py), from the code's own S3 calls.
        for function in (trigger, *starters):
            self.state_machine.grant_start_execution(function)
        # Neither service supports resource-level permissions for these calls: "*".
        for family, actions in OCR_AND_TRANSCRIPTION.items():
            step_functions[pipeline.EXTRACT_FAMILIES[family].function].add_to_role_policy(
                iam.PolicyStatement(actions=list(actions), resources=["*"])
            )
        del sweeper  # only the database: its access comes with the stack's database wiring

    def _environment(
        self,
        functions: Sequence[lambda_.IFunction],
        bucket: s3.IBucket,
        starters: Sequence[lambda_.IFunction],
    ) -> None:
        for function in dict.fromkeys(functions):
            if isinstance(function, lambda_.Function):
                function.add_environment("ENGRAM_DOCUMENTS_BUCKET", bucket.bucket_name)
                function.add_environment("ENGRAM_WORK_PREFIX", WORK_PREFIX)
        for function in starters:
            if isinstance(function, lambda_.Function):
                function.add_environment("ENGRAM_STATE_MACHINE_ARN", self.state_machine.state_machine_arn)

    def _rules(
        self,
        bucket: s3.IBucket,
        trigger: lambda_.IFunction,
        finish: lambda_.IFunction,
        sweeper: lambda_.IFunction,
        sweep_every: Duration | None,
    ) -> None:
        if isinstance(bucket, s3.Bucket):
            bucket.enable_event_bridge_notification()
        events.Rule(
            self,
            "ObjectCreated",
            description="S3 drops (not the pipeline's own work files) start ingestion",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [bucket.bucket_name]},
                    "object": {"key": [{"anything-but": {"prefix": WORK_PREFIX}}]},
                },
            ),
            targets=[self._target(trigger, retry_attempts=8, max_event_age=Duration.hours(6))],
        )
        events.Rule(
            self,
            "ExecutionEnded",
            description="executions that timed out or were aborted skip MarkFailed: fail their document",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": ["FAILED", "TIMED_OUT", "ABORTED"],
                    "stateMachineArn": [self.state_machine.state_machine_arn],
                },
            ),
            targets=[self._target(finish, retry_attempts=8)],
        )
        events.Rule(
            self,
            "Sweep",
            description="fail documents left unfinished (an execution that never started)",
            schedule=events.Schedule.rate(sweep_every or Duration.minutes(15)),
            targets=[self._target(sweeper, retry_attempts=2)],
        )
