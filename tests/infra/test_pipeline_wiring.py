"""The ingestion pipeline, the cleanup schedule and the export bucket as wired into the Engram stack:
the state machine invokes the stack's own step functions (with timeouts, retries and catches), every
pipeline Lambda runs in the VPC with the database settings, the documents bucket is locked down and
feeds EventBridge, and cleanup runs on a schedule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram.pipeline import steps
from engram.settings import WORK_PREFIX
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions, ref, refs_in

PIPELINE = {f"pipeline-{name}": name for name in steps.PIPELINE_FUNCTIONS}


def _render(value: Any) -> str:
    """Fn::Join of strings and tokens -> one string; a function's ARN becomes <LogicalId>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_render(part) for part in parts)
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"<{value['Fn::GetAtt'][0]}>"
    return "TOKEN"


@pytest.fixture(scope="module")
def definition(dev: Synth) -> dict[str, Any]:
    (machine,) = dev.of_type("AWS::StepFunctions::StateMachine")
    return dict(json.loads(_render(dev.props(machine)["DefinitionString"])))


def _env(synth: Synth, name: str) -> dict[str, Any]:
    env: dict[str, Any] = synth.props(engram_functions(synth)[name])["Environment"]["Variables"]
    return env


def _bucket(synth: Synth, prefix: str) -> str:
    (logical,) = [k for k in synth.of_type("AWS::S3::Bucket") if k.startswith(prefix)]
    return logical


def test_the_state_machine_runs_the_stacks_own_step_functions(dev: Synth, definition: dict[str, Any]) -> None:
    functions = engram_functions(dev)
    states = definition["States"]
    assert definition["StartAt"] == steps.STEPS[0].state
    assert definition["TimeoutSeconds"] == steps.EXECUTION_TIMEOUT_SECONDS
    for step in steps.STEPS:
        state = states[step.state]
        assert state["Resource"] == f"<{functions['pipeline-' + step.function]}>", step.name
        assert state["TimeoutSeconds"] == step.timeout_seconds + steps.TASK_TIMEOUT_MARGIN_SECONDS
        assert state["Retry"][0]["ErrorEquals"] == list(steps.TRANSIENT_ERRORS)
        assert state["Retry"][0]["MaxAttempts"] == steps.RETRY_MAX_ATTEMPTS
        assert state["Catch"][0]["ErrorEquals"] == ["States.ALL"]
        assert states[state["Catch"][0]["Next"]]["Next"] == "MarkFailed"
    for finish in ("MarkDone", "MarkFailed"):
        assert states[finish]["Resource"] == f"<{functions['pipeline-finish']}>"
        assert "TimeoutSeconds" in states[finish] and states[finish]["Retry"]


def test_every_step_lambda_has_the_steps_limits(dev: Synth) -> None:
    functions = engram_functions(dev)
    for step in steps.STEPS:
        props = dev.props(functions[f"pipeline-{step.function}"])
        assert (props["Timeout"], props["MemorySize"]) == (step.timeout_seconds, step.memory_mb), step.name
    trigger = dev.props(functions["pipeline-trigger"])
    assert (trigger["Timeout"], trigger["MemorySize"]) == (120, 1024)


@pytest.mark.parametrize("name", [*sorted(PIPELINE), "cleanup"])
def test_every_pipeline_lambda_runs_in_the_vpc_with_the_database_settings(dev: Synth, name: str) -> None:
    props = dev.props(engram_functions(dev)[name])
    (proxy,) = dev.of_type("AWS::RDS::DBProxy")
    env = props["Environment"]["Variables"]

    assert len(props["VpcConfig"]["SubnetIds"]) == 2 and props["VpcConfig"]["SecurityGroupIds"]
    assert ref(env["ENGRAM_DB_HOST"]) == proxy
    assert (env["ENGRAM_DB_IAM_AUTH"], env["ENGRAM_APP_ROLE"], env["ENGRAM_DB_NAME"]) == (
        "true",
        "engram_app",
        "engram",
    )
    assert "ENGRAM_DB_SECRET_ARN" not in env
    role = ref(props["Role"])
    connects = [
        s
        for policy in dev.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy["Properties"]["Roles"]}
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "rds-db:connect"
    ]
    assert connects and "engram_app" in json.dumps(connects), name
    if name != "cleanup":
        assert ref(env["ENGRAM_DOCUMENTS_BUCKET"]) == _bucket(dev, "BucketsDocuments")
        assert env["ENGRAM_WORK_PREFIX"] == WORK_PREFIX


def test_the_trigger_and_the_documents_api_start_the_state_machine(dev: Synth) -> None:
    (machine,) = dev.of_type("AWS::StepFunctions::StateMachine")
    for name in ("pipeline-trigger", "documents"):
        assert ref(_env(dev, name)["ENGRAM_STATE_MACHINE_ARN"]) == machine, name
    assert ref(_env(dev, "documents")["ENGRAM_DOCUMENTS_BUCKET"]) == _bucket(dev, "BucketsDocuments")
    assert _env(dev, "pipeline-llm_extract")["ENGRAM_LLM_PROVIDER"] == "bedrock"


