"""Reading a synthesized template: which function a method calls, the path of an API resource."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synth


def ref(value: Any) -> str | None:
    """The logical id behind {"Ref": id} or {"Fn::GetAtt": [id, attr]}."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def refs_in(value: Any) -> set[str]:
    """Every resource's logical id referenced anywhere inside a property value."""
    found: set[str] = set()
    if isinstance(value, dict):
        own = ref(value)
        if own and not own.startswith("AWS::"):  # pseudo parameters are not resources
            found.add(own)
        for inner in value.values():
            found |= refs_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= refs_in(inner)
    return found


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
