"""Source code: language detection, and one segment per function, class or module-level block.

Python is parsed with the standard library's `ast`, so boundaries are exact (decorators and the
comments right above a definition belong to it). Other languages use top-level declaration patterns,
which is right for conventionally formatted code; anything else is one segment that the chunker cuts
at blank lines.
"""

from __future__ import annotations

import ast
import posixpath
import re

from engram.pipeline.readers.result import Extracted, Segment

LANGUAGE_BY_EXTENSION = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".scala": "scala",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".swift": "swift",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".lua": "lua",
    ".r": "r",
    ".pl": "perl",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
}
CODE_CONTENT_TYPES = {
    "python": "text/x-python",
    "javascript": "text/javascript",
    "typescript": "text/x-typescript",
    "go": "text/x-go",
    "rust": "text/x-rust",
    "java": "text/x-java",
    "kotlin": "text/x-kotlin",
    "scala": "text/x-scala",
    "ruby": "text/x-ruby",
    "php": "text/x-php",
    "csharp": "text/x-csharp",
    "c": "text/x-c",
    "cpp": "text/x-c++",
    "swift": "text/x-swift",
    "shell": "text/x-shellscript",
    "sql": "text/x-sql",
    "lua": "text/x-lua",
    "r": "text/x-r",
    "perl": "text/x-perl",
    "yaml": "application/yaml",
    "toml": "application/toml",
}
LANGUAGE_BY_CONTENT_TYPE = {v: k for k, v in CODE_CONTENT_TYPES.items()} | {
    "application/x-yaml": "yaml",
    "text/yaml": "yaml",
    "text/x-sh": "shell",
    "application/x-sh": "shell",
    "text/x-c++src": "cpp",
    "text/x-csrc": "c",
}
_SHEBANG = {
    "python": "python",
    "node": "javascript",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "ruby": "ruby",
    "perl": "perl",
    "php": "php",
}

# Top-level declarations (column 0) that start a unit, with the name in group "name".
_DECLARATIONS: dict[str, re.Pattern[str]] = {
    "javascript": re.compile(
        r"^(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:function\*?\s+(?P<name>[\w$]+)|class\s+(?P<cls>[\w$]+)"
        r"|(?:const|let|var)\s+(?P<var>[\w$]+)\s*=\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)\s*=>)"
    ),
    "go": re.compile(
        r"^(?:func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)|type\s+(?P<cls>\w+)\s+(?:struct|interface))"
    ),
    "rust": re.compile(
        r"^(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:fn\s+(?P<name>\w+)|(?:struct|enum|trait)\s+(?P<cls>\w+)"
        r"|impl(?:<[^>]*>)?\s+(?P<var>[\w:<>, ]+?)\s*(?:\{|for|where))"
    ),
    "java": re.compile(
        r"^(?:public\s+|private\s+|protected\s+|abstract\s+|final\s+|static\s+|sealed\s+)*"
        r"(?:class|interface|enum|record)\s+(?P<cls>\w+)"
    ),
    "ruby": re.compile(r"^(?:def\s+(?P<name>[\w.?!]+)|(?:class|module)\s+(?P<cls>[\w:]+))"),
    "php": re.compile(r"^(?:function\s+(?P<name>\w+)|(?:abstract\s+|final\s+)?class\s+(?P<cls>\w+))"),
    "shell": re.compile(r"^(?:function\s+(?P<name>[\w-]+)|(?P<var>[\w-]+)\s*\(\)\s*\{)"),
}
_DECLARATIONS["typescript"] = re.compile(
    _DECLARATIONS["javascript"].pattern.replace(r"class\s+", r"(?:abstract\s+)?(?:class|interface)\s+")
)
for _lang in ("kotlin", "scala", "csharp", "swift"):
    _DECLARATIONS[_lang] = _DECLARATIONS["java"]


def code_content_type(language: str) -> str:
    return CODE_CONTENT_TYPES.get(language, f"text/x-{language}")


def is_code(content_type: str) -> bool:
    return content_type in LANGUAGE_BY_CONTENT_TYPE


