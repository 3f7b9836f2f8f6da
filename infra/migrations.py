"""Migrations at deploy time: a CDK Trigger invokes the migrate function after the database and proxy
exist, and again whenever the function changes (its asset holds migrations/, so a new migration file is
a change). The runner skips what is applied, so a re-run is a no-op; a failure fails the deploy.

The Trigger waits as long as the function may run (MIGRATE_TIMEOUT_S, below Lambda's 15 minutes so that
the Trigger's own provider, itself a 15-minute Lambda, outlives the call).
"""

from __future__ import annotations

from aws_cdk import Duration, triggers
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

MIGRATE_TIMEOUT_S = 840  # the migrate function's timeout: a large tenant's index builds within it
TRIGGER_TIMEOUT_S = 900  # how long the Trigger waits for it; its provider Lambda runs 900 s at most


class Migrations(Construct):
    def __init__(
        self, scope: Construct, id: str, *, function: lambda_.Function, after: list[Construct]
    ) -> None:
        super().__init__(scope, id)
        if function.timeout is None or function.timeout.to_seconds() > TRIGGER_TIMEOUT_S:
            raise ValueError("the migrate function may run longer than the Trigger waits for it")
        self.trigger = triggers.Trigger(
            self,
            "Run",
            handler=function,
            timeout=Duration.seconds(TRIGGER_TIMEOUT_S),
            invocation_type=triggers.InvocationType.REQUEST_RESPONSE,
            execute_on_handler_change=True,
            execute_after=after,
        )
