"""One IAM role per distinct permission set among the stack's functions.

Every function is built with a role of its own, and each construct grants it what it needs, where it
wires it (the database login, a bucket, the state machine, Bedrock, the async-failures queue...). Once
the stack is composed, `share_identical_roles` compares what each role holds, resolved as the template
would hold it (its trust policy, managed policies, boundary, and the statements of its policy), and
functions whose roles hold exactly the same let the first of them serve them all. No function gains a
permission it did not have: two roles are merged only when they are equal, statement for statement. The
roles no longer used leave the template (about two resources and 2.5 KB each).

A synth-time validation keeps that true: for every function, what it was granted must equal what the
role it runs with holds. A grant made after the sharing (it would land on a role that is no longer in the
template) therefore fails the synth, naming the function, instead of being lost.

A new function needs nothing here: it shares a role when its grants equal another function's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import jsii
from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct, IValidation

# The children CDK gives a function's role: the role itself and the policy its grants go to.
ROLE_PARTS = frozenset({"Resource", "DefaultPolicy"})


@dataclass(frozen=True)
class OwnRole:
    """The role a function was built with, and what it was granted there (kept after the role itself
    has left the template, so that the validation can compare)."""

    function: str
    role: IConstruct
    resource: iam.CfnRole
    policy: iam.Policy | None

    def permissions(self, stack: Stack) -> str:
        """Everything the role would hold, resolved, in a canonical form (two equal roles, equal text)."""
        resolved = stack.resolve(
            {
                "trust": self.resource.assume_role_policy_document,
                "managed": self.resource.managed_policy_arns,
                "inline": self.resource.policies,
                "boundary": self.resource.permissions_boundary,
                "path": self.resource.path,
                "policy": self.policy.document if self.policy is not None else None,
            }
        )
        if resolved.get("managed"):
            resolved["managed"] = sorted(resolved["managed"], key=_canonical)
        if resolved.get("policy"):
            resolved["policy"]["Statement"] = sorted(resolved["policy"].get("Statement", []), key=_canonical)
        return _canonical(resolved)


@dataclass(frozen=True)
class SharedRoles:
    """own: each function's own role and grants; uses: the function whose role each function runs with."""

    own: Mapping[str, OwnRole]
    uses: Mapping[str, str]

    @property
    def groups(self) -> dict[str, list[str]]:
        """keeper -> the functions that run with its role (the keeper first)."""
        groups: dict[str, list[str]] = {}
        for function, keeper in self.uses.items():
            groups.setdefault(keeper, []).append(function)
        return groups


def share_identical_roles(stack: Stack, functions: Mapping[str, lambda_.Function], label: str) -> SharedRoles:
    """Lets functions whose roles hold exactly the same permissions run with one of them. Call it once
    the stack is composed: every grant made by then counts; a later one fails the synth."""
    own = {name: _own_role(name, function) for name, function in functions.items()}
    shareable = _shareable(stack, own)
    keepers: dict[str, str] = {}  # permissions -> the first function that holds them
    uses: dict[str, str] = {}
    for name, role in own.items():
        key = role.permissions(stack) if name in shareable else f"own:{name}"
        keeper = keepers.setdefault(key, name)
        uses[name] = keeper
        if keeper != name:
            _run_with(functions[name], role, own[keeper])
    shared = SharedRoles(own, uses)
    for keeper, members in shared.groups.items():
        together = " (functions with the same permissions share one role)" if len(members) > 1 else ""
        own[keeper].resource.description = f"{label}: the role of {', '.join(members)}{together}"
    stack.node.add_validation(_GrantsMatchRoles(stack, shared))
    return shared


def _own_role(name: str, function: lambda_.Function) -> OwnRole:
    role = function.role
    assert role is not None, name
    resource = role.node.default_child
    assert isinstance(resource, iam.CfnRole), name
    policy = role.node.try_find_child("DefaultPolicy")
    assert policy is None or isinstance(policy, iam.Policy), name
    return OwnRole(name, role, resource, policy)


def _shareable(stack: Stack, own: Mapping[str, OwnRole]) -> set[str]:
    """The functions whose role holds nothing but its own parts: no other policy in the stack names it
    (a policy attached to several roles would keep naming a role that left the template)."""
    logical = {stack.resolve(r.resource.ref)["Ref"]: name for name, r in own.items()}
    own_policies = {r.policy.node.path for r in own.values() if r.policy is not None}
    named_elsewhere: set[str] = set()
    for construct in stack.node.find_all():
        if isinstance(construct, iam.CfnPolicy | iam.CfnManagedPolicy):
            if construct.node.scope is not None and construct.node.scope.node.path in own_policies:
                continue
            roles = stack.resolve(construct.roles) or []
            named_elsewhere |= {
                logical[r["Ref"]] for r in roles if isinstance(r, dict) and r.get("Ref") in logical
            }
    return {
        name
        for name, r in own.items()
        if name not in named_elsewhere and {c.node.id for c in r.role.node.children} <= ROLE_PARTS
    }


def _run_with(function: lambda_.Function, own: OwnRole, keeper: OwnRole) -> None:
    """The function runs with the keeper's role (created before it, with its policy), and its own role
    leaves the template."""
    resource = function.node.default_child
    assert isinstance(resource, lambda_.CfnFunction)
    resource.role = keeper.resource.attr_arn
    resource.node.remove_dependency(own.role)
    resource.node.add_dependency(keeper.role)
    for part in ROLE_PARTS:
        own.role.node.try_remove_child(part)


@jsii.implements(IValidation)
class _GrantsMatchRoles:
    def __init__(self, stack: Stack, shared: SharedRoles) -> None:
        self.stack, self.shared = stack, shared

    def validate(self) -> list[str]:
        problems = []
        for name, keeper in self.shared.uses.items():
            granted = self.shared.own[name].permissions(self.stack)
            if granted != self.shared.own[keeper].permissions(self.stack):
                problems.append(
                    f"function {name}: what it was granted differs from what the role it runs with "
                    f"({keeper}'s) holds: a grant was made after infra/roles.py shared the roles; make it "
                    "before"
                )
        return problems


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
