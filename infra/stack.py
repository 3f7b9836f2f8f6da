"""The Engram stack: composes one construct per capability and exports what the CLI needs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from constructs import Construct

from engram.tenants.aws_keys import OUTPUT_ADMIN_FUNCTION, OUTPUT_API_URL, OUTPUT_USAGE_PLAN
from infra.api import Api
from infra.build import ADMIN_FUNCTION, MIGRATE_FUNCTION, Assets
from infra.changes import ChangeEvents
from infra.config import StageConfig
from infra.database import Database
from infra.failures import AsyncFailures
from infra.functions import Functions
from infra.ingestion import Ingestion
from infra.maintenance import Maintenance
from infra.migrations import Migrations
from infra.network import Network
from infra.observability import Observability
from infra.roles import share_identical_roles
from infra.s3_access import grant_s3
from infra.storage import Buckets


class EngramStack(Stack):
    def __init__(self, scope: Construct, *, config: StageConfig, assets: Assets, **kwargs: Any) -> None:
        super().__init__(scope, config.stack_name, description=f"Engram ({config.stage})", **kwargs)
        self.config = config
        # CloudFormation rejects Tags on proxy target groups, though CDK would render them.
        untaggable = ["AWS::RDS::DBProxyTargetGroup"]
        for key, value in {"project": "engram", "stage": config.stage, **config.tags}.items():
            Tags.of(self).add(key, value, exclude_resource_types=untaggable)

        self.network = Network(self, "Network", config=config)
        self.database = Database(self, "Database", config=config, network=self.network)
        self.functions = Functions(
            self,
            "Functions",
            config=config,
            network=self.network,
            database=self.database,
            assets=assets,
        )
        self.migrations = Migrations(
            self,
            "Migrations",
            function=self.functions[MIGRATE_FUNCTION],
            after=[
                *self.database.in_service,
                self.database.proxy,
                *self.network.interface_endpoints.values(),
            ],
        )
        # The master secret's rotation (whose first run changes the password at once) is set up only
        # once the deploy-time migration, which logs in with that password, has finished.
        self.database.rotation.node.add_dependency(self.migrations.trigger)
        # Nothing serves before the schema it reads exists (a first deploy: the relay's schedule, an API
        # call, an S3 event), nor new code before its migrations have run (an update).
        for name, function in self.functions.functions.items():
            if name != MIGRATE_FUNCTION:
                function.node.add_dependency(self.migrations.trigger)
        self.api = Api(self, "Api", config=config, functions=self.functions)
        self.buckets = Buckets(self, "Buckets", config=config)
        self.failures = AsyncFailures(self, "AsyncFailures", config=config)
        self.ingestion = Ingestion(
            self,
            "Ingestion",
            config=config,
            functions=self.functions,
            bucket=self.buckets.documents,
            failures=self.failures,
        )
        self.maintenance = Maintenance(
            self,
            "Maintenance",
            config=config,
            functions=self.functions,
            exports=self.buckets.exports,
            documents=self.buckets.documents,
            failures=self.failures,
        )
        grant_s3(
            self.functions.functions,
            {"documents": self.buckets.documents, "exports": self.buckets.exports},
        )
        self.changes = ChangeEvents(
            self, "ChangeEvents", config=config, functions=self.functions, failures=self.failures
        )
        self.observability = Observability(
            self,
            "Observability",
            config=config,
            api=self.api,
            functions=self.functions,
            database=self.database,
            failures=self.failures,
        )
        # Last, once every construct has granted its functions what they need: functions whose roles
        # hold exactly the same permissions share one of them (a later grant fails the synth).
        self.roles = share_identical_roles(self, self.functions.functions, f"Engram {config.stage}")

        CfnOutput(self, OUTPUT_API_URL, value=self.api.rest_api.url, description="Base URL of the API")
        CfnOutput(
            self,
            OUTPUT_USAGE_PLAN,
            value=self.api.usage_plan.usage_plan_id,
            description="Usage plan that `engram keys create --stage` attaches keys to",
        )
        CfnOutput(
            self,
            OUTPUT_ADMIN_FUNCTION,
            value=self.functions[ADMIN_FUNCTION].function_name,
            description="Function that `engram keys --stage` invokes to store key hashes",
        )
        CfnOutput(
            self,
            "DocumentsBucket",
            value=self.buckets.documents.bucket_name,
            description="Drop files under <tenant-id>/<container>/ to ingest them",
        )
        CfnOutput(self, "PipelineStateMachineArn", value=self.ingestion.state_machine.state_machine_arn)
        CfnOutput(self, "ExportsBucket", value=self.buckets.exports.bucket_name)
        CfnOutput(
            self,
            "EventBusName",
            value=self.changes.bus.event_bus_name,
            description="Change events (memory.*, document.*, session.summarized): add rules here",
        )
        CfnOutput(self, "ProxyEndpoint", value=self.database.proxy.endpoint)
        CfnOutput(self, "MasterSecretArn", value=self.database.master_secret.secret_arn)
        CfnOutput(
            self,
            "AsyncFailuresQueue",
            value=self.failures.queue.queue_url,
            description="Events that async functions failed on after their retries (an alarm watches it)",
        )
