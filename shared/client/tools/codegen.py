"""Generates engram_client's models and operations from the API's OpenAPI document, so the SDK covers
every route with the server's own types and never drifts from it (a test regenerates and compares).

    python shared/client/tools/codegen.py            # from the document the local gateway serves
    python shared/client/tools/codegen.py --check    # exit 1 if the checked-in files are stale

- models.py: every schema, as pydantic models, by datamodel-code-generator.
- _operations.py: one method per operation, named after its operation id, in a sync and an async
  mixin. Path parameters are positional; body fields and query parameters are keyword arguments
  (NOT_GIVEN: not sent, the server's default applies); If-Match is `if_match`. List operations with a
  cursor also get `iter_<items>`, which follows the pages.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import keyword
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "engram_client"
REF = "#/components/schemas/"
# Written by hand in engram_client.client: the upload takes a file (multipart) or a file name (AWS); the
# import takes JSON Lines as the body.
HAND_WRITTEN = frozenset({"upload_document", "import_tenant"})
# Operations whose answer can be followed until the work is done (wait=True).
WAITABLE = {"create_document": ("Document", "id")}
DATAMODEL_OPTIONS = [
    "--input-file-type",
    "openapi",
    "--output-model-type",
    "pydantic_v2.BaseModel",
    "--target-python-version",
    "3.11",
    "--use-union-operator",
    "--use-standard-collections",
    "--use-annotated",
    "--use-double-quotes",
    "--collapse-root-models",
    "--enum-field-as-literal",
    "all",
    "--use-schema-description",
    "--disable-timestamp",
    "--custom-file-header",
    '"""Generated from the Engram API\'s OpenAPI document by shared/client/tools/codegen.py: do not edit."""',
]


def served_document() -> dict[str, Any]:
    """The document GET /openapi.json serves, built in-process (no server, no database)."""
    repository = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(repository / "shared"))
    from engram.local.gateway import LocalGateway

    document: dict[str, Any] = LocalGateway().openapi()
    return document


# --- JSON Schema -> Python annotations --------------------------------------------------------------


def _members(union: str) -> list[str]:
    """The top-level members of `A | B[C | D] | None`."""
    members, depth, start = [], 0, 0
    for i, char in enumerate(union):
        depth += char in "[(" or -(char in "])")
        if depth == 0 and union.startswith(" | ", i):
            members.append(union[start:i])
            start = i + 3
    members.append(union[start:])
    return members


def union(*parts: str) -> str:
    """One union of these annotations, each member once, None last."""
    members = list(dict.fromkeys(m for part in parts for m in _members(part)))
    return " | ".join([m for m in members if m != "None"] + (["None"] if "None" in members else []))


