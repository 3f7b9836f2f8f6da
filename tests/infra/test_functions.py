"""Every Lambda the stack owns: arm64, Python 3.12, explicit limits, tracing, VPC, logs with retention."""

from __future__ import annotations

from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.pipeline.steps import PIPELINE_FUNCTIONS
from engram.providers.llm import MAX_DELAY_S
from engram.relay import PASS_MARGIN_S
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions, ref

# Functions CDK itself adds as custom-resource providers (outside the VPC, created by the Trigger, the
# VPC's default-security-group restriction, the buckets' EventBridge notifications, the dev stage's bucket
# emptying on destroy and the lookup of S3's prefix list); they carry no Engram code or data.
CDK_PROVIDER_PREFIXES = (
    "AWSCDKTriggerCustomResourceProvider",
    "CustomVpcRestrictDefaultSGCustomResourceProvider",
    "BucketNotificationsHandler",
    "CustomS3AutoDeleteObjectsCustomResourceProvider",
    "AWS679f53fac002430cb0da5b7982bd2287",  # AwsCustomResource's singleton
)
PIPELINE = {f"pipeline-{name}" for name in PIPELINE_FUNCTIONS}


def test_one_function_per_endpoint_group_plus_the_others_and_the_pipeline(dev: Synth) -> None:
    assert set(engram_functions(dev)) == {
        *API_FUNCTIONS,
        AUTHORIZER_FUNCTION,
        "migrate",
        "admin",
        "cleanup",
        "export_worker",
        "relay",
        *PIPELINE,
    }


def test_the_only_other_functions_are_cdks_own_providers(dev: Synth) -> None:
    ours = set(engram_functions(dev).values())
    others = set(dev.of_type("AWS::Lambda::Function")) - ours
    assert others, "expected the Trigger and default-SG providers"
    assert all(logical.startswith(CDK_PROVIDER_PREFIXES) for logical in others), others


