"""Stage settings from CDK context: coerced from -c strings, refused when they cannot work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from infra.config import ConfigError, StageConfig


def _config(**context: object) -> StageConfig:
    return StageConfig.from_context(cdk.App(context=context).node)


def test_cdk_json_context_gives_the_documented_dev_defaults() -> None:
    context = json.loads(Path("cdk.json").read_text())["context"]
    config = _config(**context)
    assert (config.stage, config.min_acu, config.max_acu, config.nat_gateways) == ("dev", 0.5, 4.0, 0)
    assert config.protect_data is False
    assert json.loads(Path("cdk.json").read_text())["app"] == "python3 infra/app.py"


def test_command_line_strings_are_coerced() -> None:
    config = _config(
        stage="prod",
        min_acu="1",
        max_acu="16",
        nat_gateways="1",
        interface_endpoints="secretsmanager,bedrock-runtime",
    )
    assert (config.min_acu, config.max_acu, config.nat_gateways) == (1.0, 16.0, 1)
    assert config.interface_endpoints == ("secretsmanager", "bedrock-runtime")
    assert config.protect_data is True
    assert config.stack_name == "Engram-prod"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"stage": "Prod!"}, "stage"),
        ({"min_acu": "8", "max_acu": "2"}, "ACU"),
        ({"engine_version": "15.4"}, "16.x"),
        ({"engine_major": "15"}, "16 or 17"),
        ({"engine_major": "17", "engine_version": "16.9"}, "17.x"),
        ({"max_azs": "1"}, "two availability zones"),
        ({"interface_endpoints": "bedrock-runtime"}, "secretsmanager"),
        ({"interface_endpoints": "secretsmanager,ec2messages"}, "unknown interface endpoints"),
        ({"log_retention_days": "42"}, "retention"),
        ({"min_acu": "lots"}, "min_acu"),
        ({"vision": "true", "llm_provider": "none"}, "vision describes images with the LLM"),
    ],
)
def test_unusable_settings_stop_synth_with_a_clear_message(context: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**context)


def test_engine_version_is_the_newest_minor_this_cdk_knows_unless_pinned() -> None:
    # Given the Aurora PostgreSQL versions this aws-cdk-lib lists
    from infra.config import known_engine_versions

    sixteen = known_engine_versions("16")
    assert sixteen and all(v.startswith("16.") for v in sixteen)
    # Then the default is the newest of them, numerically (16.13 after 16.9), and a pin wins
    assert _config().resolved_engine_version == max(sixteen, key=lambda v: int(v.split(".")[1]))
    assert _config(engine_version="16.9").resolved_engine_version == "16.9"
    assert _config(engine_major="17").resolved_engine_version == known_engine_versions("17")[-1]
