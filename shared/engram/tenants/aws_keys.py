"""API keys for a deployed stage: `engram keys create|revoke|list --tenant NAME --stage STAGE`.

A key is one random string used twice: as the value of an API Gateway API key (so the usage plan
throttles and meters it: the authorizer returns it as `usageIdentifierKey`) and, hashed, as the
tenant's row in `api_keys` (so the authorizer can map it to the tenant). The CLI makes the key, creates
the API Gateway key and attaches it to the usage plan, then asks the admin function to store the hash;
if that fails the API Gateway key is deleted again. The plaintext is printed once and stored nowhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from engram.errors import EngramError, InvalidInput, NotFound
from engram.tenants.keys import from_plaintext, new_api_key, visible_prefix
from engram.tenants.service import IssuedKey, check_key_name, check_tenant_name

# CloudFormation outputs of the Engram stack (infra/stack.py) that the CLI reads.
OUTPUT_USAGE_PLAN = "UsagePlanId"
OUTPUT_ADMIN_FUNCTION = "AdminFunctionName"
OUTPUT_API_URL = "ApiUrl"


def stack_name(stage: str) -> str:
    return f"Engram-{stage}"


def api_key_name(stage: str, tenant: str, prefix: str) -> str:
    return f"engram-{stage}-{tenant}-{prefix}"


class AdminFunctionError(EngramError):
    status_code = 502
    code = "admin_function_failed"


@dataclass(frozen=True)
class StageResources:
    stage: str
    usage_plan_id: str
    admin_function: str
    api_url: str

    @classmethod
    def from_stack(cls, cloudformation: Any, stage: str) -> StageResources:
        try:
            stacks = cloudformation.describe_stacks(StackName=stack_name(stage))["Stacks"]
        except cloudformation.exceptions.ClientError as exc:
            raise NotFound(
                f"no deployed stack {stack_name(stage)!r}: run `make deploy STAGE={stage}` first"
            ) from exc
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        missing = [k for k in (OUTPUT_USAGE_PLAN, OUTPUT_ADMIN_FUNCTION, OUTPUT_API_URL) if k not in outputs]
        if missing:
            raise NotFound(f"stack {stack_name(stage)!r} has no output {', '.join(missing)}; redeploy it")
        return cls(stage, outputs[OUTPUT_USAGE_PLAN], outputs[OUTPUT_ADMIN_FUNCTION], outputs[OUTPUT_API_URL])


class AwsKeys:
    def __init__(self, resources: StageResources, *, apigateway: Any, lambda_client: Any) -> None:
        self.resources, self.apigateway, self.lambda_client = resources, apigateway, lambda_client

    @classmethod
    def for_stage(cls, stage: str, *, region: str | None = None) -> AwsKeys:
        import boto3

        session = boto3.Session(region_name=region)
        resources = StageResources.from_stack(session.client("cloudformation"), stage)
        return cls(resources, apigateway=session.client("apigateway"), lambda_client=session.client("lambda"))

    def create(self, tenant: str, *, label: str = "") -> IssuedKey:
        check_tenant_name(tenant)
        check_key_name(label)  # before API Gateway keeps it as the key's description
        key = new_api_key()
        created = self.apigateway.create_api_key(
            name=api_key_name(self.resources.stage, tenant, key.prefix),
            description=label or f"Engram key for tenant {tenant}",
            enabled=True,
            value=key.plaintext,
            tags={"engram:tenant": tenant, "engram:stage": self.resources.stage},
        )
        try:
            self.apigateway.create_usage_plan_key(
                usagePlanId=self.resources.usage_plan_id, keyId=created["id"], keyType="API_KEY"
            )
            stored = self.invoke_admin(
                {
                    "action": "register_key",
                    "tenant": tenant,
                    "key_hash": key.key_hash.hex(),
                    "prefix": key.prefix,
                    "label": label,
                }
            )
        except BaseException:
            self.apigateway.delete_api_key(apiKey=created["id"])
            raise
        return IssuedKey(
            tenant_id=UUID(stored["tenant_id"]),
            tenant_name=tenant,
            key_id=UUID(stored["key_id"]),
            plaintext=key.plaintext,
            prefix=key.prefix,
        )

    def revoke(self, tenant: str, *, plaintext: str | None = None, prefix: str | None = None) -> int:
        """Mark the key revoked in the database, then delete its API Gateway key: API Gateway refuses
        it at once, even while the authorizer's cached answer for it lives on."""
        if bool(plaintext) == bool(prefix):
            raise InvalidInput("give exactly one of --key and --prefix")
        selector = {"key_hash": from_plaintext(plaintext).key_hash.hex()} if plaintext else {"prefix": prefix}
        revoked = int(self.invoke_admin({"action": "revoke_key", "tenant": tenant, **selector})["revoked"])
        name = api_key_name(
            self.resources.stage, tenant, visible_prefix(plaintext) if plaintext else str(prefix)
        )
        deleted = 0
        for api_key in self._api_keys_named(name):
            if plaintext and api_key.get("value") != plaintext:
                continue
            self.apigateway.delete_api_key(apiKey=api_key["id"])
            deleted += 1
        return max(revoked, deleted)

    def list_keys(self, tenant: str) -> list[dict[str, Any]]:
        keys: list[dict[str, Any]] = self.invoke_admin({"action": "list_keys", "tenant": tenant})["keys"]
        return keys

    def _api_keys_named(self, name: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in self.apigateway.get_paginator("get_api_keys").paginate(
            nameQuery=name, includeValues=True
        ):
            found.extend(item for item in page.get("items", []) if item.get("name") == name)
        return found

    def invoke_admin(self, payload: dict[str, Any]) -> dict[str, Any]:
        response = self.lambda_client.invoke(
            FunctionName=self.resources.admin_function,
            InvocationType="RequestResponse",
            Payload=json.dumps(payload).encode("utf-8"),
        )
        body = response["Payload"].read()
        result = json.loads(body) if body else None
        if response.get("FunctionError") or not isinstance(result, dict):
            message = result.get("errorMessage") if isinstance(result, dict) else None
            raise AdminFunctionError(f"the admin function failed: {message or 'no response'}")
        if not result.get("ok"):
            error = result.get("error") or {}
            raise InvalidInput(
                str(error.get("message", "the admin function refused the request")),
                details={"field": error["field"]} if error.get("field") else None,
            )
        return result
