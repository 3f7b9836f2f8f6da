"""A synthesized CloudFormation template, read as data: resources by type, what a value refers to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Resource = dict[str, Any]


def ref(value: Any) -> str | None:
    """The logical id behind {"Ref": id} or {"Fn::GetAtt": [id, attribute]} (None for anything else)."""
    if isinstance(value, dict) and len(value) == 1:
        if "Ref" in value and isinstance(value["Ref"], str) and not value["Ref"].startswith("AWS::"):
            return value["Ref"]
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return str(target[0] if isinstance(target, list) else target.split(".")[0])
    return None


def getatt(value: Any) -> tuple[str, str] | None:
    if isinstance(value, dict) and len(value) == 1 and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        logical, attribute = (target[0], target[1]) if isinstance(target, list) else target.split(".", 1)
        return str(logical), str(attribute)
    return None


def refs_in(value: Any) -> set[str]:
    """Every logical id referenced anywhere inside a value."""
    found: set[str] = set()
    own = ref(value)
    if own:
        found.add(own)
    if isinstance(value, dict):
        for inner in value.values():
            found |= refs_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= refs_in(inner)
    return found


def strings_in(value: Any) -> Iterator[str]:
    """Every literal string inside a value (keys excluded), including the parts of an Fn::Join."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from strings_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from strings_in(inner)


def joined(value: Any, region: str | None = None) -> str | None:
    """A string value with Fn::Join resolved and AWS::Region / AWS::Partition / AWS::URLSuffix filled
    in (region: the template's region, or `${AWS::Region}` left in place); None if it holds a reference."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        if "Ref" in value:
            pseudo = {
                "AWS::Region": region or "${AWS::Region}",
                "AWS::Partition": "aws",
                "AWS::URLSuffix": "amazonaws.com",
            }
            return pseudo.get(value["Ref"])
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            pieces = [joined(part, region) for part in parts]
            return (
                None if any(p is None for p in pieces) else separator.join(p for p in pieces if p is not None)
            )
    return None


@dataclass
class Template:
    body: dict[str, Any]
    region: str | None = None  # the region it was synthesized for (None: environment-agnostic)
    size: int = 0  # bytes, as written to disk

    @classmethod
    def load(cls, path: Path, region: str | None = None) -> Template:
        text = path.read_text(encoding="utf-8")
        return cls(json.loads(text), region, len(text.encode("utf-8")))

    @classmethod
    def of(cls, body: dict[str, Any], region: str | None = None) -> Template:
        """A template from a dict (the tests' hand-made fragments); its size as CDK would write it."""
        return cls(body, region, len(json.dumps(body, indent=1).encode("utf-8")))

    @property
    def resources(self) -> dict[str, Resource]:
        resources: dict[str, Resource] = self.body.get("Resources", {})
        return resources

    def of_type(self, *types: str) -> dict[str, Resource]:
        return {k: v for k, v in self.resources.items() if v.get("Type") in types}

    def props(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources.get(logical_id, {}).get("Properties", {})
        return props

    def type_of(self, logical_id: str | None) -> str | None:
        return None if logical_id is None else self.resources.get(logical_id, {}).get("Type")

    def value(self, value: Any) -> str | None:
        return joined(value, self.region)

    def number(self, value: Any) -> int | None:
        """An integer property, also when it is a GetAtt of a cluster's Endpoint.Port."""
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
        target = getatt(value)
        if target and target[1] == "Endpoint.Port" and self.type_of(target[0]) == "AWS::RDS::DBCluster":
            return self.number(self.props(target[0]).get("Port", 5432))
        return None
