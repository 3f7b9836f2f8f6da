"""Change events in AWS as wired into the stack: an EventBridge bus of the stack's own, the relay on a
one-minute schedule allowed to put events on that bus only, and the bus's name where the relay and the
webhooks API (which answers that this deployment uses the bus) read it."""

from __future__ import annotations

import json

from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions, ref


def test_the_relay_runs_every_minute_and_puts_events_on_the_stacks_bus(dev: Synth) -> None:
    (bus,) = dev.of_type("AWS::Events::EventBus")
    relay = engram_functions(dev)["relay"]
    schedules = [
        rule
        for rule in dev.of_type("AWS::Events::Rule").values()
        if rule["Properties"].get("ScheduleExpression") == "rate(1 minute)"
    ]
    puts = [
        statement
        for policy in dev.of_type("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "events:PutEvents"
    ]

    assert dev.props(bus)["Name"] == "engram-dev-events"
    (schedule,) = schedules
    assert [ref(t["Arn"]) for t in schedule["Properties"]["Targets"]] == [relay]
    assert puts and all(ref(s["Resource"]) == bus for s in puts)
    env = dev.props(relay)["Environment"]["Variables"]
    assert ref(env["ENGRAM_EVENT_BUS_NAME"]) == bus
    assert "EventBusName" in json.dumps(dev.template["Outputs"])
