"""Migrations at deploy time: a CDK Trigger invokes the migrate function after the database and proxy
exist, and again whenever the function changes (its asset holds migrations/, so a new migration file is
a change). The runner skips what is applied, so a re-run is a no-op; a failure fails the deploy.
"""

from __future__ import annotations

from aws_cdk import Duration, triggers
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


class Migrations(Construct):
    def __init__(
        self, scope: Construct, id: str, *, function: lambda_.Function, after: list[Construct]
    ) -> None:
        super().__init__(scope, id)
        self.trigger = triggers.Trigger(
            self,
            "Run",
            handler=function,
            timeout=Duration.minutes(10),
            invocation_type=triggers.InvocationType.REQUEST_RESPONSE,
            execute_on_handler_change=True,
            execute_after=after,
        )
