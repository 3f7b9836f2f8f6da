"""Synthesizes the stack once per session, offline, into a temporary cloud assembly: `dev` as a user's
`cdk deploy` would in eu-west-1 (account 111111111111, lookups from cdk.context.json, like the deploy
gate), `agnostic` as an offline `make synth` without an account.

Function code is built fresh (a copy, no network). The dependencies layer is the real one from
`make build` when present; otherwise (a fresh clone that has not run `make build`) a one-file stand-in
takes its place: the template assertions do not depend on the layer's contents, and
tests/infra/test_build.py checks the real layer whenever it exists.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from infra import nag
from infra.app import build_app
from infra.build import EXTRAS, Assets, build_functions
from infra.gate.nested import load_stack
from infra.gate.template import Template
from infra.stack import EngramStack

Resources = dict[str, dict[str, Any]]


@dataclass
class Synth:
    stack: EngramStack
    template: dict[str, Any]  # the whole stack: its nested stacks flattened in (infra/gate/nested.py)
    templates: dict[str, Template]  # each template CloudFormation receives, by file name, the root first
    outdir: Path
    error: str | None  # the synth error (cdk-nag findings fail synth), None when clean

    @property
    def resources(self) -> Resources:
        resources: Resources = self.template["Resources"]
        return resources

    def of_type(self, type_: str) -> Resources:
        return {k: v for k, v in self.resources.items() if v["Type"] == type_}

    def props(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources[logical_id].get("Properties", {})
        return props

    def validation_report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.outdir / "validation-report.json").read_text())
        return report


@pytest.fixture(scope="session")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Assets:
    build_dir = tmp_path_factory.mktemp("build")
    build_functions(build_dir)
    real = Assets.in_build_dir()
    if real.layer_built:
        return Assets(build_dir / "functions", real.layer, real.extras)
    stand_in = Assets(build_dir / "functions", build_dir / "layer", build_dir / "extras")
    for layer in (stand_in.layer, *(stand_in.extra_layer(extra) for extra in EXTRAS)):
        (layer / "python").mkdir(parents=True)
        (layer / "python" / "STAND-IN.txt").write_text("run `make build` for the real layer\n")
    return stand_in


REPO = Path(__file__).resolve().parents[2]
ACCOUNT, REGION = "111111111111", "eu-west-1"


def project_context() -> dict[str, Any]:
    """cdk.json's context and the committed lookups (cdk.context.json), as the CDK CLI passes them."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text())["context"]
    return {**context, **json.loads((REPO / "cdk.context.json").read_text())}


def synthesize(
    outdir: Path, assets: Assets, context: dict[str, Any], env: cdk.Environment | None = None
) -> Synth:
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:disable-asset-staging": True, **context})
    stack = build_app(app, assets, env)
    error = None
    try:
        app.synth()
    except RuntimeError as exc:  # jsii surfaces the validation failure as RuntimeError
        error = str(exc)
    templates = load_stack(outdir / f"{stack.stack_name}.template.json")
    return Synth(stack, templates.flat.body, templates.templates, outdir, error)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory, assets: Assets) -> Synth:
    """The default stage as `cdk deploy` synthesizes it for an account in eu-west-1."""
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    return synthesize(tmp_path_factory.mktemp("cdk-dev"), assets, project_context(), env)


@pytest.fixture(scope="session")
def with_nat(tmp_path_factory: pytest.TempPathFactory, assets: Assets) -> Synth:
    """The default stage with a NAT gateway: its functions reach the internet and every AWS API."""
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    return synthesize(
        tmp_path_factory.mktemp("cdk-nat"), assets, {**project_context(), "nat_gateways": "1"}, env
    )


@pytest.fixture(scope="session")
def agnostic(tmp_path_factory: pytest.TempPathFactory, assets: Assets) -> Synth:
    """The default stage as an offline `make synth` builds it: no account, no region."""
    return synthesize(tmp_path_factory.mktemp("cdk-agnostic"), assets, project_context())


@pytest.fixture(scope="session")
def prod_unacknowledged(tmp_path_factory: pytest.TempPathFactory, assets: Assets) -> Synth:
    """A `prod` stage synthesized with every acknowledgement switched off: shows what cdk-nag reports
    (so the check is live, not a no-op) and what a protected, non-dev stage looks like."""
    original: Callable[[EngramStack], None] = nag._acknowledge_findings
    nag._acknowledge_findings = lambda stack: None  # type: ignore[assignment]
    try:
        return synthesize(
            tmp_path_factory.mktemp("cdk-prod"),
            assets,
            {**project_context(), "stage": "prod", "min_acu": "1", "max_acu": "8"},
            cdk.Environment(account=ACCOUNT, region=REGION),
        )
    finally:
        nag._acknowledge_findings = original  # type: ignore[assignment]
