"""Code units from tree-sitter syntax trees: one segment per top-level definition (function, class,
struct, interface, impl, namespace, ...) or run of other top-level code (imports, constants).

Comments, doc comments and attributes directly above a definition belong to it. A container (class,
impl, trait, namespace, module) lists its members' line ranges (`members`), so the chunker can cut a
container larger than a chunk between its methods instead of at blank lines. The grammars are the
tree-sitter project's own wheels (the `code` extra).
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from engram.pipeline.extracted import Segment

# Siblings that document the definition after them.
_ATTACHED = frozenset({"comment", "line_comment", "block_comment", "attribute_item"})
# Wrappers whose definition is inside them: `export class`, `@decorator def`, `template <...> ...`.
_WRAPPERS = frozenset({"export_statement", "decorated_definition", "template_declaration"})


@dataclass(frozen=True)
class Grammar:
    module: str
    function: str
    definitions: dict[str, str]  # node type -> unit kind
    containers: frozenset[str]  # definitions whose body's definitions are listed as members


_FUNCTION, _CLASS, _METHOD = "function", "class", "method"
_JS = {
    "function_declaration": _FUNCTION,
    "generator_function_declaration": _FUNCTION,
    "class_declaration": _CLASS,
    "abstract_class_declaration": _CLASS,
    "method_definition": _METHOD,
    "lexical_declaration": _FUNCTION,  # only when it binds a function (see _is_definition)
}
_TS = {
    **_JS,
    "interface_declaration": _CLASS,
    "type_alias_declaration": _CLASS,
    "enum_declaration": _CLASS,
    "internal_module": _CLASS,
    "module": _CLASS,
}
_C = {"function_definition": _FUNCTION, "struct_specifier": _CLASS, "enum_specifier": _CLASS}
GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "tree_sitter_python",
        "language",
        {"function_definition": _FUNCTION, "class_definition": _CLASS},
        frozenset({"class_definition"}),
    ),
    "javascript": Grammar("tree_sitter_javascript", "language", _JS, frozenset({"class_declaration"})),
    "typescript": Grammar(
        "tree_sitter_typescript",
        "language_typescript",
        _TS,
        frozenset({"class_declaration", "abstract_class_declaration", "internal_module", "module"}),
    ),
    "tsx": Grammar(
        "tree_sitter_typescript",
        "language_tsx",
        _TS,
        frozenset({"class_declaration", "abstract_class_declaration", "internal_module", "module"}),
    ),
    "go": Grammar(
        "tree_sitter_go",
        "language",
        {"function_declaration": _FUNCTION, "method_declaration": _METHOD, "type_declaration": _CLASS},
        frozenset(),
    ),
    "java": Grammar(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": _CLASS,
            "interface_declaration": _CLASS,
            "enum_declaration": _CLASS,
            "record_declaration": _CLASS,
            "annotation_type_declaration": _CLASS,
            "method_declaration": _METHOD,
            "constructor_declaration": _METHOD,
        },
        frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        "language",
        {
            "function_item": _FUNCTION,
            "struct_item": _CLASS,
            "enum_item": _CLASS,
            "union_item": _CLASS,
            "trait_item": _CLASS,
            "impl_item": _CLASS,
            "mod_item": _CLASS,
            "macro_definition": _FUNCTION,
        },
        frozenset({"impl_item", "trait_item", "mod_item"}),
    ),
    "c": Grammar("tree_sitter_c", "language", _C, frozenset()),
    "cpp": Grammar(
        "tree_sitter_cpp",
        "language",
        {**_C, "class_specifier": _CLASS, "namespace_definition": _CLASS},
        frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
    ),
}


@cache
def parser_for(language: str) -> Any | None:
    """A tree-sitter parser for the language, or None when its grammar is not installed here."""
    grammar = GRAMMARS.get(language)
    if grammar is None:
        return None
    try:
        from tree_sitter import Language, Parser

        module = importlib.import_module(grammar.module)
    except ImportError:
        return None
    return Parser(Language(getattr(module, grammar.function)()))


def syntax_units(text: str, language: str) -> list[Segment] | None:
    """The source's units, or None when no grammar for the language is available."""
    parser = parser_for(language)
    if parser is None:
        return None
    source = text.encode("utf-8")
    tree = parser.parse(source)
    units = _Units(GRAMMARS[language], source, text.splitlines(keepends=True), language)
    segments = units.of(tree.root_node)
    if tree.root_node.has_error:
        for segment in segments:
            segment.meta["parse_error"] = True
    return segments


