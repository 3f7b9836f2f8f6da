"""Every function under functions/ has a sample in events/, and every sample runs against its handler on
the embedded PostgreSQL and succeeds.

The samples are what API Gateway (proxy events carrying an API key and the authorizer's context), the
authorizer (REQUEST events), the CDK Trigger (migrate), the CLI (admin), EventBridge (the cleanup and
sweeper schedules, S3 "Object Created", execution status changes) and the state machine (the step
payloads, events/pipeline/<step>.json) send. The test rewrites only what must point at this database:
the tenant in the authorizer context is one the test created, the key in the authorizer event is created
for a tenant first, and the document ids in the pipeline payloads are a document the test registered.
The owner functions read the master secret from Secrets Manager (moto), which holds this database's
owner credentials; export and the S3 trigger run against moto's S3, as in AWS.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from engram import deps
from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.documents.runs import DocumentRef
from engram.local.functions import LocalLambdaContext, functions_dir, handler_of
from engram.local.stack import LocalDatabase
from engram.pipeline import steps
from engram.settings import Settings
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.pipeline_helpers import RecordingStarter, register

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
EVENTS = sorted(EVENTS_DIR.rglob("*.json"))
OWNER_FUNCTIONS = ("migrate", "admin")
SCHEDULED_FUNCTIONS = ("cleanup", "relay")
EVENT_DRIVEN_FUNCTIONS = ("export_worker",)
PIPELINE_FUNCTIONS = tuple(f"pipeline/{name}" for name in steps.PIPELINE_FUNCTIONS)
REGION = "eu-west-1"


def function_of(path: Path) -> str:
    """memories.list.json -> memories; pipeline/finish.execution-ended.json -> pipeline/finish."""
    return "/".join((*path.relative_to(EVENTS_DIR).parent.parts, path.name.split(".")[0]))


def sample(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return event


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


@contextmanager
def aws_deps(monkeypatch: pytest.MonkeyPatch, *, buckets: tuple[str, ...], **settings: Any) -> Iterator[Any]:
    """moto's S3 with these buckets, and the functions' settings changed as in AWS; yields the client."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    starter = settings.pop("starter", None)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in buckets:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        previous = deps.current()
        aws = previous.settings.model_copy(update={"aws_region": REGION, **settings})
        deps.install(
            deps.Deps(settings=aws, database=previous.database, embedder=previous.embedder, starter=starter)
        )
        try:
            yield s3
        finally:
            deps.install(previous)


def test_every_function_has_a_sample_event() -> None:
    functions = {function_of(path) for path in EVENTS}
    folders = {
        str(handler.parent.relative_to(functions_dir())) for handler in functions_dir().rglob("handler.py")
    }
    expected = {
        *API_FUNCTIONS,
        AUTHORIZER_FUNCTION,
        *OWNER_FUNCTIONS,
        *SCHEDULED_FUNCTIONS,
        *EVENT_DRIVEN_FUNCTIONS,
        *PIPELINE_FUNCTIONS,
    }
    assert functions == folders == expected


@pytest.mark.parametrize("path", [p for p in EVENTS if function_of(p) in API_FUNCTIONS], ids=lambda p: p.name)
def test_api_event_succeeds(path: Path, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch) -> None:
    event = json.loads(path.read_text())
    if event["requestContext"].get("authorizer"):
        event["requestContext"]["authorizer"].update(
            tenantId=str(tenant.tenant_id), tenantName=tenant.tenant_name
        )
    function = function_of(path)

    if function == "export":  # in AWS the export is a job: 202, and the worker writes it to S3
        with aws_deps(monkeypatch, buckets=("engram-exports",), export_bucket="engram-exports") as s3:
            response = invoke(function, event)
            job = json.loads(response["body"])
            request = f"exports/{tenant.tenant_id}/{job['id']}.request.json"
            assert json.loads(s3.get_object(Bucket="engram-exports", Key=request)["Body"].read())
        assert (response["statusCode"], job["status"]) == (202, "running")
        location = response.get("headers", {}).get("Location") or response["multiValueHeaders"]["Location"][0]
        assert location == f"/v1/export/{job['id']}"
    else:
        response = invoke(function, event)

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


