"""Which boto3 clients a function's code creates, found by reading the code (no import, no AWS).

The scan builds a call graph at function level over the function's handler and the `engram` package:
a function refers to another when it names it (through its module's imports, a local import, `self.`
or a module attribute such as `deps.database`); naming a class counts as reaching all of its methods.
From the handler module it follows every reference and collects each call `<x>.client("<service>")` or
`boto_client("<service>")` whose first argument is a literal botocore service name.

It over-approximates on purpose (a branch that a setting turns off still counts): the deploy gate then
asks every client found to be declared for that function (infra/aws_services.py), and every declared
service that the function's settings switch on to have a network path.

For S3 it also collects the operations the reached code names (`client.get_object`, a method handed on
as `self.client.put_object`, `get_paginator("list_object_versions")`, `generate_presigned_url("put_object")`,
the transfer methods such as `upload_fileobj`) and the request and error names that change which IAM
actions they need (`VersionId`, `NoSuchKey`): infra/s3_access.py turns them into the IAM actions the
function's role must hold.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT_FACTORIES = frozenset({"client", "boto_client"})
# Calls whose first argument names an operation: the paginator lists, the presigned URL is that request.
OPERATION_BY_NAME = frozenset({"get_paginator", "generate_presigned_url", "can_paginate"})
# boto3's managed transfers: S3 requests made for the caller (multipart above a size).
S3_TRANSFERS = frozenset({"upload_file", "upload_fileobj", "download_file", "download_fileobj", "copy"})
# Names in the code that change what an S3 operation needs (infra/s3_access.py says how).
S3_MENTIONS = frozenset({"VersionId", "NoSuchKey"})
MODULE_CODE = "<module>"  # the pseudo-function holding a module's top-level statements


@cache
def botocore_services() -> frozenset[str]:
    import botocore.session

    return frozenset(botocore.session.get_session().get_available_services())


@cache
def s3_operations() -> frozenset[str]:
    """S3's operations as boto3 names its methods (get_object), and its managed transfers."""
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model("s3")
    return frozenset(xform_name(name) for name in model.operation_names) | S3_TRANSFERS


@dataclass(frozen=True)
class ClientSite:
    service: str
    function: str  # qualified name of the code that creates it: engram.pipeline.context.make_ocr
    where: str  # shared/engram/pipeline/context.py:44


@dataclass(frozen=True)
class OperationSite:
    operation: str  # boto3's name: "get_object", "upload_fileobj"
    where: str  # shared/engram/documents/blobs.py:92


@dataclass
class _Module:
    name: str
    path: Path
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name


@dataclass
class _Def:
    name: str  # qualified
    module: _Module
    node: ast.AST
    cls: str | None = None  # qualified class name, for methods


class CodeIndex:
    """Every module under the given package roots, parsed once."""

    def __init__(self, packages: dict[str, Path]) -> None:
        self.modules: dict[str, _Module] = {}
        self.defs: dict[str, _Def] = {}
        self.class_methods: dict[str, list[str]] = {}
        for package, root in packages.items():
            for path in sorted(root.rglob("*.py")):
                relative = path.relative_to(root).with_suffix("")
                parts = [package, *relative.parts]
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                self.add_module(".".join(parts), path)

    def add_module(self, name: str, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = _Module(name, path)
        self.modules[name] = module
        is_package = path.name == "__init__.py"
        for statement in tree.body:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                module.imports.update(_imports(statement, name, is_package))
        top = ast.Module(
            body=[s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef)], type_ignores=[]
        )
        self.defs[f"{name}.{MODULE_CODE}"] = _Def(f"{name}.{MODULE_CODE}", module, top)
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                qualified = f"{name}.{statement.name}"
                self.defs[qualified] = _Def(qualified, module, statement)
            elif isinstance(statement, ast.ClassDef):
                cls = f"{name}.{statement.name}"
                # Decorators, bases and class-level statements (field defaults) run with the class.
                class_code: list[ast.stmt] = [
                    ast.Expr(value=e) for e in (*statement.decorator_list, *statement.bases)
                ]
                methods = self.class_methods.setdefault(cls, [])
                for item in statement.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        qualified = f"{cls}.{item.name}"
                        self.defs[qualified] = _Def(qualified, module, item, cls=cls)
                        methods.append(qualified)
                    else:
                        class_code.append(item)
                self.defs[cls] = _Def(cls, module, ast.Module(body=class_code, type_ignores=[]))

    # --- resolving names -------------------------------------------------------------------------

    def canonical(self, qualified: str, depth: int = 0) -> str | None:
        """The definition (or module) a dotted name stands for, following re-exports."""
        if depth > 20:
            return None
        if qualified in self.defs or qualified in self.modules:
            return qualified
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head, rest = ".".join(parts[:cut]), parts[cut:]
            if head in self.modules:
                imported = self.modules[head].imports.get(rest[0])
                if imported is not None:
                    return self.canonical(".".join([imported, *rest[1:]]), depth + 1)
                if f"{head}.__getattr__" in self.defs:  # a lazy re-export (PEP 562)
                    return f"{head}.__getattr__"
                return None
            if head in self.class_methods:  # Class.method or Class.attribute
                method = f"{head}.{rest[0]}"
                return method if method in self.defs else head
        return None

    def references(self, definition: _Def) -> set[str]:
        local = dict(definition.module.imports)
        for node in _walk_code(definition.node):
            if isinstance(node, ast.Import | ast.ImportFrom):
                local.update(
                    _imports(node, definition.module.name, definition.module.path.name == "__init__.py")
                )
        found: set[str] = set()
        for node in _walk_code(definition.node):
            if isinstance(node, ast.Import | ast.ImportFrom):  # importing a module runs its top-level code
                for imported in _imports(node, definition.module.name, False).values():
                    module = self._module_of(imported)
                    if module:
                        found.add(f"{module}.{MODULE_CODE}")
            dotted = _dotted(node)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            base: str
            if head in ("self", "cls") and definition.cls:
                base = definition.cls
            elif head in local:
                base = local[head]
            else:
                base = f"{definition.module.name}.{head}"
            target = self.canonical(f"{base}.{rest}" if rest else base)
            if target is None and rest:  # a module attribute we do not know: at least the head
                target = self.canonical(base)
            if target is None:
                continue
            if target in self.modules:
                found.add(f"{target}.{MODULE_CODE}")
                continue
            found.add(target)
            if target in self.class_methods:
                found.update(self.class_methods[target])
        if definition.name.endswith(".__getattr__"):  # a lazy re-export hands out the modules' names
            for module in [n.removesuffix(f".{MODULE_CODE}") for n in found if n.endswith(MODULE_CODE)]:
                found.update(d for d in self.defs if d.rsplit(".", 1)[0] == module)
        found.discard(definition.name)
        return found

    def _module_of(self, qualified: str) -> str | None:
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            if ".".join(parts[:cut]) in self.modules:
                return ".".join(parts[:cut])
        return None

    def client_sites(self, definition: _Def) -> Iterator[ClientSite]:
        services = botocore_services()
        for node in _walk_code(definition.node):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            first = node.args[0]
            if (
                name in CLIENT_FACTORIES
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value in services
            ):
                where = f"{_display(definition.module.path)}:{node.lineno}"
                yield ClientSite(first.value, definition.name, where)

    def s3_sites(self, definition: _Def) -> tuple[list[OperationSite], set[str]]:
        """The S3 operations a definition names, and which of S3_MENTIONS it names (a string, a key or
        an attribute such as `client.exceptions.NoSuchKey`)."""
        operations = s3_operations()
        where = _display(definition.module.path)
        sites: list[OperationSite] = []
        mentions: set[str] = set()
        for node in _walk_code(definition.node):
            if isinstance(node, ast.Attribute):
                if node.attr in operations:
                    sites.append(OperationSite(node.attr, f"{where}:{node.lineno}"))
                if node.attr in S3_MENTIONS:
                    mentions.add(node.attr)
            elif isinstance(node, ast.Constant) and node.value in S3_MENTIONS:
                mentions.add(str(node.value))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in OPERATION_BY_NAME
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in operations
            ):
                sites.append(OperationSite(str(node.args[0].value), f"{where}:{node.lineno}"))
        return sites, mentions

    # --- the scan --------------------------------------------------------------------------------

    def reached_from(self, module: str) -> set[str]:
        """Every definition the module's code may run: its top level, each of its functions (a handler
        module's routes are called by the resolver), and whatever they refer to, transitively."""
        start = [d for d in self.defs if d.startswith(module + ".") and d.count(".") == module.count(".") + 1]
        seen: set[str] = set()
        todo = list(start)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.defs:
                continue
            seen.add(name)
            todo.extend(self.references(self.defs[name]) - seen)
        return seen


