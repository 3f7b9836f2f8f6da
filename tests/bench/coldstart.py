"""Cold start proxies: each handler module's import time in a fresh interpreter, and package sizes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from engram.runtime import FUNCTION_ENVIRONMENT
from tests.bench.report import Figure, Target

IMPORT_TARGET_MS = 300.0  # an API handler (issue 17)
PIPELINE_IMPORT_TARGET_MS = 350.0  # a pipeline step, started by Step Functions
PACKAGE_LIMIT_MB = 250.0  # Lambda: function code plus all its layers, unzipped
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


@dataclass(frozen=True)
class ImportLine:
    self_us: int
    cumulative_us: int
    depth: int
    module: str


def parse_importtime(stderr: str) -> list[ImportLine]:
    out = []
    for line in stderr.splitlines():
        match = _LINE.match(line)
        if match:
            out.append(ImportLine(int(match[1]), int(match[2]), (len(match[3]) - 1) // 2, match[4]))
    return out


def total_ms(lines: list[ImportLine], module: str) -> float:
    """The module's cumulative import time: everything it pulled in, plus its own body."""
    for line in lines:
        if line.module == module and line.depth == 0:
            return line.cumulative_us / 1000
    raise ValueError(f"{module} not found in the -X importtime output")


def subtree(lines: list[ImportLine], module: str) -> list[ImportLine]:
    """What `module` (imported at the top level) imported: -X importtime prints a module after the
    modules it imported, so its lines run back from its own to the previous top-level line. What the
    interpreter imported before it (site, and the .pth hooks of the dev venv's editable installs
    under it) is not part of it, as it is not part of its figure."""
    end = next(i for i, line in enumerate(lines) if line.module == module and line.depth == 0)
    start = end
    while start > 0 and lines[start - 1].depth > 0:
        start -= 1
    return lines[start:end]


def heaviest(lines: list[ImportLine], n: int = 3, module: str = "handler") -> list[tuple[str, float]]:
    """The packages the handler imports directly, by cumulative time (a hint at what to make lazy)."""
    top: dict[str, float] = {}
    for line in subtree(lines, module):
        if line.depth == 1:
            name = line.module.split(".")[0]
            top[name] = top.get(name, 0.0) + line.cumulative_us / 1000
    return sorted(top.items(), key=lambda item: -item[1])[:n]


def measure_handler(repo: Path, function: str, runs: int = 5) -> tuple[float, list[tuple[str, float]]]:
    """The best of `runs` fresh interpreters, after one that writes the .pyc files (a package should
    ship them). The minimum, because on a shared machine other work only ever adds time. The
    environment is Lambda's as far as the code can tell (task root, function name, region)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("POWERTOOLS_", "ENGRAM_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        {
            "PYTHONPATH": str(repo / "shared"),
            "AWS_REGION": "us-east-1",
            "POWERTOOLS_SERVICE_NAME": "engram",
            "LAMBDA_TASK_ROOT": str(repo / "functions" / function),
            "AWS_LAMBDA_FUNCTION_NAME": function,
            **FUNCTION_ENVIRONMENT,  # as every function's (infra/functions.py)
        }
    )
    code = f"import sys; sys.path.insert(0, {str(repo / 'functions' / function)!r}); import handler"
    best: tuple[float, list[ImportLine]] | None = None
    for attempt in range(runs + 1):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"importing functions/{function}/handler.py failed:\n{result.stderr[-2000:]}")
        if attempt:
            lines = parse_importtime(result.stderr)
            total = total_ms(lines, "handler")
            if best is None or total < best[0]:
                best = (total, lines)
    assert best is not None
    return best[0], heaviest(best[1])


def import_times(repo: Path) -> list[Figure]:
    section = "cold start: handler import time (python -X importtime, fresh interpreter, best of 5)"
    figures = []
    # The API's and the maintenance functions, then the pipeline's steps (started by Step Functions,
    # so their cold start delays a document, not a request).
    handlers = [
        *sorted((repo / "functions").glob("*/handler.py")),
        *sorted((repo / "functions").glob("*/*/handler.py")),
    ]
    for path in handlers:
        function = path.parent.relative_to(repo / "functions").as_posix()
        ms, top = measure_handler(repo, function)
        note = "heaviest: " + ", ".join(f"{name} {t:.0f}" for name, t in top)
        figures.append(
            Figure(
                key=f"coldstart.import.{function}",
                section=section,
                name=f"functions/{function}",
                value=ms,
                unit="ms",
                target=Target(
                    "<=", PIPELINE_IMPORT_TARGET_MS if function.startswith("pipeline/") else IMPORT_TARGET_MS
                ),
                note=note,
            )
        )
    return figures


def package_sizes(repo: Path) -> list[Figure]:
    section = "cold start: package sizes (.build/, unzipped)"
    build = repo / ".build"
    if not build.is_dir():
        return [
            Figure(
                key="coldstart.package.total",
                section=section,
                name="function packages and layers",
                value=None,
                unit="MB",
                note="no .build/ here: run `make build` first",
            )
        ]
    from infra.build import ALL_FUNCTIONS, FUNCTION_EXTRAS  # what each function is deployed with

    figures = []
    for entry in sorted(p for p in build.iterdir() if p.is_dir()):
        size = _size_mb(entry)
        figures.append(
            Figure(
                key=f"coldstart.package.{entry.name}", section=section, name=entry.name, value=size, unit="MB"
            )
        )
    # Lambda's limit is per function: its code, the dependencies layer, and its family's extras layer (an
    # extract function has one; the sum of every extras layer bounds no function).
    layer = _size_mb(build / "layer") if (build / "layer").is_dir() else 0.0
    sizes = {
        name: _size_mb(build / "functions" / name)
        + layer
        + sum(_size_mb(build / "extras" / extra) for extra in FUNCTION_EXTRAS.get(name, ()))
        for name in ALL_FUNCTIONS
        if (build / "functions" / name).is_dir()
    }
    largest = max(sizes, key=lambda name: sizes[name])
    figures.append(
        Figure(
            key="coldstart.package.largest_function",
            section=section,
            unit="MB",
            value=sizes[largest],
            name=f"the largest function with its layers ({largest})",
            target=Target("<=", PACKAGE_LIMIT_MB),
        )
    )
    return figures


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
