"""Change events and conversation summaries after commit: the stack's EventBridge bus and the relay.

Writes record their change events in an outbox table in their own transaction (migration 0016). The relay
function runs every minute: it brings queued conversation summaries up to date (the LLM) and puts the
outbox's events on the bus `engram-<stage>-events` (source `engram`, detail-type the event type), where
rules route them: to SQS, Lambda, Step Functions, or an API destination that POSTs them to a URL. Its
failures land in the async-failures queue like every scheduled target's. The webhooks API answers that
this deployment uses the bus (functions here cannot reach the internet)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from constructs import Construct

from infra.build import RELAY_FUNCTION
from infra.config import StageConfig
from infra.failures import AsyncFailures
from infra.functions import Functions

RELAY_SCHEDULE = "rate(1 minute)"
WEBHOOKS_FUNCTION = "webhooks"


class ChangeEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        functions: Functions,
        failures: AsyncFailures,
    ) -> None:
        super().__init__(scope, id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=f"engram-{config.stage}-events")
        relay = functions[RELAY_FUNCTION]
        self.bus.grant_put_events_to(relay)
        for name in (RELAY_FUNCTION, WEBHOOKS_FUNCTION):
            functions[name].add_environment("ENGRAM_EVENT_BUS_NAME", self.bus.event_bus_name)
        self.relay_rule = events.Rule(
            self,
            "RelaySchedule",
            description="Engram: conversation summaries and change events, after commit",
            schedule=events.Schedule.expression(RELAY_SCHEDULE),
            # A run that fails is followed by the next one a minute later: no retries of its own.
            targets=[failures.target(relay, retry_attempts=0, max_event_age=Duration.minutes(5))],
        )
