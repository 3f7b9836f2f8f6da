"""Reading a synthesized template: which function a method calls, the path of an API resource."""

from __future__ import annotations

from typing import Any

from infra.gate.template import ref, refs_in
from tests.infra.conftest import Synth

__all__ = ["api_methods", "engram_functions", "ref", "refs_in", "resource_path"]


def engram_functions(synth: Synth) -> dict[str, str]:
    """function short name (health, memories, ...) -> logical id, for the stack's own functions."""
    prefix = f"engram-{synth.stack.config.stage}-"
    out = {}
    for logical, resource in synth.of_type("AWS::Lambda::Function").items():
        name = resource["Properties"].get("FunctionName")
        if isinstance(name, str) and name.startswith(prefix):
            out[name.removeprefix(prefix)] = logical
    return out


def resource_path(synth: Synth, resource_id: Any) -> str:
    """The full path of an API Gateway resource (the root is "")."""
    logical = ref(resource_id)
    if isinstance(resource_id, dict) and "Fn::GetAtt" in resource_id:
        return ""  # RootResourceId
    assert logical is not None, resource_id
    props = synth.props(logical)
    return resource_path(synth, props["ParentId"]) + "/" + props["PathPart"]


def api_methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    """(HTTP method, path) -> the method's properties."""
    methods = {}
    for resource in synth.of_type("AWS::ApiGateway::Method").values():
        props = resource["Properties"]
        methods[(props["HttpMethod"], resource_path(synth, props["ResourceId"]) or "/")] = props
    return methods