def test_every_function_is_arm64_python312_with_explicit_timeout_and_memory(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        props = dev.props(logical)
        assert props["Architectures"] == ["arm64"], name
        assert props["Runtime"] == "python3.12", name
        assert props["Handler"] == "handler.handler", name
        assert isinstance(props["Timeout"], int) and 0 < props["Timeout"] <= 900, name
        assert isinstance(props["MemorySize"], int) and props["MemorySize"] >= 256, name


def test_api_functions_answer_before_api_gateway_gives_up(dev: Synth) -> None:
    functions = engram_functions(dev)
    for name in (*API_FUNCTIONS, AUTHORIZER_FUNCTION):
        assert dev.props(functions[name])["Timeout"] < 29, name


def test_every_function_is_traced_in_the_vpc_with_the_groups_of_its_network_role(dev: Synth) -> None:
    groups: dict[str, set[str | None]] = {}
    for name, logical in engram_functions(dev).items():
        props = dev.props(logical)
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        vpc = props["VpcConfig"]
        assert len(vpc["SubnetIds"]) == 2, name
        groups[name] = {ref(g) for g in vpc["SecurityGroupIds"]}
    s3 = {g for g in dev.of_type("AWS::EC2::SecurityGroup") if g.startswith("NetworkS3AccessSg")}
    (owners,) = [g for g in dev.of_type("AWS::EC2::SecurityGroup") if g.startswith("FunctionsOwnerClientsSg")]
    (clients,) = [
        g for g in dev.of_type("AWS::EC2::SecurityGroup") if g.startswith("FunctionsProxyClientsSg")
    ]
    assert groups["migrate"] == groups["admin"] == {owners}
    assert groups["health"] == groups["memories"] == {clients}  # no S3 for those that never call it
    assert groups["documents"] == groups["pipeline-trigger"] == {clients, *s3} and len(s3) == 1


def test_every_function_logs_to_its_own_group_with_retention(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        log_group = ref(dev.props(logical)["LoggingConfig"]["LogGroup"])
        assert log_group is not None, name
        group = dev.props(log_group)
        assert group["RetentionInDays"] == 30, name
        assert group["LogGroupName"] == f"/aws/lambda/engram-dev-{name}"


def test_every_function_uses_the_dependencies_layer_and_each_extract_function_its_familys(
    dev: Synth,
) -> None:
    layers = dev.of_type("AWS::Lambda::LayerVersion")
    (layer,) = [k for k in layers if k.startswith("FunctionsDependencies")]
    family_layers = {}
    for function, prefix in (
        ("pipeline-extract", "FunctionsExtractorsLayer"),
        ("pipeline-extract_office", "FunctionsOfficeLayer"),
        ("pipeline-extract_code", "FunctionsCodeLayer"),
        ("pipeline-extract_media", "FunctionsMediaLayer"),
    ):
        (family_layers[function],) = [k for k in layers if k.startswith(prefix)]
    for logical in (layer, *family_layers.values()):
        assert dev.props(logical)["CompatibleArchitectures"] == ["arm64"]
        assert dev.props(logical)["CompatibleRuntimes"] == ["python3.12"]
    for name, logical in engram_functions(dev).items():
        expected = {layer, family_layers[name]} if name in family_layers else {layer}
        # (in any order: an extras layer holds nothing the dependencies layer has, see infra/build.py)
        assert sorted(ref(x) for x in dev.props(logical)["Layers"]) == sorted(expected), name


def test_no_password_or_secret_value_in_any_environment(dev: Synth) -> None:
    functions = engram_functions(dev)
    for name, logical in functions.items():
        env = dev.props(logical)["Environment"]["Variables"]
        assert not [k for k in env if "PASSWORD" in k or k == "DATABASE_URL"], name
        if name in ("migrate", "admin"):
            assert "ENGRAM_DB_SECRET_ARN" in env and "ENGRAM_DB_HOST" not in env
        else:
            assert env["ENGRAM_DB_IAM_AUTH"] == "true" and ref(env["ENGRAM_DB_HOST"]) is not None
            assert env["ENGRAM_APP_ROLE"] == "engram_app"
            assert "ENGRAM_DB_SECRET_ARN" not in env, name
        assert env["ENGRAM_EMBEDDING_PROVIDER"] == "bedrock"


def test_no_function_looks_for_pydantic_plugins_in_its_cold_start(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        assert dev.props(logical)["Environment"]["Variables"]["PYDANTIC_DISABLE_PLUGINS"] == "__all__", name


def test_every_function_verifies_the_database_server_against_the_bundle_in_its_layer(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        env = dev.props(logical)["Environment"]["Variables"]
        assert env["ENGRAM_DB_SSLMODE"] == "verify-full", name
        assert env["ENGRAM_DB_SSLROOTCERT"] == "/opt/certs/rds-ca-bundle.pem", name


def test_llm_calls_end_before_the_function_that_waits_for_them(dev: Synth) -> None:
    # Found by an audit: memories and sessions (28 s) waited for the LLM with the defaults, 120 s a call
    # and 4 attempts, so a slow or throttled model ended as a Lambda timeout (API Gateway's 502), not a
    # clear 503 the caller can retry
    functions = engram_functions(dev)
    for name in ("memories", "sessions", "relay", "pipeline-llm_extract"):
        props = dev.props(functions[name])
        env = props["Environment"]["Variables"]
        call, attempts = float(env["ENGRAM_LLM_TIMEOUT_SECONDS"]), int(env["ENGRAM_LLM_MAX_ATTEMPTS"])
        assert call * attempts + (attempts - 1) * MAX_DELAY_S <= props["Timeout"] - 5, name
    relay = dev.props(functions["relay"])["Environment"]["Variables"]
    assert float(relay["ENGRAM_LLM_TIMEOUT_SECONDS"]) * int(relay["ENGRAM_LLM_MAX_ATTEMPTS"]) < PASS_MARGIN_S


def _env(synth: Synth, name: str) -> dict[str, str]:
    variables: dict[str, str] = synth.props(engram_functions(synth)[name])["Environment"]["Variables"]
    return variables


def test_what_the_functions_cannot_reach_they_refuse_or_report_at_once(dev: Synth, with_nat: Synth) -> None:
    # Found by an audit: without a NAT gateway a URL document timed out in the detect step after its
    # retries, and audio was never transcribed even where Transcribe could be reached
    media = "pipeline-extract_media"
    assert _env(dev, "documents")["ENGRAM_FETCH_URLS"] == "false"
    assert "ENGRAM_TRANSCRIPTION_PROVIDER" not in _env(dev, media)  # none: audio is unsupported_here
    assert "ENGRAM_FETCH_URLS" not in _env(with_nat, "documents")
    assert _env(with_nat, media)["ENGRAM_TRANSCRIPTION_PROVIDER"] == "transcribe"
