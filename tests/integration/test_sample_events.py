"""Every file in events/ runs against its handler on the embedded PostgreSQL and succeeds.

The samples are what API Gateway (proxy events carrying an API key and the authorizer's context), the
authorizer (REQUEST events), the CDK Trigger (migrate) and the CLI (admin) send. The test rewrites only
what must point at this database: the tenant in the authorizer context is one the test created, and the
key in the authorizer event is created for a tenant first. The owner functions read the master secret
from Secrets Manager (moto), which holds this database's owner credentials.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from engram import deps
from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.local.functions import LocalLambdaContext, handler_of
from engram.local.stack import LocalDatabase
from engram.settings import Settings
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
EVENTS = sorted(EVENTS_DIR.glob("*.json"))
OWNER_FUNCTIONS = ("migrate", "admin")


def function_of(path: Path) -> str:
    return path.name.split(".")[0]  # memories.list.json -> memories


def invoke(function: str, event: dict[str, Any]) -> Any:
    return handler_of(function)(event, LocalLambdaContext(function_name=function))


@pytest.fixture
def owner_secret(
    local_db: LocalDatabase, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The functions' settings as on AWS: ENGRAM_DB_SECRET_ARN pointing at a secret shaped like the one
    RDS generates, with this database's owner credentials in it."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    owner = conninfo_to_dict(local_db.admin_conninfo)
    if not owner.get("password"):  # RDS secrets always carry one; the embedded server trusts local logins
        owner["password"] = "embedded-trusts-local-logins"
    with mock_aws():
        secret = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="engram/test/master",
            SecretString=json.dumps(
                {
                    "engine": "postgres",
                    "host": owner.get("host", "localhost"),
                    "port": int(owner.get("port", 5432)),
                    "username": owner["user"],
                    "password": owner.get("password", ""),
                    "dbname": owner.get("dbname"),
                }
            ),
        )
        aws = settings.model_copy(
            update={
                "db_secret_arn": secret["ARN"],
                "db_sslmode": "disable",
                "db_name": owner.get("dbname"),
                "aws_region": "us-east-1",
            }
        )
        previous = deps.current()
        deps.install(deps.Deps(settings=aws, database=previous.database, embedder=previous.embedder))
        try:
            yield
        finally:
            owner_db = deps.current().admin_database
            if owner_db is not None:
                owner_db.close()
            deps.install(previous)


def test_every_function_has_a_sample_event() -> None:
    functions = {function_of(path) for path in EVENTS}
    assert functions == {*API_FUNCTIONS, AUTHORIZER_FUNCTION, *OWNER_FUNCTIONS}


@pytest.mark.parametrize("path", [p for p in EVENTS if function_of(p) in API_FUNCTIONS], ids=lambda p: p.name)
def test_api_event_succeeds(path: Path, tenant: IssuedKey) -> None:
    event = json.loads(path.read_text())
    if event["requestContext"].get("authorizer"):
        event["requestContext"]["authorizer"].update(
            tenantId=str(tenant.tenant_id), tenantName=tenant.tenant_name
        )

    response = invoke(function_of(path), event)

    assert 200 <= response["statusCode"] < 300, response
    assert isinstance(json.loads(response["body"]), dict)


def test_authorizer_event_allows_the_key_it_carries(local_db: LocalDatabase) -> None:
    event = json.loads((EVENTS_DIR / "authorizer.json").read_text())
    issued = tenants.issue_key(
        local_db.admin, f"ev-{uuid.uuid4().hex[:12]}", plaintext=event["headers"]["x-api-key"]
    )

    result = invoke(AUTHORIZER_FUNCTION, event)

    assert result["policyDocument"]["Statement"][0]["Effect"] == "Allow"
    assert result["context"]["tenantId"] == str(issued.tenant_id)
    assert result["usageIdentifierKey"] == issued.plaintext


@pytest.mark.usefixtures("owner_secret")
def test_migrate_event_succeeds_and_applies_nothing_twice() -> None:
    event = json.loads((EVENTS_DIR / "migrate.json").read_text())

    report = invoke("migrate", event)

    assert report["applied"] == []  # the session database is already migrated: a re-run is a no-op
    assert report["app_role"] == "engram_app" and report["vector_version"].startswith("0.")


@pytest.mark.usefixtures("owner_secret")
def test_admin_event_stores_the_key_hash() -> None:
    event = json.loads((EVENTS_DIR / "admin.json").read_text())
    event["tenant"] = f"ev-{uuid.uuid4().hex[:12]}"

    result = invoke("admin", event)

    assert result["ok"] is True, result
    assert result["tenant_name"] == event["tenant"] and uuid.UUID(result["key_id"])
