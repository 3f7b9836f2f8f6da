"""A stack and its nested stacks, read as data.

CloudFormation holds each template to its limits on its own (resources, bytes), so budgets and cfn-lint
apply per template. The checks that follow references (which function a method calls, reachability, IAM,
async failures) read the stack flattened into one template: each nested stack's resources take the place
of its `AWS::CloudFormation::Stack` resource, every reference to one of its parameters becomes what the
parent passes for it, and every `Fn::GetAtt [<nested stack>, Outputs.<name>]` becomes that output's value.
So a check sees the same graph whichever template a resource lives in.

A nested stack's template is found in the cloud assembly beside the parent's: by the resource's
`aws:asset:path` metadata, or else by the asset manifest entry whose object key its TemplateURL names.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.gate.template import Template, strings_in

NESTED_STACK = "AWS::CloudFormation::Stack"
Body = dict[str, Any]


@dataclass
class StackTemplates:
    """templates: each template of the stack by its file's name, the root first; flat: the whole stack
    as one template."""

    templates: dict[str, Template]
    flat: Template

    @property
    def root(self) -> Template:
        return next(iter(self.templates.values()))


class NestedTemplateMissing(Exception):
    pass


def load_stack(path: Path, region: str | None = None) -> StackTemplates:
    """The template at `path` (a cloud assembly's `<stack>.template.json`) and its nested templates."""
    assets = _asset_files(path)
    templates: dict[str, Template] = {}

    def load(file: Path) -> Body:
        template = Template.load(file, region)
        templates[file.name] = template
        children = {}
        for logical, resource in template.of_type(NESTED_STACK).items():
            child = _child_file(file.parent, resource, assets)
            if child is None:
                raise NestedTemplateMissing(f"{file.name}: the template of nested stack {logical} is missing")
            children[logical] = load(child)
        return flatten(template.body, children)

    flat = load(path)
    return StackTemplates(templates, Template.of(flat, region))


def label(file_name: str) -> str:
    """ "Engram-dev.template.json" -> "Engram-dev"; "EngramdevApiC5604C9F.nested.template.json" ->
    "EngramdevApiC5604C9F (nested)"."""
    name = file_name.removesuffix(".template.json")
    return f"{name.removesuffix('.nested')} (nested)" if name.endswith(".nested") else name


def _asset_files(path: Path) -> dict[str, str]:
    """S3 object key -> file in the assembly, from `<stack>.assets.json` (empty when there is none)."""
    manifest = path.with_name(path.name.removesuffix(".template.json") + ".assets.json")
    if not manifest.is_file():
        return {}
    files = json.loads(manifest.read_text(encoding="utf-8")).get("files", {})
    return {
        destination["objectKey"]: asset["source"]["path"]
        for asset in files.values()
        for destination in asset.get("destinations", {}).values()
        if "objectKey" in destination and "path" in asset.get("source", {})
    }


def _child_file(folder: Path, resource: Body, assets: Mapping[str, str]) -> Path | None:
    named = (resource.get("Metadata") or {}).get("aws:asset:path")
    if isinstance(named, str):
        return folder / named if (folder / named).is_file() else None
    for text in strings_in(resource.get("Properties", {}).get("TemplateURL")):
        for key, file in assets.items():
            if text.endswith(key) and (folder / file).is_file():
                return folder / file
    return None


def flatten(parent: Body, children: Mapping[str, Body]) -> Body:
    """`parent` with each nested stack (logical id -> its template, itself flattened) merged in."""
    out = copy.deepcopy(parent)
    resources: Body = out.setdefault("Resources", {})
    for stack_id, child in children.items():
        stack = resources.pop(stack_id)
        passed = stack.get("Properties", {}).get("Parameters", {}) or {}
        bindings = {}
        for name, declared in (child.get("Parameters") or {}).items():
            if name in passed:
                bindings[name] = passed[name]
            elif "Default" in declared:
                bindings[name] = declared["Default"]
            else:
                raise ValueError(f"nested stack {stack_id}: no value for its parameter {name}")
        inner = _bind(copy.deepcopy(child.get("Resources", {})), bindings)
        clash = sorted(set(inner) & set(resources))
        if clash:
            raise ValueError(f"nested stack {stack_id}: logical ids also in its parent: {', '.join(clash)}")
        waits = _depends(stack)
        for resource in inner.values():
            if waits:
                resource["DependsOn"] = sorted(set(_depends(resource)) | set(waits))
        resources.update(inner)
        for section in ("Conditions", "Mappings"):
            merged = out.setdefault(section, {})
            for name, value in (child.get(section) or {}).items():
                if name in merged:
                    raise ValueError(
                        f"nested stack {stack_id}: {section[:-1].lower()} {name} also in its parent"
                    )
                merged[name] = _bind(copy.deepcopy(value), bindings)
            if not merged:
                del out[section]
        outputs = {
            k: _bind(copy.deepcopy(v["Value"]), bindings) for k, v in (child.get("Outputs") or {}).items()
        }
        for section in list(out):
            out[section] = _outputs_of(out[section], stack_id, outputs)
        resources = out["Resources"]
        for resource in resources.values():
            depends = _depends(resource)
            if stack_id in depends:
                resource["DependsOn"] = sorted((set(depends) - {stack_id}) | set(inner))
    return out


def _depends(resource: Body) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)


_SUB_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")


def _bind(value: Any, bindings: Mapping[str, Any]) -> Any:
    """`value` with every reference to a bound parameter replaced by its binding."""
    if isinstance(value, list):
        return [_bind(v, bindings) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and isinstance(value.get("Ref"), str) and value["Ref"] in bindings:
        return copy.deepcopy(bindings[value["Ref"]])
    if len(value) == 1 and "Fn::Sub" in value:
        text, variables = value["Fn::Sub"] if isinstance(value["Fn::Sub"], list) else (value["Fn::Sub"], {})
        variables = {k: _bind(v, bindings) for k, v in variables.items()}
        used = {v for v in _SUB_VARIABLE.findall(text) if v in bindings and v not in variables}
        variables.update({v: copy.deepcopy(bindings[v]) for v in sorted(used)})
        return {"Fn::Sub": [text, variables] if variables else text}
    return {k: _bind(v, bindings) for k, v in value.items()}


def _outputs_of(value: Any, stack_id: str, outputs: Mapping[str, Any]) -> Any:
    """`value` with each `Fn::GetAtt [stack_id, Outputs.<name>]` replaced by that output's value."""
    if isinstance(value, list):
        return [_outputs_of(v, stack_id, outputs) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        logical, attribute = (target[0], target[1]) if isinstance(target, list) else target.split(".", 1)
        if logical == stack_id and str(attribute).startswith("Outputs."):
            name = str(attribute).removeprefix("Outputs.")
            if name not in outputs:
                raise ValueError(f"nested stack {stack_id} has no output {name}")
            return copy.deepcopy(outputs[name])
    return {k: _outputs_of(v, stack_id, outputs) for k, v in value.items()}
