"""Source code: language detection, and one segment per function, class or module-level block.

Languages with a tree-sitter grammar here (engram.pipeline.readers.syntax: Python, JavaScript,
TypeScript/TSX, Go, Java, Rust, C, C++) are parsed, so units follow the syntax: comments and decorators
right above a definition belong to it, and a class (impl, namespace, ...) lists its methods' lines so
the chunker can cut a large one between methods. A few more (Ruby, PHP, shell, Kotlin, Scala, C#,
Swift) are cut at top-level declaration patterns; any other language is read as prose.
"""

from __future__ import annotations

import posixpath
import re

from engram.pipeline.extracted import Extracted, Segment

LANGUAGE_BY_EXTENSION = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
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
    ".h": "c",  # or C++: the content decides (header_language)
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
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


# Content that says its language for files without a telling name: a line each of two kinds, at the
# start of a line (so prose that mentions code does not qualify).
_CONTENT_SIGNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "go": (re.compile(r"^package \w+\s*$", re.M), re.compile(r"^func (\([^)]*\) )?\w+\(", re.M)),
    "rust": (
        re.compile(r"^(pub )?(fn|struct|enum|trait|impl|mod) ", re.M),
        re.compile(r"^use \w+(::\w+)+", re.M),
    ),
    "java": (
        re.compile(r"^package [\w.]+;\s*$", re.M),
        re.compile(r"^(public |final |abstract )*(class|interface|enum|record) \w+", re.M),
    ),
    "python": (
        re.compile(r"^(import \w+|from [\w.]+ import )", re.M),
        re.compile(r"^(async def|def|class) \w+.*:\s*$", re.M),
    ),
    "typescript": (
        re.compile(r"^(import .+ from ['\"]|export )", re.M),
        re.compile(r"^(export )?(interface|type) \w+.*[={]", re.M),
    ),
    "javascript": (
        re.compile(r"^(import .+ from ['\"]|const \w+ = require\(|export )", re.M),
        re.compile(r"^(export )?(default )?(async )?(function|class) \w*", re.M),
    ),
    "cpp": (
        re.compile(r"^#include [<\"]", re.M),
        re.compile(r"^(namespace \w+|class \w+|template ?<|using namespace )", re.M),
    ),
    "c": (re.compile(r"^#include [<\"]", re.M), re.compile(r"^[\w][\w \t*]*\b\w+\([^;]*\)\s*\{?\s*$", re.M)),
}
_CPP_IN_HEADER = re.compile(
    r"^\s*(class \w+|namespace \w+|template ?<|public:|private:|using namespace )|std::", re.M
)


def language_from_content(text: str) -> str | None:
    """The language of code with no telling file name: a shebang, `<?php`, or two kinds of line that
    only that language's source has. None for prose (Markdown with code fences included)."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        for word, language in _SHEBANG.items():
            if re.search(rf"\b{word}[\d.]*\b", first):
                return language
        return None
    if text.lstrip().startswith("<?php"):
        return "php"
    if "```" in text:
        return None
    for language, signs in _CONTENT_SIGNS.items():
        if all(sign.search(text) for sign in signs):
            return language
    return None


def header_language(text: str) -> str:
    """A .h file is C unless it holds C++ (classes, namespaces, templates, std::)."""
    return "cpp" if _CPP_IN_HEADER.search(text) else "c"


def detect_language(content_type: str, filename: str | None, text: str) -> str:
    ext = posixpath.splitext((filename or "").lower())[1]
    if ext == ".h":
        return header_language(text)
    if ext in LANGUAGE_BY_EXTENSION:
        return LANGUAGE_BY_EXTENSION[ext]
    by_type = LANGUAGE_BY_CONTENT_TYPE.get(content_type)
    return by_type or language_from_content(text) or "text"


def read_code(text: str, content_type: str, filename: str | None) -> Extracted:
    from engram.pipeline.readers.syntax import syntax_units

    language = detect_language(content_type, filename, text)
    if language == "typescript" and (filename or "").lower().endswith(".tsx"):
        segments = syntax_units(text, "tsx")
    else:
        segments = syntax_units(text, language)
    if segments is None and language in _DECLARATIONS:
        segments = declaration_units(text, _DECLARATIONS[language])
    if segments is None:
        # No grammar and no declaration pattern: the prose chunker cuts it at blank lines.
        return Extracted(
            kind="prose",
            content_type=code_content_type(language),
            segments=[Segment(text, {"language": language})],
            title=filename,
            language=language,
        )
    for segment in segments:
        segment.meta["language"] = language
    return Extracted(
        kind="code",
        content_type=code_content_type(language),
        segments=segments,
        title=filename,
        language=language,
    )


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
