"""Where asynchronous work goes when it finally fails, so nothing is dropped in silence.

Lambda retries an asynchronous invocation twice and then drops the event; EventBridge drops what it
cannot deliver. Every async target (the trigger of S3 drops, finish for executions that ended early, the
sweeper, cleanup, the scheduled migrate, the export worker) therefore sends both kinds of failure to one
encrypted queue: Lambda through an on-failure destination (the record names the function, the error and
the original event), EventBridge through the rule target's dead-letter queue. An alarm fires as soon as
the queue holds a message, and the README says how to replay one.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import StageConfig

RETENTION = Duration.days(14)  # SQS's longest
LAMBDA_RETRIES = 2  # Lambda's default for async invocations, made explicit


class AsyncFailures(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig) -> None:
        super().__init__(scope, id)
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=f"engram-{config.stage}-async-failures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
        )
        self.alarm = cw.Alarm(
            self,
            "Depth",
            metric=self.queue.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(5), statistic="Maximum"
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=f"Engram: async work failed for good; see the queue {self.queue.queue_name}",
        )
        self._protected: set[str] = set()

    def target(
        self, function: lambda_.IFunction, *, retry_attempts: int = 2, max_event_age: Duration | None = None
    ) -> targets.LambdaFunction:
        """An EventBridge target for `function` whose undeliverable events, and whose events the function
        fails on after Lambda's retries, land in the queue."""
        self.protect(function)
        return targets.LambdaFunction(
            function,
            retry_attempts=retry_attempts,
            max_event_age=max_event_age or Duration.hours(24),
            dead_letter_queue=self.queue,
        )

    def protect(self, function: lambda_.IFunction) -> None:
        """The function's async invocations that still fail after Lambda's retries go to the queue."""
        if function.node.path in self._protected:
            return
        self._protected.add(function.node.path)
        function.configure_async_invoke(
            on_failure=destinations.SqsDestination(self.queue),
            retry_attempts=LAMBDA_RETRIES,
            max_event_age=Duration.hours(6),
        )
