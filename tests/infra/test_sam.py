"""`sam local` against a SAM-friendly variant of the template (infra/sam.py): no Serverless Application
Repository app, the local database's variables declared on every function; and SAM itself gets as far
as its Docker check (on this machine there is no Docker daemon; with one, it would run the function)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infra.sam import logical_id, sam_variables, variant
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions

SAM = Path(".venv-sam/bin/sam")


def test_every_function_name_resolves_to_its_logical_id(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        assert logical_id(dev.template, "dev", name) == logical


def test_an_unknown_function_lists_the_known_ones(dev: Synth) -> None:
    with pytest.raises(SystemExit, match=r"known: admin, authorizer, .*health.*memories.*search") as raised:
        logical_id(dev.template, "dev", "nope")
    assert "nope" in str(raised.value)


def test_the_variant_drops_the_rotation_app_and_what_refers_to_it(dev: Synth) -> None:
    assert dev.of_type("AWS::Serverless::Application") and dev.of_type(
        "AWS::SecretsManager::RotationSchedule"
    )
    sam = variant(dev.template)
    types = {r["Type"] for r in sam["Resources"].values()}
    assert "AWS::Serverless::Application" not in types
    assert "AWS::SecretsManager::RotationSchedule" not in types  # it names the app's function
    assert set(sam["Resources"]) == set(dev.resources) - {
        k
        for k, r in dev.resources.items()
        if r["Type"] in ("AWS::Serverless::Application", "AWS::SecretsManager::RotationSchedule")
    }
    names = set(sam["Resources"])
    for resource in sam["Resources"].values():
        depends = resource.get("DependsOn", [])
        assert set([depends] if isinstance(depends, str) else depends) <= names


def test_the_variant_declares_the_local_database_on_every_function(dev: Synth) -> None:
    sam = variant(dev.template)
    wanted = set(sam_variables())
    assert {"DATABASE_URL", "ENGRAM_DB_SSLMODE", "ENGRAM_DB_HOST", "ENGRAM_DB_SECRET_ARN"} <= wanted
    assert "host.docker.internal" in sam_variables()["DATABASE_URL"]
    for name, logical in engram_functions(dev).items():
        env = sam["Resources"][logical]["Properties"]["Environment"]["Variables"]
        assert wanted <= set(env), name
        original = dev.props(logical)["Environment"]["Variables"]
        assert {k: v for k, v in env.items() if k in original} == original, "what was there stays"


def _sam(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if not SAM.is_file():
        if os.environ.get("ENGRAM_REQUIRE_BUILT"):
            pytest.fail("SAM CLI is not installed: the deploy gate installs it (.venv-sam)")
        pytest.skip("SAM CLI not installed (make check-deploy installs it into .venv-sam)")
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock", "SAM_CLI_TELEMETRY": "0"}
    env.pop("AWS_PROFILE", None)
    return subprocess.run(
        [str(SAM), *args], capture_output=True, text=True, timeout=240, env=env, check=False
    )


@pytest.mark.parametrize("command", ["invoke", "start-api"])
def test_sam_local_gets_as_far_as_its_docker_check(command: str, dev: Synth, tmp_path: Path) -> None:
    template = tmp_path / "Engram-dev.sam.json"
    template.write_text(json.dumps(variant(dev.template)))
    common = [
        "-t",
        str(template),
        "--env-vars",
        "infra/sam-env.json",
        "--add-host",
        "host.docker.internal:host-gateway",
    ]
    if command == "invoke":
        args = [
            "local",
            "invoke",
            *common,
            "-e",
            "events/health.json",
            logical_id(dev.template, "dev", "health"),
        ]
    else:
        args = ["local", "start-api", *common]
    done = _sam(*args, tmp_path=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "requires a container runtime" in output or "Docker is not reachable" in output, output[-2000:]
    for earlier_failure in ("NoRegionFound", "EndpointConnectionError", "serverlessrepo", "Traceback"):
        assert earlier_failure not in output, output[-2000:]