def annotation(schema: dict[str, Any], *, accept: bool) -> str:
    """The annotation for a value of `schema`. `accept`: for an argument (a model or a plain dict, a
    UUID or its string, ...); otherwise for a parsed answer."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF)
        if name == "JsonValue":
            return "Any"
        return f"models.{name} | dict[str, Any]" if accept else f"models.{name}"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return union(*(annotation(option, accept=accept) for option in schema[key]))
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return union(*(annotation({**schema, "type": k}, accept=accept) for k in kind))
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "uuid":
            return "UUID | str" if accept else "UUID"
        if fmt == "date-time":
            return "datetime | str" if accept else "datetime"
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        items = annotation(schema.get("items", {}), accept=accept)
        return f"Sequence[{items}]" if accept else f"list[{items}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        value = annotation(extra, accept=accept) if isinstance(extra, dict) and extra else "Any"
        return f"dict[str, {value}]"
    return "Any"


# --- operations -------------------------------------------------------------------------------------


@dataclass
class Argument:
    name: str  # the Python name
    wire: str  # the name on the wire
    where: str  # path, query, header, body
    annotation: str
    required: bool
    description: str = ""


@dataclass
class Operation:
    operation_id: str
    method: str
    path: str
    idempotent: bool
    summary: str
    arguments: list[Argument] = field(default_factory=list)
    responses: dict[int, str] = field(default_factory=dict)  # status -> runtime type expression
    idempotency_key: str | None = None  # a body field that makes a retry safe when it is sent

    @property
    def returns(self) -> str:
        return union(*self.responses.values()) if self.responses else "None"


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].removeprefix(REF)]
    return schema


def _python_name(wire: str) -> str:
    name = wire.replace("-", "_").lower()
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{wire!r} cannot be a Python argument")
    return name


def operations(document: dict[str, Any]) -> list[Operation]:
    found: list[Operation] = []
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            if spec["operationId"] in HAND_WRITTEN:
                continue
            op = Operation(
                spec["operationId"],
                method.upper(),
                path,
                bool(spec.get("x-idempotent")),
                spec.get("description") or spec.get("summary", ""),
                idempotency_key=spec.get("x-idempotency-key"),
            )
            for parameter in spec.get("parameters", []):
                kind = annotation(parameter.get("schema", {}), accept=True)
                if parameter["in"] == "path" and kind == "str":
                    kind = "str | UUID"  # most path ids are the UUIDs the API returns
                if parameter["name"] == "If-Match":
                    kind = "int | str"  # the `version` of the item, or "*" / "0"
                op.arguments.append(
                    Argument(
                        _python_name(parameter["name"]),
                        parameter["name"],
                        parameter["in"],
                        kind,
                        bool(parameter.get("required")),
                        parameter.get("description", ""),
                    )
                )
            body = spec.get("requestBody")
            if body is not None:
                content = body["content"]
                if list(content) != ["application/json"]:
                    raise ValueError(
                        f"{op.operation_id}: only JSON bodies are generated, not {list(content)}"
                    )
                schema = _resolve(document, content["application/json"]["schema"])
                required = set(schema.get("required", [])) if body.get("required") else set()
                for name, prop in schema.get("properties", {}).items():
                    op.arguments.append(
                        Argument(
                            _python_name(name),
                            name,
                            "body",
                            annotation(prop, accept=True),
                            name in required,
                            prop.get("description", ""),
                        )
                    )
            names = [a.name for a in op.arguments]
            if len(names) != len(set(names)):
                raise ValueError(f"{op.operation_id}: two arguments share a name: {names}")
            for code, response in spec["responses"].items():
                if not code.startswith("2"):
                    continue
                media = response.get("content", {})
                if not media:
                    op.responses[int(code)] = "None"
                elif "application/json" in media:
                    op.responses[int(code)] = annotation(media["application/json"]["schema"], accept=False)
                else:
                    op.responses[int(code)] = "str"  # JSON Lines: the text itself
            found.append(op)
    return found


def _signature(op: Operation, *, waitable: str | None, overload: str | None = None) -> str:
    positional = [a for a in op.arguments if a.where == "path"]
    required = [a for a in op.arguments if a.where != "path" and a.required]
    optional = [a for a in op.arguments if a.where != "path" and not a.required]
    parts = ["self"]
    parts += [f"{a.name}: {a.annotation}" for a in positional]
    keywords = [f"{a.name}: {a.annotation}" for a in required]
    keywords += [f"{a.name}: {union(a.annotation, 'NotGiven')} = NOT_GIVEN" for a in optional]
    if waitable:
        if overload == "wait":
            keywords.append("wait: Literal[True]")
        elif overload == "nowait":
            keywords.append("wait: Literal[False] = False")
        else:
            keywords.append("wait: bool = False")
        keywords.append("wait_timeout: float = 300.0")
    if keywords:
        parts.append("*")
        parts += keywords
    return ", ".join(parts)


def _docstring(op: Operation, indent: str) -> str:
    lines = [f"{op.method} {op.path}"]
    described = [a for a in op.arguments if a.description]
    if described:
        lines.append("")
        lines += [f"{a.name}: {' '.join(a.description.split())}" for a in described]
    body = f"\n{indent}".join(line.replace('"""', "'''").replace("\\", "\\\\") for line in lines)
    return f'{indent}"""{body}\n{indent}"""' if len(lines) > 1 else f'{indent}"""{body}"""'


def _call_arguments(op: Operation) -> str:
    groups: dict[str, list[Argument]] = {}
    for a in op.arguments:
        groups.setdefault(a.where, []).append(a)
    out = []
    for where in ("path", "query", "header", "body"):
        members = groups.get(where, [])
        if not members:
            continue
        pairs = ", ".join(f'"{a.wire}": {a.name}' for a in members)
        if where == "body":
            out.append("body=given(" + ", ".join(f"{a.name}={a.name}" for a in members) + ")")
        elif where == "path":
            out.append(f"path={{{pairs}}}")
        elif where == "header":
            out.append(f"headers=_headers({{{pairs}}})")
        else:
            out.append(f"query={{{pairs}}}")
    if op.idempotency_key:
        key = _python_name(op.idempotency_key)
        out.append(f"retry=True if {key} not in (NOT_GIVEN, None) else None")
    return ", ".join(out)