@dataclass(frozen=True)
class FunctionCode:
    """What the scan found for one function."""

    name: str  # "memories", "pipeline/extract"
    reached: frozenset[str]
    clients: tuple[ClientSite, ...]
    s3_calls: tuple[OperationSite, ...] = ()  # when its code creates an S3 client
    s3_mentions: frozenset[str] = frozenset()

    @property
    def services(self) -> frozenset[str]:
        return frozenset(site.service for site in self.clients)

    def reaches(self, qualified: str) -> bool:
        return qualified in self.reached


def scan_function(
    name: str, functions_dir: Path = REPO / "functions", package: Path = REPO / "shared" / "engram"
) -> FunctionCode:
    index = CodeIndex({"engram": package})
    return _scan(index, name, functions_dir)


def scan_functions(
    names: Iterable[str], functions_dir: Path = REPO / "functions", package: Path = REPO / "shared" / "engram"
) -> dict[str, FunctionCode]:
    index = CodeIndex({"engram": package})
    return {name: _scan(index, name, functions_dir) for name in names}


def _scan(index: CodeIndex, name: str, functions_dir: Path) -> FunctionCode:
    module = "handler_" + name.replace("/", "_")
    index.add_module(module, functions_dir / name / "handler.py")
    reached = index.reached_from(module)
    sites = tuple(
        sorted(
            {site for definition in sorted(reached) for site in index.client_sites(index.defs[definition])},
            key=lambda s: (s.service, s.where),
        )
    )
    calls: set[OperationSite] = set()
    mentions: set[str] = set()
    if any(site.service == "s3" for site in sites):
        for definition in reached:
            found, named = index.s3_sites(index.defs[definition])
            calls.update(found)
            mentions |= named
    ordered = tuple(sorted(calls, key=lambda s: (s.operation, s.where)))
    return FunctionCode(name, frozenset(reached), sites, ordered, frozenset(mentions))


def _imports(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out[alias.asname] = alias.name
            else:
                out[alias.name.split(".")[0]] = alias.name.split(".")[0]
        return out
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join([*parts[:keep], *([node.module] if node.module else [])])
    for alias in node.names:
        out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return out


def _walk_code(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk without annotations (types are not calls) and without `if TYPE_CHECKING:` blocks."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for name, value in ast.iter_fields(current):
            if name in ("annotation", "returns"):
                continue
            if isinstance(current, ast.If) and name == "body" and _is_type_checking(current.test):
                continue
            children = value if isinstance(value, list) else [value]
            todo.extend(child for child in children if isinstance(child, ast.AST))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name or an Attribute chain on a Name (loaded, not assigned)."""
    parts: list[str] = []
    current = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return None
    return ".".join([current.id, *reversed(parts)])


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)
