"""The ingestion pipeline wired into the stack: the state machine construct (infra/pipeline_construct.py)
gets the step Lambdas, finish, trigger and sweeper from Functions (all in the VPC with the database
settings), the documents bucket, and the documents API as a starter (uploads and POST /v1/documents).
The construct adds the bucket and state machine settings, the Step Functions grants, Textract and
Transcribe for the extract step, and the rules: S3 drops -> trigger, executions that ended early ->
finish, and the sweeper's schedule; what those rules' functions fail on lands in the async-failures
queue. What each function may do in the bucket is granted by the stack, action by action
(infra/s3_access.py)."""

from __future__ import annotations

from aws_cdk import aws_s3 as s3
from constructs import Construct

from engram.pipeline import steps
from engram.settings import WORK_PREFIX
from infra.build import DOCUMENTS_FUNCTION, PIPELINE_PREFIX
from infra.config import StageConfig, log_retention
from infra.failures import AsyncFailures
from infra.functions import Functions
from infra.pipeline_construct import PipelineStateMachine

# Deleting a container deletes its documents, and with them their stored files (list and delete only).
CONTAINERS_API_FUNCTION = "containers"


class Ingestion(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        functions: Functions,
        bucket: s3.IBucket,
        failures: AsyncFailures,
    ) -> None:
        super().__init__(scope, id)

        self.pipeline = PipelineStateMachine(
            self,
            "Pipeline",
            step_functions={s.function: functions[PIPELINE_PREFIX + s.function] for s in steps.STEPS},
            finish_function=functions[PIPELINE_PREFIX + steps.FINISH.function],
            trigger_function=functions[PIPELINE_PREFIX + steps.TRIGGER_FUNCTION],
            sweeper_function=functions[PIPELINE_PREFIX + steps.SWEEPER_FUNCTION],
            bucket=bucket,
            starters=[functions[DOCUMENTS_FUNCTION]],
            log_retention=log_retention(config.log_retention_days),
            rule_target=failures.target,
        )
        self.state_machine = self.pipeline.state_machine
        containers = functions[CONTAINERS_API_FUNCTION]  # its S3 grant: infra/s3_access.py
        containers.add_environment("ENGRAM_DOCUMENTS_BUCKET", bucket.bucket_name)
        containers.add_environment("ENGRAM_WORK_PREFIX", WORK_PREFIX)