def _document(local_db: LocalDatabase, ref: DocumentRef) -> dict[str, Any]:
    with local_db.app.tenant(ref.tenant_id) as cur:
        row = cur.execute("SELECT * FROM documents WHERE id = %s", (ref.document_id,)).fetchone()
    assert row is not None
    return dict(row)


def test_the_step_events_take_a_document_through_the_pipeline(
    tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    data = b"# Travel\n\nAlice prefers window seats on long flights. Bob always books aisle seats.\n"
    ref = register(tenant.tenant_id, data, "travel.md")

    state: dict[str, Any] = ref.to_event()
    for stage in steps.STAGES:
        step = stage.choose(state)
        event = {**sample(f"pipeline/{step.function}.json"), **ref.to_event()}
        state = invoke(f"pipeline/{step.function}", event)
        expected = {**ref.to_event(), "family": "documents"} if step.name == "detect" else ref.to_event()
        assert state == expected, step.name
    done = invoke("pipeline/finish", {**sample("pipeline/finish.json"), **ref.to_event()})

    assert done == {**ref.to_event(), "changed": True}
    row = _document(local_db, ref)
    assert row["status"] == "done" and row["error"] is None
    with local_db.app.tenant(ref.tenant_id) as cur:
        chunks = cur.execute("SELECT count(*) AS n FROM chunks WHERE document_id = %s", (ref.document_id,))
        assert (chunks.fetchone() or {"n": 0})["n"] >= 1


def test_the_execution_ended_event_fails_its_document(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref = register(tenant.tenant_id, b"This execution timed out before MarkFailed ran.", "late.txt")
    event = sample("pipeline/finish.execution-ended.json")
    event["detail"]["input"] = json.dumps(ref.to_event())

    result = invoke("pipeline/finish", event)

    assert result == {**ref.to_event(), "changed": True}
    row = _document(local_db, ref)
    assert (row["status"], row["error_code"]) == ("failed", "execution_timed_out")


def test_the_sweeper_event_fails_a_stale_document(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref = register(tenant.tenant_id, b"The trigger crashed before this one started.", "stuck.txt")
    with local_db.app.tenant(ref.tenant_id) as cur:
        cur.execute(
            "UPDATE documents SET updated_at = now() - interval '1 day' WHERE id = %s", (ref.document_id,)
        )

    result = invoke("pipeline/sweeper", sample("pipeline/sweeper.json"))

    assert result["failed"] >= 1
    assert (_document(local_db, ref)["status"], _document(local_db, ref)["error_code"]) == ("failed", "stale")


def test_the_s3_event_registers_a_document_and_starts_it(
    tenant: IssuedKey, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = sample("pipeline/trigger.json")
    bucket = event["detail"]["bucket"]["name"]
    key = f"{tenant.tenant_id}/crm.notes/call.txt"
    starter = RecordingStarter()
    with aws_deps(monkeypatch, buckets=(bucket,), documents_bucket=bucket, starter=starter) as s3:
        s3.put_object(Bucket=bucket, Key=key, Body=b"Alice prefers calls in the morning.")
        head = s3.head_object(Bucket=bucket, Key=key)
        event["detail"]["object"].update(key=key, size=head["ContentLength"], etag=head["ETag"].strip('"'))

        result = invoke("pipeline/trigger", event)

    (registered,) = result["objects"]
    assert registered["outcome"] == "registered", registered
    ((ref, _name),) = starter.started
    assert str(ref.document_id) == str(registered["document_id"])
    row = _document(local_db, ref)
    assert (row["status"], row["container"]) == ("queued", "crm.notes")


def test_the_cleanup_schedule_deletes_expired_memories(api: Api, local_db: LocalDatabase) -> None:
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    began = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    expired = {"content": "The door code was 1234", "valid_from": began, "expires_at": past}
    gone = api.post("/v1/memories", expired).json["id"]
    kept = api.post("/v1/memories", {"content": "The door code is 5678"}).json["id"]

    report = invoke("cleanup", sample("cleanup.json"))

    assert report["expired_memories"] >= 1 and report["tenants"] >= 1
    with local_db.admin.transaction() as cur:
        ids = {
            str(r["id"]) for r in cur.execute("SELECT id FROM memories WHERE id IN (%s, %s)", (gone, kept))
        }
    assert ids == {str(kept)}


def test_the_export_worker_event_writes_the_requested_export(
    tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = sample("export_worker.json")
    with aws_deps(monkeypatch, buckets=("engram-exports",), export_bucket="engram-exports") as s3:
        job = deps.export_jobs()
        assert job is not None
        requested = job.request(tenant.tenant_id, tenant.tenant_name, None)
        event["detail"]["object"]["key"] = f"exports/{tenant.tenant_id}/{requested.id}.request.json"

        result = invoke("export_worker", event)
        stored = s3.get_object(
            Bucket="engram-exports", Key=f"exports/{tenant.tenant_id}/{requested.id}.jsonl"
        )
        status = job.status(tenant.tenant_id, requested.id)

    header = json.loads(stored["Body"].read().decode().splitlines()[0])
    assert (header["record"], header["tenant"]) == ("header", tenant.tenant_name)
    assert result["status"] == status.status == "done" and status.url and "Signature" in status.url


def test_the_export_worker_imports_an_uploaded_file(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.post("/v1/memories", {"content": "Moved between deployments"})
    exported = api.post("/v1/export").raw
    event = sample("export_worker.import.json")
    with aws_deps(monkeypatch, buckets=("engram-exports",), export_bucket="engram-exports") as s3:
        jobs = deps.import_jobs()
        assert jobs is not None
        requested = jobs.request(other_tenant.tenant_id, other_tenant.tenant_name, new_ids=True)
        key = f"imports/{other_tenant.tenant_id}/{requested.id}.jsonl"
        s3.put_object(Bucket="engram-exports", Key=key, Body=exported)
        event["detail"]["object"]["key"] = key

        result = invoke("export_worker", event)
        status = jobs.status(other_tenant.tenant_id, requested.id)

    assert result["status"] == status.status == "done"
    assert status.report is not None and status.report.inserted["memory"] == 1


def test_the_relay_event_summarizes_and_publishes_to_the_bus(
    api: Api, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = api.post("/v1/sessions", {"user_id": "ann"}).json["id"]
    api.post(
        f"/v1/sessions/{session}/messages?user_id=ann",
        {"messages": [{"role": "user", "content": "I fly to Oslo on May 3."}]},
    )
    with aws_deps(monkeypatch, buckets=(), event_bus_name="engram-dev-events"):
        events = boto3.client("events", region_name=REGION)
        events.create_event_bus(Name="engram-dev-events")
        queue = boto3.client("sqs", region_name=REGION).create_queue(QueueName="changes")["QueueUrl"]
        sqs = boto3.client("sqs", region_name=REGION)
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(
            Name="summaries",
            EventBusName="engram-dev-events",
            EventPattern=json.dumps(
                {
                    "source": ["engram"],
                    "detail-type": ["session.summarized"],
                    "detail": {"tenant_id": [str(tenant.tenant_id)]},
                }
            ),
        )
        events.put_targets(
            Rule="summaries", EventBusName="engram-dev-events", Targets=[{"Id": "q", "Arn": arn}]
        )

        result = invoke("relay", sample("relay.json"))
        received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]

    assert result["summarized"] >= 1 and result["delivered"] >= 1
    summary = api.get(f"/v1/sessions/{session}?user_id=ann").json["summary"]
    assert summary["method"] == "extractive" and "Oslo" in summary["content"]
    (message,) = received
    detail = json.loads(message["Body"])["detail"]
    assert detail["type"] == "session.summarized" and detail["data"] == {
        "session_id": session,
        "through_seq": 1,
    }
