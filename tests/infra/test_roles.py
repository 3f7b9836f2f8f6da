"""One IAM role per distinct permission set (infra/roles.py): functions share a role only when what they
were granted is the same, statement for statement; every function runs with exactly its own grants; the
roles no longer used leave the template; a grant made too late fails the synth."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from infra.aws_services import IAM_PREFIX, declared_services
from infra.build import ALL_FUNCTIONS
from infra.gate.checks import needs_grant
from infra.gate.template import ref, refs_in
from infra.roles import share_identical_roles
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _role_in_template(synth: Synth, role: str) -> dict[str, Any]:
    """What the template gives a role: trust, managed policies and the statements of its policies."""
    props = synth.props(role)
    statements = [
        s
        for policy in synth.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy["Properties"]["Roles"]}
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    return {
        "trust": props["AssumeRolePolicyDocument"],
        "managed": sorted(map(_canonical, props.get("ManagedPolicyArns", []))),
        "statements": sorted(map(_canonical, statements)),
    }


def _granted(synth: Synth, function: str) -> dict[str, Any]:
    """What the stack granted the function, read from the role it was built with (kept by infra/roles.py
    also when that role left the template)."""
    own = synth.stack.roles.own[function]
    stack = synth.stack
    policy = stack.resolve(own.policy.document) if own.policy is not None else {"Statement": []}
    return {
        "trust": stack.resolve(own.resource.assume_role_policy_document),
        "managed": sorted(map(_canonical, stack.resolve(own.resource.managed_policy_arns))),
        "statements": sorted(map(_canonical, policy["Statement"])),
    }


def test_every_function_runs_with_exactly_what_it_was_granted(dev: Synth) -> None:
    functions = engram_functions(dev)
    assert set(dev.stack.roles.own) == set(ALL_FUNCTIONS)
    for name in ALL_FUNCTIONS:
        role = ref(dev.props(functions[name.replace("/", "-")])["Role"])
        assert role is not None and dev.resources[role]["Type"] == "AWS::IAM::Role", name
        assert _role_in_template(dev, role) == _granted(dev, name), name


def test_functions_share_a_role_only_with_the_same_grants_and_the_same_declared_needs(dev: Synth) -> None:
    groups = dev.stack.roles.groups
    assert len(groups) < len(ALL_FUNCTIONS), "some functions share a role"
    for members in groups.values():
        assert len({_canonical(_granted(dev, m)) for m in members}) == 1, members
        needs = {
            frozenset(IAM_PREFIX[u.service] for u in declared_services(m) if needs_grant(u)) for m in members
        }
        assert len(needs) == 1, members
    distinct = {_canonical(_granted(dev, name)) for name in ALL_FUNCTIONS}
    assert len(groups) == len(distinct), "one role per distinct permission set, no more"
    assert groups["health"][:2] == ["health", "stats"], "the first of a group keeps its role"


def test_the_roles_no_longer_used_leave_the_template(dev: Synth) -> None:
    functions = engram_functions(dev)
    used = {ref(dev.props(functions[name.replace("/", "-")])["Role"]) for name in ALL_FUNCTIONS}
    ours = {k for k in dev.of_type("AWS::IAM::Role") if k.startswith("Functions")}
    assert ours == used and len(used) == len(dev.stack.roles.groups)
    for role in used:  # and the role says which functions run with it
        description = dev.props(role)["Description"]
        assert description.startswith("Engram dev: the role of "), description


def test_the_template_refers_only_to_what_it_holds(dev: Synth) -> None:
    known = set(dev.resources) | set(dev.template.get("Parameters", {}))
    for logical, resource in dev.resources.items():
        depends = resource.get("DependsOn", [])
        assert set([depends] if isinstance(depends, str) else depends) <= set(dev.resources), logical
        assert refs_in(resource.get("Properties")) <= known, logical


# --- the mechanism, on a small stack ---------------------------------------------------------------


def _small_stack(tmp_path: Path, *, late_grant: bool = False) -> tuple[cdk.App, cdk.Stack, Any]:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Small")
    queue = sqs.Queue(stack, "Queue")
    functions = {
        name: lambda_.Function(
            stack,
            name.capitalize(),
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        )
        for name in ("reader", "other_reader", "sender")
    }
    queue.grant_consume_messages(functions["reader"])
    queue.grant_consume_messages(functions["other_reader"])
    queue.grant_send_messages(functions["sender"])
    shared = share_identical_roles(stack, functions, "Small")
    if late_grant:
        functions["other_reader"].add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:PurgeQueue"], resources=["*"])
        )
    return app, stack, shared


def test_equal_grants_share_a_role_and_different_ones_do_not(tmp_path: Path) -> None:
    app, _, shared = _small_stack(tmp_path)
    assert shared.groups == {"reader": ["reader", "other_reader"], "sender": ["sender"]}
    template = app.synth().get_stack_by_name("Small").template
    roles = {k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role"}
    used = {
        ref(r["Properties"]["Role"])
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    assert roles == used and len(roles) == 2
    assert len([r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]) == 2


def test_a_grant_made_after_the_roles_were_shared_fails_the_synth(tmp_path: Path) -> None:
    app, _, _ = _small_stack(tmp_path, late_grant=True)
    with pytest.raises(RuntimeError, match=r"function other_reader: what it was granted differs"):
        app.synth()