def test_sessions_may_call_the_llm_for_messages_sent_with_extract_full(dev: Synth) -> None:
    props = dev.props(engram_functions(dev)["sessions"])
    role = ref(props["Role"])
    invokes = [
        s
        for policy in dev.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy["Properties"]["Roles"]}
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "bedrock:InvokeModel"
    ]

    assert props["Environment"]["Variables"]["ENGRAM_LLM_PROVIDER"] == "bedrock"
    assert props["Timeout"] == 28
    assert "inference-profile" in json.dumps(invokes)  # the LLM, besides the embedding model


def test_the_documents_bucket_is_private_encrypted_tls_only_and_feeds_eventbridge(dev: Synth) -> None:
    documents = _bucket(dev, "BucketsDocuments")
    for bucket in dev.of_type("AWS::S3::Bucket"):
        props = dev.props(bucket)
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"], bucket
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, bucket
        (policy,) = [
            p
            for p in dev.of_type("AWS::S3::BucketPolicy").values()
            if ref(p["Properties"]["Bucket"]) == bucket
        ]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        ), bucket
    assert dev.props(documents)["VersioningConfiguration"] == {"Status": "Enabled"}
    assert dev.props(documents)["LoggingConfiguration"]["DestinationBucketName"]
    notifications = {
        ref(r["Properties"]["BucketName"]): r["Properties"]["NotificationConfiguration"]
        for r in dev.resources.values()
        if r["Type"] == "Custom::S3BucketNotifications"
    }
    assert notifications[documents]["EventBridgeConfiguration"] == {}  # (the exports bucket's too)


def test_the_documents_bucket_expires_the_transcripts_left_where_no_delete_reaches(dev: Synth) -> None:
    # Transcripts were written under <work prefix>transcripts/, outside their document's work prefix
    rules = dev.props(_bucket(dev, "BucketsDocuments"))["LifecycleConfiguration"]["Rules"]
    (old_transcripts,) = [r for r in rules if r.get("Prefix") == f"{WORK_PREFIX}transcripts/"]
    assert old_transcripts["Status"] == "Enabled"
    assert old_transcripts["ExpirationInDays"] == 1  # the current version
    assert old_transcripts["NoncurrentVersionExpiration"] == {"NoncurrentDays": 1}  # and every other
    assert not [r for r in rules if r.get("Prefix") not in (None, f"{WORK_PREFIX}transcripts/")]


def test_s3_drops_reach_the_trigger_and_ended_executions_the_finish_function(dev: Synth) -> None:
    functions = engram_functions(dev)
    targets_of = {
        json.dumps(r["Properties"].get("EventPattern", r["Properties"].get("ScheduleExpression"))): {
            ref(t["Arn"]) for t in r["Properties"]["Targets"]
        }
        for r in dev.of_type("AWS::Events::Rule").values()
    }
    s3_rule = [  # (not the export requests' rule, which the exports bucket feeds)
        t
        for pattern, t in targets_of.items()
        if '"aws.s3"' in pattern and "Object Created" in pattern and "request.json" not in pattern
    ]
    ended = [t for pattern, t in targets_of.items() if '"aws.states"' in pattern]
    assert s3_rule == [{functions["pipeline-trigger"]}]
    assert ended == [{functions["pipeline-finish"]}]
    assert targets_of[json.dumps("rate(15 minutes)")] == {functions["pipeline-sweeper"]}


def test_cleanup_runs_on_a_daily_schedule(dev: Synth) -> None:
    cleanup = engram_functions(dev)["cleanup"]
    rules = [
        r["Properties"]
        for r in dev.of_type("AWS::Events::Rule").values()
        if {ref(t["Arn"]) for t in r["Properties"]["Targets"]} == {cleanup}
    ]
    assert [r["ScheduleExpression"] for r in rules] == ["cron(15 3 * * ? *)"]
    assert rules[0]["State"] == "ENABLED"
    permissions = [
        p["Properties"]
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if ref(p["Properties"]["FunctionName"]) == cleanup
    ]
    assert [p["Principal"] for p in permissions] == ["events.amazonaws.com"]


def test_the_migrate_function_also_runs_daily_for_per_tenant_indexes(dev: Synth) -> None:
    migrate = engram_functions(dev)["migrate"]
    schedules = [
        r["Properties"]["ScheduleExpression"]
        for r in dev.of_type("AWS::Events::Rule").values()
        if {ref(t["Arn"]) for t in r["Properties"]["Targets"]} == {migrate}
    ]
    assert schedules == ["cron(45 3 * * ? *)"]


def test_export_writes_to_its_bucket_under_exports_only(dev: Synth) -> None:
    exports = _bucket(dev, "BucketsExports")
    props = dev.props(engram_functions(dev)["export"])
    assert ref(props["Environment"]["Variables"]["ENGRAM_EXPORT_BUCKET"]) == exports
    role = ref(props["Role"])
    statements = [
        s
        for policy in dev.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy["Properties"]["Roles"]}
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(
            str(a).startswith("s3:") for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        )
    ]
    on_objects = [
        s for s in statements if exports in refs_in(s["Resource"]) and "/" in json.dumps(s["Resource"])
    ]
    (statement,) = on_objects  # requests, files and statuses: read and written, no multipart (the worker's)
    assert set(statement["Action"]) == {"s3:PutObject", "s3:GetObject"}
    resources = json.dumps(statement["Resource"])
    assert refs_in(statement["Resource"]) == {exports}
    assert "/exports/*" in resources and "/imports/*" in resources and resources.count("*") == 2
    rules = dev.props(exports)["LifecycleConfiguration"]["Rules"]
    assert any(r.get("ExpirationInDays") == 7 for r in rules)
