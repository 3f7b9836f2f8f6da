"""What follows the region: the LLM's inference profile and its grant, and the fallback where none
serves the region (or the region is not known at synth)."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from engram.providers import bedrock_profiles
from infra.app import build_app
from infra.build import Assets
from infra.config import ConfigError, StageConfig
from infra.gate.checks import region_correctness
from infra.gate.template import Template
from infra.llm import choose_llm
from tests.infra.conftest import Synth, project_context
from tests.infra.helpers import engram_functions

HAIKU = bedrock_profiles.CLAUDE_HAIKU_4_5


@pytest.mark.parametrize(
    ("region", "profile"),
    [
        ("us-east-1", f"us.{HAIKU}"),
        ("eu-west-1", f"eu.{HAIKU}"),
        ("ap-southeast-2", f"au.{HAIKU}"),
        ("ap-northeast-1", f"jp.{HAIKU}"),
        ("ap-south-1", f"apac.{HAIKU}"),
    ],
)
def test_the_llm_profile_follows_the_region(region: str, profile: str) -> None:
    choice = choose_llm(StageConfig(), region)
    assert (choice.provider, choice.model_id, choice.foundation_model) == ("bedrock", profile, HAIKU)
    assert choice.warning is None


def test_where_no_profile_serves_the_region_the_pipeline_falls_back_with_a_warning() -> None:
    choice = choose_llm(StageConfig(), "sa-east-1")
    assert choice.provider == "none" and choice.model_id is None
    assert choice.warning is not None and "sa-east-1" in choice.warning and "global." in choice.warning


def test_a_profile_set_by_context_is_used_as_given_and_refused_where_it_cannot_serve() -> None:
    assert choose_llm(StageConfig(llm_model=f"global.{HAIKU}"), "sa-east-1").model_id == f"global.{HAIKU}"
    with pytest.raises(ConfigError, match="takes no requests from eu-west-1"):
        choose_llm(StageConfig(llm_model=f"us.{HAIKU}"), "eu-west-1")
    assert choose_llm(StageConfig(llm_provider="none"), "eu-west-1").provider == "none"


def test_the_eu_template_calls_and_grants_the_eu_profile_only(dev: Synth) -> None:
    text = json.dumps(dev.template)
    assert f"eu.{HAIKU}" in text and f"us.{HAIKU}" not in text
    assert region_correctness(Template.of(dev.template), "eu-west-1") == []  # no other region named
    for name in ("sessions", "memories", "pipeline-llm_extract"):
        env = dev.props(engram_functions(dev)[name])["Environment"]["Variables"]
        assert (env["ENGRAM_LLM_PROVIDER"], env["ENGRAM_LLM_MODEL"]) == ("bedrock", f"eu.{HAIKU}")


def test_an_environment_agnostic_synth_warns_and_deploys_the_heuristic(agnostic: Synth) -> None:
    for name in ("sessions", "memories", "pipeline-llm_extract"):
        env = agnostic.props(engram_functions(agnostic)[name])["Environment"]["Variables"]
        assert env["ENGRAM_LLM_PROVIDER"] == "none" and "ENGRAM_LLM_MODEL" not in env
    warnings = [
        m.data
        for c in agnostic.stack.node.find_all()
        for m in c.node.metadata
        if m.type == "aws:cdk:warning" and "engram:llm" in str(m.data)
    ]
    assert warnings and "region is not known at synth" in str(warnings[0])


def test_app_takes_the_account_and_region_from_the_cdk_environment(
    monkeypatch: pytest.MonkeyPatch, assets: Assets
) -> None:
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "111111111111")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "ap-southeast-2")
    app = cdk.App(context={**project_context(), "aws:cdk:disable-asset-staging": True})

    stack = build_app(app, assets)  # the built assets, or the stand-ins of a fresh clone
    assert (stack.account, stack.region) == ("111111111111", "ap-southeast-2")
    assert stack.functions.llm.model_id == f"au.{HAIKU}"
