"""The gate's other checks on hand-made fragments: each passes on a good fragment and fails on a bad one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.build import REPO
from infra.gate import checks
from infra.gate.template import Template
from tests.infra import fragments as f

HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"


def _resources(**resources: dict[str, Any]) -> Template:
    return f.template({"Resources": resources})


def test_budgets_count_resources_and_bytes() -> None:
    small = {f"R{i}": {"Type": "AWS::SNS::Topic"} for i in range(400)}
    assert checks.budgets(f.template({"Resources": small})) == []
    small["R400"] = {"Type": "AWS::SNS::Topic"}
    assert checks.budgets(f.template({"Resources": small})) == [
        "401 resources: the budget is 400 (CloudFormation's limit 500)"
    ]
    big = _resources(Big={"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": "x" * 700_000}})
    assert checks.budgets(big) == ["700 KB: the budget is 700 KB (CloudFormation's 1 MB)"]


def test_suppression_metadata_in_the_template_fails() -> None:
    clean = _resources(Topic={"Type": "AWS::SNS::Topic", "Metadata": {"aws:cdk:path": "S/Topic"}})
    assert checks.no_suppression_metadata(clean) == []
    noisy = _resources(Topic={"Type": "AWS::SNS::Topic", "Metadata": {"cdk_nag": {"rules_to_suppress": []}}})
    assert checks.no_suppression_metadata(noisy) == [
        "1 resources carry cdk_nag suppression metadata (first: Topic)"
    ]


def test_test_invoke_permissions_fail() -> None:
    def permission(path: str) -> dict[str, Any]:
        arn = {"Fn::Join": ["", ["arn:aws:execute-api:eu-west-1:1:", {"Ref": "Api"}, path]]}
        return {"Type": "AWS::Lambda::Permission", "Properties": {"SourceArn": arn}}

    assert checks.no_test_invoke_permissions(_resources(P=permission("/*/*/*"))) == []
    assert checks.no_test_invoke_permissions(_resources(P=permission("/test-invoke-stage/GET/health"))) == [
        "1 Lambda permissions for the console's test-invoke (first: P)"
    ]


def test_api_gateway_account_only_on_opt_in_and_retained() -> None:
    account = {
        "Type": "AWS::ApiGateway::Account",
        "Properties": {"CloudWatchRoleArn": f.getatt("Role", "Arn")},
    }
    role = {"Type": "AWS::IAM::Role"}
    destroyed = _resources(Account=account, Role=role)
    assert checks.api_gateway_account(_resources(Role=role), opted_in=False) == []
    assert (
        "Account: the account-level API Gateway setting without the opt-in context"
        in checks.api_gateway_account(destroyed, opted_in=False)
    )
    assert len(checks.api_gateway_account(destroyed, opted_in=True)) == 2  # neither kept on delete
    kept = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    assert (
        checks.api_gateway_account(
            _resources(Account={**account, **kept}, Role={**role, **kept}), opted_in=True
        )
        == []
    )


def test_engine_version_must_be_the_expected_one() -> None:
    cluster = _resources(C={"Type": "AWS::RDS::DBCluster", "Properties": {"EngineVersion": "16.8"}})
    assert checks.engine_version(cluster, "16.8") == []
    assert checks.engine_version(cluster, "16.13") == ["C: engine version 16.8, expected 16.13"]


def _trigger(wait_ms: int, function_s: int, provider_s: int = 900) -> Template:
    return _resources(
        Fn={"Type": "AWS::Lambda::Function", "Properties": {"Timeout": function_s}},
        FnVersion={"Type": "AWS::Lambda::Version", "Properties": {"FunctionName": f.ref("Fn")}},
        Provider={"Type": "AWS::Lambda::Function", "Properties": {"Timeout": provider_s}},
        Run={
            "Type": "Custom::Trigger",
            "Properties": {
                "ServiceToken": f.getatt("Provider", "Arn"),
                "HandlerArn": f.ref("FnVersion"),
                "Timeout": str(wait_ms),
            },
        },
    )


def test_trigger_waits_at_least_as_long_as_its_function_and_its_provider_as_long() -> None:
    assert checks.trigger_timeouts(_trigger(900_000, 840)) == []
    assert checks.trigger_timeouts(_trigger(600_000, 900)) == ["Run: waits 600 s for Fn, which may run 900 s"]
    assert checks.trigger_timeouts(_trigger(900_000, 840, provider_s=300)) == [
        "Run: its provider Provider stops after 300 s, before 900 s"
    ]


def _scheduled(*, dlq: bool, on_failure: bool, alarm: bool) -> Template:
    target: dict[str, Any] = {"Arn": f.getatt("Fn", "Arn"), "Id": "T"}
    if dlq:
        target["DeadLetterConfig"] = {"Arn": f.getatt("Failures", "Arn")}
    resources: dict[str, Any] = {
        "Fn": {"Type": "AWS::Lambda::Function", "Properties": {}},
        "Failures": {"Type": "AWS::SQS::Queue", "Properties": {}},
        "Rule": {"Type": "AWS::Events::Rule", "Properties": {"Targets": [target]}},
    }
    if on_failure:
        resources["Config"] = {
            "Type": "AWS::Lambda::EventInvokeConfig",
            "Properties": {
                "FunctionName": f.ref("Fn"),
                "Qualifier": "$LATEST",
                "DestinationConfig": {"OnFailure": {"Destination": f.getatt("Failures", "Arn")}},
            },
        }
    if alarm:
        resources["Depth"] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "Namespace": "AWS/SQS",
                "MetricName": "ApproximateNumberOfMessagesVisible",
                "Dimensions": [{"Name": "QueueName", "Value": f.getatt("Failures", "QueueName")}],
            },
        }
    return f.template({"Resources": resources})


def test_async_targets_keep_their_failures_in_an_alarmed_queue() -> None:
    assert checks.async_failures_kept(_scheduled(dlq=True, on_failure=True, alarm=True)) == []
    assert checks.async_failures_kept(_scheduled(dlq=False, on_failure=False, alarm=True)) == [
        "rule Rule: its target Fn has no dead-letter queue",
        "Fn (invoked by rule Rule): no on-failure destination or DLQ: failed events are dropped",
    ]
    assert checks.async_failures_kept(_scheduled(dlq=True, on_failure=True, alarm=False)) == [
        "rule Rule: no alarm on the depth of its dead-letter queue Failures",
        "Fn: no alarm on the depth of its failure queue Failures",
    ]


def test_a_function_notified_by_s3_directly_counts_as_async() -> None:
    t = _resources(
        Fn={"Type": "AWS::Lambda::Function", "Properties": {}},
        Allow={
            "Type": "AWS::Lambda::Permission",
            "Properties": {"FunctionName": f.getatt("Fn", "Arn"), "Principal": "s3.amazonaws.com"},
        },
    )
    assert checks.async_failures_kept(t) == [
        "Fn (invoked by s3.amazonaws.com): no on-failure destination or DLQ: failed events are dropped"
    ]


def _llm_function(model: str | None, granted_profile: str, region: str = "eu-west-1") -> Template:
    env = {"ENGRAM_LLM_PROVIDER": "bedrock", **({"ENGRAM_LLM_MODEL": model} if model else {})}
    body: dict[str, Any] = {"Resources": {}}
    body["Resources"]["FnRole"] = {"Type": "AWS::IAM::Role"}
    body["Resources"]["Fn"] = {
        "Type": "AWS::Lambda::Function",
        "Properties": {"Role": f.getatt("FnRole", "Arn"), "Environment": {"Variables": env}},
    }
    f.grant(
        body,
        "Fn",
        ["bedrock:InvokeModel"],
        [
            f"arn:aws:bedrock:{region}:111111111111:inference-profile/{granted_profile}",
            f"arn:aws:bedrock:*::foundation-model/{HAIKU}",
        ],
    )
    return f.template(body, region)


def test_region_correctness_refuses_a_us_profile_and_us_arns_in_an_eu_template() -> None:
    good = _llm_function(f"eu.{HAIKU}", f"eu.{HAIKU}")
    assert checks.region_correctness(good, "eu-west-1") == []
    bad = _llm_function(f"us.{HAIKU}", f"us.{HAIKU}", region="us-east-1")
    problems = checks.region_correctness(bad, "eu-west-1")
    assert f"inference profile us.{HAIKU} does not take requests from eu-west-1" in problems
    assert any(p.startswith("names us-east-1 in 'arn:aws:bedrock:us-east-1") for p in problems)


def test_region_correctness_allows_the_rotation_apps_home_region_only() -> None:
    sar = (
        "arn:aws:serverlessrepo:us-east-1:297356227824:applications/"
        "SecretsManagerRDSPostgreSQLRotationSingleUser"
    )
    t = _resources(
        App={"Type": "AWS::Serverless::Application", "Properties": {"Location": {"ApplicationId": sar}}}
    )
    assert checks.region_correctness(t, "eu-west-1") == []
    other = "arn:aws:serverlessrepo:us-east-1:123456789012:applications/Something"
    t = _resources(
        App={"Type": "AWS::Serverless::Application", "Properties": {"Location": {"ApplicationId": other}}}
    )
    assert checks.region_correctness(t, "eu-west-1") == [f"names us-east-1 in {other!r}"]


def test_llm_model_must_be_set_serve_the_region_and_match_the_grant() -> None:
    assert checks.llm_matches_grant(_llm_function(f"eu.{HAIKU}", f"eu.{HAIKU}"), "eu-west-1") == []
    assert checks.llm_matches_grant(_llm_function(None, f"eu.{HAIKU}"), "eu-west-1") == [
        "Fn: the LLM is bedrock but ENGRAM_LLM_MODEL is not set"
    ]
    assert checks.llm_matches_grant(_llm_function(f"eu.{HAIKU}", f"us.{HAIKU}"), "eu-west-1") == [
        f"Fn: calls eu.{HAIKU} but its role may not invoke that inference profile"
    ]
    assert checks.llm_matches_grant(_llm_function(f"us.{HAIKU}", f"us.{HAIKU}"), "eu-west-1") == [
        f"Fn: us.{HAIKU} is not an inference profile that serves eu-west-1"
    ]


def test_resources_that_wait_for_each_other_in_a_circle_are_refused() -> None:
    # Found by an audit: CloudFormation refuses such a template ("Circular dependency between
    # resources"), and cfn-lint does not see it through the SAM transform
    circle = _resources(
        Trigger={"Type": "Custom::Trigger", "DependsOn": ["Rotation"], "Properties": {}},
        Group={"Type": "AWS::EC2::SecurityGroup", "Properties": {"Description": {"Fn::Sub": "${Trigger}"}}},
        Rotation={"Type": "AWS::SecretsManager::RotationSchedule", "Properties": {"Group": f.ref("Group")}},
        Apart={"Type": "AWS::SNS::Topic", "DependsOn": "Trigger"},
    )
    line = _resources(
        Trigger={"Type": "Custom::Trigger", "Properties": {}},
        Rotation={"Type": "AWS::SecretsManager::RotationSchedule", "DependsOn": "Trigger", "Properties": {}},
    )

    assert checks.dependency_cycles(circle) == [
        "Group, Rotation, Trigger wait for each other in a circle: CloudFormation refuses the template"
    ]
    assert checks.dependency_cycles(line) == []


def test_every_function_but_the_migration_waits_for_it() -> None:
    # Found by an audit: nothing waited for the deploy-time migration, so on a first deploy the relay's
    # schedule ran before the schema existed (and new code served against the old schema on updates)
    def stack(waiting: list[str]) -> Template:
        return _resources(
            Migrate={"Type": "AWS::Lambda::Function", "Properties": {}},
            Trigger={"Type": "Custom::Trigger", "Properties": {"HandlerArn": f.getatt("Migrate", "Arn")}},
            Relay={"Type": "AWS::Lambda::Function", "DependsOn": waiting, "Properties": {}},
        )

    functions = {"migrate": "Migrate", "relay": "Relay"}
    assert checks.functions_after_migration(stack([]), functions) == [
        "relay: may serve before the deploy-time migration (Trigger) has run"
    ]
    assert checks.functions_after_migration(stack(["Trigger"]), functions) == []


def test_a_function_waits_for_its_llm_calls_to_the_end() -> None:
    def function(timeout: int, env: dict[str, str]) -> Template:
        variables = {"ENGRAM_LLM_PROVIDER": "bedrock", **env}
        return _resources(
            Fn={
                "Type": "AWS::Lambda::Function",
                "Properties": {"Timeout": timeout, "Environment": {"Variables": variables}},
            }
        )

    assert checks.llm_calls_fit(function(28, {})) == [
        "Fn: its LLM calls may take 570 s (4 x 120 s, and the waits between them), beyond its 28 s timeout"
    ]
    fitting = {"ENGRAM_LLM_TIMEOUT_SECONDS": "20", "ENGRAM_LLM_MAX_ATTEMPTS": "1"}
    assert checks.llm_calls_fit(function(28, fitting)) == []
    assert checks.llm_calls_fit(function(600, {})) == []


def _rotation(depends_on: list[str]) -> Template:
    return _resources(
        Migrate={"Type": "Custom::Trigger", "Properties": {}},
        Hop={"Type": "AWS::CloudFormation::WaitConditionHandle", "DependsOn": ["Migrate"]},
        Rotation={"Type": "AWS::SecretsManager::RotationSchedule", "DependsOn": depends_on, "Properties": {}},
    )


def test_rotation_must_wait_for_the_migration_even_through_another_resource() -> None:
    assert checks.rotation_after_migration(_rotation([])) == [
        "Rotation: may be created (and rotate the secret) while the migration runs"
    ]
    assert checks.rotation_after_migration(_rotation(["Migrate"])) == []
    assert checks.rotation_after_migration(_rotation(["Hop"])) == []


def test_function_size_counts_its_code_and_every_layer(tmp_path: Path) -> None:
    code, base, extra = (tmp_path / name for name in ("code", "base", "extra"))
    for folder, size in ((code, 1000), (base, 3000), (extra, 5000)):
        (folder / "python").mkdir(parents=True)
        (folder / "python" / "blob").write_bytes(b"x" * size)
    t = _resources(
        Base={"Type": "AWS::Lambda::LayerVersion", "Metadata": {"aws:asset:path": str(base)}},
        Extra={"Type": "AWS::Lambda::LayerVersion", "Metadata": {"aws:asset:path": str(extra)}},
        Fn={
            "Type": "AWS::Lambda::Function",
            "Metadata": {"aws:asset:path": str(code)},
            "Properties": {"Layers": [f.ref("Base"), f.ref("Extra")]},
        },
    )
    assert checks.lambda_sizes(t, limit=9000) == ([], {"Fn": 9000})
    problems, _ = checks.lambda_sizes(t, limit=8999)
    assert problems == ["Fn: 0.0 MiB unzipped with its layers; Lambda allows 0 MiB"]
    (extra / "python" / "blob").unlink()
    extra.joinpath("python").rmdir()
    extra.rmdir()
    assert checks.lambda_sizes(t)[0] == [f"Fn: assets not built: {extra}"]


def test_function_size_skips_cdks_own_providers_staged_in_gone_temporary_folders() -> None:
    t = _resources(
        Provider={
            "Type": "AWS::Lambda::Function",
            "Metadata": {"aws:asset:path": "/tmp/cdk-custom-resourceXYZ"},
        },
        Ours={"Type": "AWS::Lambda::Function", "Metadata": {"aws:asset:path": str(REPO / ".build" / "nope")}},
    )
    assert checks.lambda_sizes(t)[0] == [f"Ours: assets not built: {REPO / '.build' / 'nope'}"]