def _method(op: Operation, *, asynchronous: bool) -> list[str]:
    indent = "        "
    prefix = "async def" if asynchronous else "def"
    awaiting = "await " if asynchronous else ""
    waitable = WAITABLE.get(op.operation_id)
    constant = "_" + op.operation_id.upper()
    call = f"self._call({constant}, {_call_arguments(op)})"
    lines: list[str] = []
    if waitable:
        model, _ = waitable
        for variant, returns in (("wait", f"models.{model}"), ("nowait", op.returns)):
            lines += [
                "    @overload",
                f"    {prefix} {op.operation_id}("
                f"{_signature(op, waitable=model, overload=variant)}) -> {returns}: ...",
                "",
            ]
        lines.append(
            f"    {prefix} {op.operation_id}({_signature(op, waitable=model)}) "
            f"-> {union(op.returns, 'models.' + model)}:"
        )
        lines.append(_docstring(op, indent))
        lines.append(f"{indent}accepted = {awaiting}{call}")
        lines.append(
            f"{indent}return {awaiting}self.wait_for_document(accepted.id, timeout=wait_timeout) "
            "if wait else accepted"
        )
    else:
        lines.append(f"    {prefix} {op.operation_id}({_signature(op, waitable=None)}) -> {op.returns}:")
        lines.append(_docstring(op, indent))
        lines.append(f"{indent}return {awaiting}{call}")
    lines.append("")
    return lines


@dataclass
class Pager:
    operation: Operation
    items: str  # the answer's list field
    item_type: str
    cursor_in: str  # where the cursor goes: the argument's name
    cursor_out: str  # the answer's field holding the next cursor

    @property
    def name(self) -> str:
        return "iter_" + self.operation.operation_id.removeprefix("list_")


def pagers(document: dict[str, Any], ops: list[Operation]) -> list[Pager]:
    found = []
    for op in ops:
        if not op.operation_id.startswith("list_") or list(op.responses) != [200]:
            continue
        page = _resolve(document, {"$ref": REF + op.responses[200].removeprefix("models.")})
        properties = page.get("properties", {})
        cursor_out = next((c for c in ("next_cursor", "next_after") if c in properties), None)
        arrays = [n for n, p in properties.items() if p.get("type") == "array"]
        names = {a.name for a in op.arguments}
        cursor_in = {"next_cursor": "cursor", "next_after": "after"}.get(cursor_out or "")
        if cursor_out and len(arrays) == 1 and cursor_in in names:
            item = annotation(properties[arrays[0]]["items"], accept=False)
            found.append(Pager(op, arrays[0], item, cursor_in, cursor_out))
    return found


def _pager_method(pager: Pager, *, asynchronous: bool) -> list[str]:
    op = pager.operation
    arguments = [a for a in op.arguments if a.name != pager.cursor_in]
    shown = dataclasses.replace(op, arguments=arguments)
    forwarded = ", ".join(f"{a.name}={a.name}" for a in arguments if a.where != "path")
    positional = ", ".join(a.name for a in arguments if a.where == "path")
    call_args = ", ".join(p for p in (positional, forwarded, f"{pager.cursor_in}=cursor") if p)
    kind = f"AsyncIterator[{pager.item_type}]" if asynchronous else f"Iterator[{pager.item_type}]"
    prefix = "async def" if asynchronous else "def"
    awaiting = "await " if asynchronous else ""
    return [
        f"    {prefix} {pager.name}({_signature(shown, waitable=None)}) -> {kind}:",
        f'        """Every item of `{op.operation_id}`, following `{pager.cursor_out}` page after page."""',
        "        cursor: Any = NOT_GIVEN",
        "        while True:",
        f"            page = {awaiting}self.{op.operation_id}({call_args})",
        f"            for item in page.{pager.items}:"
        if asynchronous
        else f"            yield from page.{pager.items}",
        *(["                yield item"] if asynchronous else []),
        f"            if page.{pager.cursor_out} is None:",
        "                return",
        f"            cursor = page.{pager.cursor_out}",
        "",
    ]