class _Units:
    def __init__(self, grammar: Grammar, source: bytes, lines: list[str], language: str) -> None:
        self.grammar, self.source, self.lines, self.language = grammar, source, lines, language

    def text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def of(self, root: Any) -> list[Segment]:
        segments: list[Segment] = []
        module_start: int | None = None  # first line (0-based) of top-level code not yet in a unit
        covered = -1  # last line already in a unit
        pending: list[Any] = []  # comments and attributes that may belong to the next definition

        def flush_module(end: int) -> None:
            nonlocal module_start
            if module_start is not None and end >= module_start:
                body = "".join(self.lines[module_start : end + 1])
                if body.strip():
                    meta = {"kind": "module", "start_line": module_start + 1, "end_line": end + 1}
                    segments.append(Segment(body, meta))
            module_start = None

        for node in root.named_children:
            start, end = node.start_point.row, _end_row(node)
            if start <= covered:  # shares a line with the unit before: it is part of it
                continue
            if node.type in _ATTACHED:
                pending.append(node)
                continue
            definition = self.definition(node)
            if definition is None:
                if module_start is None:
                    module_start = pending[0].start_point.row if pending else start
                pending.clear()
                covered = end
                continue
            first = self.attached_start(pending, start)
            if pending and first > pending[0].start_point.row and module_start is None:
                module_start = pending[0].start_point.row  # comments not attached stay module code
            pending.clear()
            flush_module(first - 1)
            inner, kind = definition
            body = "".join(self.lines[first : end + 1])
            segments.append(Segment(body, self.meta(inner, kind, first, end)))
            covered = end
        if pending and module_start is None:
            module_start = pending[0].start_point.row
        flush_module(len(self.lines) - 1)
        return segments

    def attached_start(self, pending: list[Any], start: int) -> int:
        """The first line of the comments directly above (no blank line between) a definition."""
        first = start
        for node in reversed(pending):
            if _end_row(node) < first - 1:
                break
            first = node.start_point.row
        return first

    def definition(self, node: Any) -> tuple[Any, str] | None:
        """(the definition node, its kind), looking inside export/decorator/template wrappers."""
        inner = node
        while inner.type in _WRAPPERS:
            child = inner.child_by_field_name("declaration") or inner.child_by_field_name("definition")
            if child is None and inner.named_children:
                child = inner.named_children[-1]
            if child is None:
                return None
            inner = child
        kind = self.grammar.definitions.get(inner.type)
        if kind is None or not self.is_definition(inner):
            return None
        return inner, kind

    def is_definition(self, node: Any) -> bool:
        if node.type == "lexical_declaration":  # `const f = () => ...`, not `const x = 1`
            return any(
                (value := d.child_by_field_name("value")) is not None
                and value.type in ("arrow_function", "function_expression", "function", "class")
                for d in node.named_children
                if d.type == "variable_declarator"
            )
        if node.type in ("struct_specifier", "enum_specifier", "class_specifier"):
            return node.child_by_field_name("body") is not None  # not `struct point *p;`
        return True

    def name(self, node: Any) -> str | None:
        named = node.child_by_field_name("name")
        if node.type == "lexical_declaration":
            declarator = next(d for d in node.named_children if d.type == "variable_declarator")
            named = declarator.child_by_field_name("name")
        elif node.type == "type_declaration":  # Go: type X struct {...}
            spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
            named = spec.child_by_field_name("name") if spec is not None else None
        elif node.type == "impl_item":  # Rust: impl Trait for Type
            trait, target = node.child_by_field_name("trait"), node.child_by_field_name("type")
            if target is not None:
                return f"{self.text(trait)} for {self.text(target)}" if trait else self.text(target)
        elif node.type == "function_definition" and named is None:  # C/C++: through the declarators
            declarator = node.child_by_field_name("declarator")
            while declarator is not None and declarator.child_by_field_name("declarator") is not None:
                declarator = declarator.child_by_field_name("declarator")
            named = declarator
        if named is None:
            return None
        name = self.text(named)
        if node.type == "method_declaration" and self.language == "go":
            receiver = node.child_by_field_name("receiver")
            if receiver is not None:
                owner = self.text(receiver).strip("()").split()[-1].lstrip("*").split("[")[0]
                return f"{owner}.{name}"
        return " ".join(name.split())

    def meta(self, node: Any, kind: str, first: int, end: int) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": kind, "start_line": first + 1, "end_line": end + 1}
        symbol = self.name(node)
        if symbol:
            meta["symbol"] = symbol
        signature = self.signature(node)
        if signature:
            meta["signature"] = signature
        doc = self.docstring(node)
        if doc:
            meta["doc"] = doc
        if node.type in self.grammar.containers:
            members = self.members(node, symbol)
            if members:
                meta["members"] = members
                meta["methods"] = [m["symbol"].rsplit(".", 1)[-1] for m in members if m["kind"] == _METHOD]
        return meta

    def members(self, node: Any, owner: str | None) -> list[dict[str, Any]]:
        body = node.child_by_field_name("body")
        if body is None:
            return []
        members: list[dict[str, Any]] = []
        pending: list[Any] = []
        for child in body.named_children:
            if child.type in _ATTACHED:
                pending.append(child)
                continue
            found = self.definition(child)
            if found is None:
                pending.clear()
                continue
            inner, kind = found
            name = self.name(inner) or "?"
            members.append(
                {
                    "symbol": f"{owner}.{name}" if owner else name,
                    "kind": _METHOD if kind == _FUNCTION else kind,
                    "start_line": self.attached_start(pending, child.start_point.row) + 1,
                    "end_line": _end_row(child) + 1,
                }
            )
            pending.clear()
        return members

    def signature(self, node: Any) -> str | None:
        """`name(parameters)` for a function or method."""
        parameters = node.child_by_field_name("parameters")
        if parameters is None:
            declarator = node.child_by_field_name("declarator")
            if declarator is not None and declarator.type == "function_declarator":
                parameters = declarator.child_by_field_name("parameters")
        name = node.child_by_field_name("name")
        if parameters is None or name is None:
            return None
        return " ".join(f"{self.text(name)}{self.text(parameters)}".split())[:300]

    def docstring(self, node: Any) -> str | None:
        """A Python docstring's first paragraph (what the memory extractor is told a unit does)."""
        if self.language != "python":
            return None
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is None or first.type != "expression_statement" or not first.named_children:
            return None
        string = first.named_children[0]
        if string.type != "string":
            return None
        try:
            value = ast.literal_eval(self.text(string))
        except (ValueError, SyntaxError):
            return None
        return str(value).strip().split("\n\n", 1)[0][:500] or None if isinstance(value, str) else None


def _end_row(node: Any) -> int:
    """The last line a node is on (a node ending at column 0 ends with the line before's newline)."""
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row
