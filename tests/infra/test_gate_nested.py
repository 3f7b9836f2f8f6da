"""Nested stacks, read by the gate: each template kept as CloudFormation receives it, and the stack
flattened (parameters bound to what the parent passes, nested outputs replaced by their values) so the
checks that follow references see one graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.gate.nested import NestedTemplateMissing, flatten, label, load_stack
from tests.infra import fragments as f

CHILD = "ApiStack"


def _parent(**parameters: Any) -> dict[str, Any]:
    return {
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "engram-dev-health"}},
            CHILD: {
                "Type": "AWS::CloudFormation::Stack",
                "DependsOn": ["Fn"],
                "Properties": {"Parameters": parameters, "TemplateURL": "https://s3/bucket/abc123.json"},
            },
            "Waiter": {"Type": "AWS::SNS::Topic", "DependsOn": CHILD},
        },
        "Outputs": {"Url": {"Value": f.getatt(CHILD, "Outputs.ApiUrl")}},
    }


def _child() -> dict[str, Any]:
    return {
        "Parameters": {"FnArn": {"Type": "String"}, "Stage": {"Type": "String", "Default": "dev"}},
        "Resources": {
            "Method": {
                "Type": "AWS::ApiGateway::Method",
                "Properties": {
                    "Integration": {
                        "Uri": {"Fn::Sub": "arn:aws:apigateway:lambda:path/${FnArn}/invocations"}
                    },
                    "StageName": f.ref("Stage"),
                },
            },
            "Permission": {
                "Type": "AWS::Lambda::Permission",
                "Properties": {"FunctionName": f.ref("FnArn"), "SourceArn": f.ref("Api")},
            },
            "Api": {"Type": "AWS::ApiGateway::RestApi"},
        },
        "Outputs": {"ApiUrl": {"Value": {"Fn::Join": ["", ["https://", f.ref("Api")]]}}},
    }


def test_flattening_binds_parameters_to_what_the_parent_passes() -> None:
    flat = flatten(_parent(FnArn=f.getatt("Fn", "Arn")), {CHILD: _child()})
    resources = flat["Resources"]
    assert CHILD not in resources
    assert resources["Permission"]["Properties"]["FunctionName"] == f.getatt("Fn", "Arn")
    assert resources["Permission"]["Properties"]["SourceArn"] == f.ref("Api"), "the child's own refs stay"
    assert resources["Method"]["Properties"]["StageName"] == "dev", "a parameter not passed takes its default"
    assert resources["Method"]["Properties"]["Integration"]["Uri"] == {
        "Fn::Sub": ["arn:aws:apigateway:lambda:path/${FnArn}/invocations", {"FnArn": f.getatt("Fn", "Arn")}]
    }


def test_flattening_replaces_nested_outputs_and_dependencies_on_the_nested_stack() -> None:
    flat = flatten(_parent(FnArn=f.getatt("Fn", "Arn")), {CHILD: _child()})
    assert flat["Outputs"]["Url"]["Value"] == {"Fn::Join": ["", ["https://", f.ref("Api")]]}
    assert flat["Resources"]["Waiter"]["DependsOn"] == ["Api", "Method", "Permission"]
    assert all(flat["Resources"][k]["DependsOn"] == ["Fn"] for k in ("Api", "Method", "Permission"))


def test_flattening_refuses_what_it_cannot_represent() -> None:
    with pytest.raises(ValueError, match="no value for its parameter FnArn"):
        flatten(_parent(), {CHILD: _child()})
    clashing = _child()
    clashing["Resources"]["Fn"] = {"Type": "AWS::SNS::Topic"}
    with pytest.raises(ValueError, match="logical ids also in its parent: Fn"):
        flatten(_parent(FnArn="x"), {CHILD: clashing})
    without_output = _child()
    del without_output["Outputs"]
    with pytest.raises(ValueError, match="has no output ApiUrl"):
        flatten(_parent(FnArn="x"), {CHILD: without_output})


def _assembly(folder: Path, *, manifest: bool = True) -> Path:
    parent = folder / "Engram-dev.template.json"
    parent.write_text(json.dumps(_parent(FnArn=f.getatt("Fn", "Arn"))))
    (folder / "EngramdevApi1234.nested.template.json").write_text(json.dumps(_child()))
    if manifest:
        asset = {
            "source": {"path": "EngramdevApi1234.nested.template.json", "packaging": "file"},
            "destinations": {"d": {"bucketName": "bucket", "objectKey": "abc123.json"}},
        }
        (folder / "Engram-dev.assets.json").write_text(json.dumps({"files": {"abc123": asset}}))
    return parent


def test_a_stack_is_read_with_each_template_and_flattened(tmp_path: Path) -> None:
    stack = load_stack(_assembly(tmp_path), "eu-west-1")
    assert list(stack.templates) == ["Engram-dev.template.json", "EngramdevApi1234.nested.template.json"]
    assert [len(t.resources) for t in stack.templates.values()] == [3, 3]
    assert stack.root.size == len((tmp_path / "Engram-dev.template.json").read_bytes())
    assert set(stack.flat.resources) == {"Fn", "Waiter", "Method", "Permission", "Api"}
    assert [label(name) for name in stack.templates] == ["Engram-dev", "EngramdevApi1234 (nested)"]


def test_the_nested_template_is_found_by_its_asset_metadata_too(tmp_path: Path) -> None:
    parent = _assembly(tmp_path, manifest=False)
    body = json.loads(parent.read_text())
    with pytest.raises(NestedTemplateMissing, match="nested stack ApiStack"):
        load_stack(parent)
    body["Resources"][CHILD]["Metadata"] = {"aws:asset:path": "EngramdevApi1234.nested.template.json"}
    parent.write_text(json.dumps(body))
    assert "Method" in load_stack(parent).flat.resources
