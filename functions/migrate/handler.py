"""Applies migrations/ at deploy time (run by a CDK Trigger; see infra/migrations.py).

Connects as the master user from Secrets Manager, straight to the cluster (RDS Proxy only admits
IAM-authenticated app connections). Safe to run on every deploy: the runner skips what is applied.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    from engram.db.deploy import migrate_for_deploy  # the driver, on the first (usually only) call

    # A failure raises, which fails the Trigger and so the deployment (CloudFormation rolls back).
    return migrate_for_deploy(deps.current().settings).as_dict()
