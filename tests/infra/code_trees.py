"""A small code tree for the deploy gate's code scan (infra.gate.clients): an `engram` package and
`functions/<name>/handler.py` files, written under a temporary directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_code_tree(root: Path, package: Mapping[str, str], handlers: Mapping[str, str]) -> tuple[Path, Path]:
    """(functions, package): the package's files (path -> text) and each function's handler text."""
    engram = root / "engram"
    for name, text in package.items():
        (engram / name).parent.mkdir(parents=True, exist_ok=True)
        (engram / name).write_text(text)
    functions = root / "functions"
    for name, text in handlers.items():
        (functions / name).mkdir(parents=True)
        (functions / name / "handler.py").write_text(text)
    return functions, engram