def detect_language(content_type: str, filename: str | None, text: str) -> str:
    ext = posixpath.splitext((filename or "").lower())[1]
    if ext in LANGUAGE_BY_EXTENSION:
        return LANGUAGE_BY_EXTENSION[ext]
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        for word, language in _SHEBANG.items():
            if re.search(rf"\b{word}[\d.]*\b", first):
                return language
    return LANGUAGE_BY_CONTENT_TYPE.get(content_type, "text")


def read_code(text: str, content_type: str, filename: str | None) -> Extracted:
    language = detect_language(content_type, filename, text)
    if language == "python":
        segments = python_units(text)
    elif language in _DECLARATIONS:
        segments = declaration_units(text, _DECLARATIONS[language])
    else:
        segments = [Segment(text, {"kind": "module", "start_line": 1, "end_line": text.count("\n") + 1})]
    for segment in segments:
        segment.meta["language"] = language
    return Extracted(
        kind="code",
        content_type=code_content_type(language),
        segments=segments,
        title=filename,
        language=language,
    )


def python_units(source: str) -> list[Segment]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        # Still worth indexing as text; the chunker cuts it at blank lines.
        return [
            Segment(
                source,
                {"kind": "module", "start_line": 1, "end_line": source.count("\n") + 1, "parse_error": True},
            )
        ]
    lines = source.splitlines(keepends=True)
    units: list[Segment] = []
    pending_start: int | None = None  # first line of module-level code not yet in a unit

    def flush_module(end: int) -> None:
        nonlocal pending_start
        if pending_start is not None and end >= pending_start:
            text = "".join(lines[pending_start - 1 : end])
            if text.strip():
                units.append(Segment(text, {"kind": "module", "start_line": pending_start, "end_line": end}))
        pending_start = None

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            # Comments directly above the definition document it.
            while start > 1 and lines[start - 2].lstrip().startswith("#"):
                start -= 1
            flush_module(start - 1)
            end = node.end_lineno or node.lineno
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            meta: dict[str, object] = {
                "kind": kind,
                "symbol": node.name,
                "start_line": start,
                "end_line": end,
            }
            doc = ast.get_docstring(node)
            if doc:
                meta["doc"] = doc.strip().split("\n\n", 1)[0][:500]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                meta["signature"] = f"{node.name}({ast.unparse(node.args)})"
            else:
                meta["methods"] = [
                    n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            units.append(Segment("".join(lines[start - 1 : end]), meta))
        elif pending_start is None:
            pending_start = node.lineno
    flush_module(len(lines))
    module_doc = ast.get_docstring(tree)
    if module_doc and units:
        units[0].meta.setdefault("module_doc", module_doc.strip().split("\n\n", 1)[0][:500])
    return units


def declaration_units(text: str, pattern: re.Pattern[str]) -> list[Segment]:
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str | None, str]] = []  # (0-based line, symbol, kind)
    for index, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        name = match.groupdict().get("name")
        cls = match.groupdict().get("cls")
        var = match.groupdict().get("var")
        begin = index
        while begin > 0 and lines[begin - 1].lstrip().startswith(("//", "/*", "*", "#", "///", "@")):
            begin -= 1
        if starts and begin <= starts[-1][0]:
            begin = index
        starts.append((begin, name or cls or var, "class" if cls else "function"))
    if not starts:
        return [Segment(text, {"kind": "module", "start_line": 1, "end_line": len(lines)})]
    segments: list[Segment] = []
    if starts[0][0] > 0:
        head = "".join(lines[: starts[0][0]])
        if head.strip():
            segments.append(Segment(head, {"kind": "module", "start_line": 1, "end_line": starts[0][0]}))
    for i, (begin, symbol, kind) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(lines)
        body = "".join(lines[begin:end])
        if body.strip():
            meta: dict[str, object] = {"kind": kind, "start_line": begin + 1, "end_line": end}
            if symbol:
                meta["symbol"] = symbol.strip()
            segments.append(Segment(body, meta))
    return segments