_WAIT_SYNC = [
    "    def wait_for_document(",
    "        self, document_id: UUID | str, *, timeout: float = 300.0, interval: float = 0.5",
    "    ) -> models.Document:",
    '        """Follow a document until it is done: IngestionFailed if it failed, WaitTimeout if slow."""',
    "        deadline = time.monotonic() + timeout",
    "        while True:",
    "            document = self.get_document(document_id)",
    "            if document_finished(document, deadline, timeout):",
    "                return document",
    "            time.sleep(interval)",
    "",
]
_WAIT_ASYNC = [
    "    async def wait_for_document(",
    "        self, document_id: UUID | str, *, timeout: float = 300.0, interval: float = 0.5",
    "    ) -> models.Document:",
    '        """Follow a document until it is done: IngestionFailed if it failed, WaitTimeout if slow."""',
    "        deadline = time.monotonic() + timeout",
    "        while True:",
    "            document = await self.get_document(document_id)",
    "            if document_finished(document, deadline, timeout):",
    "                return document",
    "            await asyncio.sleep(interval)",
    "",
]


def render_operations(document: dict[str, Any]) -> str:
    ops = operations(document)
    pages = pagers(document, ops)
    lines = [
        '"""Generated from the Engram API\'s OpenAPI document by shared/client/tools/codegen.py.',
        "",
        "Do not edit. One method per operation, named after its operation id; `SyncOperations` for",
        '`Engram`, `AsyncOperations` for `AsyncEngram`."""',
        "",
        "from __future__ import annotations",
        "",
        "import asyncio",
        "import time",
        "from collections.abc import AsyncIterator, Iterator, Sequence",
        "from datetime import datetime",
        "from typing import Any, Literal, overload",
        "from uuid import UUID",
        "",
        "from engram_client import models",
        "from engram_client._base import (",
        "    NOT_GIVEN,",
        "    AsyncCore,",
        "    NotGiven,",
        "    Operation,",
        "    SyncCore,",
        "    document_finished,",
        "    given,",
        ")",
        "",
        "",
        "def _headers(values: dict[str, Any]) -> dict[str, str]:",
        "    return {name: str(value) for name, value in values.items() if value is not NOT_GIVEN}",
        "",
        "",
    ]
    for op in ops:
        responses = ", ".join(f"{code}: {kind}" for code, kind in op.responses.items())
        lines.append(
            f"_{op.operation_id.upper()} = "
            f"Operation({op.method!r}, {op.path!r}, {{{responses}}}, {op.idempotent})"
        )
    for name, base, asynchronous in (
        ("SyncOperations", "SyncCore", False),
        ("AsyncOperations", "AsyncCore", True),
    ):
        lines += ["", "", f"class {name}({base}):"]
        lines += _WAIT_ASYNC if asynchronous else _WAIT_SYNC
        for op in ops:
            lines += _method(op, asynchronous=asynchronous)
        for pager in pages:
            lines += _pager_method(pager, asynchronous=asynchronous)
    return "\n".join(lines).rstrip() + "\n"


# --- running ----------------------------------------------------------------------------------------


def render_models(document: dict[str, Any]) -> str:
    generator = Path(sys.executable).with_name("datamodel-codegen")
    with tempfile.TemporaryDirectory() as work:
        source, target = Path(work) / "openapi.json", Path(work) / "models.py"
        source.write_text(json.dumps(document))
        subprocess.run(  # noqa: S603 - the generator from this environment, on a file we wrote
            [str(generator), "--input", str(source), "--output", str(target), *DATAMODEL_OPTIONS],
            check=True,
            capture_output=True,
            text=True,
        )
        return target.read_text()


def formatted(files: dict[str, str]) -> dict[str, str]:
    """As `ruff format` (the project's style) leaves them."""
    ruff = Path(sys.executable).with_name("ruff")
    config = Path(__file__).resolve().parents[3] / "pyproject.toml"
    out = {}
    for name, text in files.items():
        result = subprocess.run(  # noqa: S603 - ruff from this environment
            [str(ruff), "format", "--config", str(config), "--stdin-filename", str(PACKAGE / name), "-"],
            input=text,
            check=True,
            capture_output=True,
            text=True,
        )
        out[name] = result.stdout
    return out


def generate(document: dict[str, Any]) -> dict[str, str]:
    """File name (in engram_client/) -> its content."""
    return formatted({"models.py": render_models(document), "_operations.py": render_operations(document)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the checked-in files are stale")
    parser.add_argument("--document", type=Path, help="an OpenAPI JSON file instead of the served one")
    args = parser.parse_args(argv)
    document = json.loads(args.document.read_text()) if args.document else served_document()
    stale = []
    for name, text in generate(document).items():
        path = PACKAGE / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `make client-code`", file=sys.stderr)
        return 1
    print(f"{'stale' if args.check else 'written'}: {', '.join(stale) or 'nothing (up to date)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
