"""`make build`: the Lambda code assets and the layers, without Docker.

    .build/functions/<name>/   handler.py + the `engram` package (+ migrations/ for the migrate function);
                               <name> is e.g. `memories`, `cleanup` or `pipeline/extract`
    .build/layer/python/       the runtime dependencies, exactly as layers/dependencies/requirements.txt
                               locks them (hashes checked), as aarch64 wheels for CPython 3.12 (boto3 and
                               botocore are left out: the Lambda runtime has them)
    .build/layer/certs/        the RDS CA bundle (layers/certs/), for verify-full TLS to RDS Proxy and Aurora
    .build/extras/<extra>/python/  a layer per optional-dependencies group a function needs on top
                               (FUNCTION_EXTRAS: each extract function its family's group, e.g. PDFs
                               and HTML with `extractors`, Word/Excel/PowerPoint with `office`, locked in
                               layers/<extra>/requirements.txt), less what the dependencies layer holds

`make lock-layers` writes the locks from pyproject.toml (uv, for Lambda's platform, with hashes). What a
function never loads (test suites, C headers, type stubs) is left out of the layers. Function code needs
no network (it is copied); the layers need PyPI once. The infra tests use the real layers when present
and a small stand-in otherwise (see tests/infra/conftest.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from engram.api.routes import API_FUNCTIONS, AUTHORIZER_FUNCTION
from engram.pipeline.steps import PIPELINE_FUNCTIONS, STEPS

REPO = Path(__file__).resolve().parent.parent
BUILD_DIR = REPO / ".build"
LAYERS_DIR = REPO / "layers"
PYTHON_VERSION = "3.12"
# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34): wheels up to manylinux_2_34 load.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64")
UV_PLATFORM = "aarch64-manylinux_2_34"
RDS_CA_BUNDLE = LAYERS_DIR / "certs" / "rds-ca-bundle.pem"
LAYER_CA_BUNDLE = "certs/rds-ca-bundle.pem"  # in the dependencies layer, so /opt/certs/rds-ca-bundle.pem
# Never imported at run time: left out of the layers (directory names, and file suffixes).
PRUNED_DIRS = frozenset({"tests", "include", "mupdf-devel", "__pycache__"})
PRUNED_SUFFIXES = (".pyi", ".pyc")
# Provided by the Lambda runtime; shipping them would only add ~25 MB and version skew.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath")
MIGRATE_FUNCTION = "migrate"
ADMIN_FUNCTION = "admin"
DOCUMENTS_FUNCTION = "documents"  # the documents API: registers files and URLs, starts their runs
CLEANUP_FUNCTION = "cleanup"
# Writes what POST /v1/export asked for (engram.export.jobs), imports what was uploaded for POST /v1/import
# (engram.export.import_jobs).
EXPORT_WORKER_FUNCTION = "export_worker"
RELAY_FUNCTION = "relay"  # summaries, then change events to the bus, every minute (engram.relay)
PIPELINE_PREFIX = "pipeline/"
ALL_FUNCTIONS: tuple[str, ...] = (
    *API_FUNCTIONS,
    AUTHORIZER_FUNCTION,
    MIGRATE_FUNCTION,
    ADMIN_FUNCTION,
    CLEANUP_FUNCTION,
    EXPORT_WORKER_FUNCTION,
    RELAY_FUNCTION,
    *(PIPELINE_PREFIX + name for name in PIPELINE_FUNCTIONS),
)
# Optional-dependency groups (pyproject.toml) a function gets as an extra layer of its own: each extract
# function its family's (engram.pipeline.steps.EXTRACT_FAMILIES).
FUNCTION_EXTRAS: dict[str, tuple[str, ...]] = {
    PIPELINE_PREFIX + step.function: step.extras for step in STEPS if step.extras
}
EXTRAS: tuple[str, ...] = tuple(dict.fromkeys(e for extras in FUNCTION_EXTRAS.values() for e in extras))
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")


def _name_of(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def lock_file(layer: str) -> Path:
    """layers/<layer>/requirements.txt: "dependencies", or an extra ("extractors")."""
    return LAYERS_DIR / layer / "requirements.txt"


def layer_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The project's run-time dependencies, less what the Lambda runtime already provides."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [req for req in project["dependencies"] if _name_of(req) not in RUNTIME_PROVIDED]


def extra_requirements(extra: str, pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """One optional-dependencies group, less what the Lambda runtime already provides."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [req for req in project["optional-dependencies"][extra] if _name_of(req) not in RUNTIME_PROVIDED]


@dataclass(frozen=True)
class Assets:
    """Where the CDK app takes the Lambda code from: `functions/<name>/` and the layer (`python/` inside)."""

    functions: Path
    layer: Path
    extras: Path  # <extras>/<extra>/python: one layer per FUNCTION_EXTRAS group

    @classmethod
    def in_build_dir(cls, build_dir: Path = BUILD_DIR) -> Assets:
        return cls(build_dir / "functions", layer_dir(build_dir), extras_dir(build_dir))

    def function(self, name: str) -> Path:
        return self.functions / name

    def extra_layer(self, extra: str) -> Path:
        return self.extras / extra

    @property
    def layer_built(self) -> bool:
        return (self.layer / "python").is_dir() and all(
            (self.extra_layer(extra) / "python").is_dir() for extra in EXTRAS
        )


def function_dir(build_dir: Path, name: str) -> Path:
    return build_dir / "functions" / name


def layer_dir(build_dir: Path) -> Path:
    return build_dir / "layer"


def extras_dir(build_dir: Path) -> Path:
    return build_dir / "extras"


def build_functions(build_dir: Path = BUILD_DIR, names: tuple[str, ...] = ALL_FUNCTIONS) -> list[Path]:
    """Copy each function's handler and the shared package into its own asset directory (offline)."""
    built = []
    for name in names:
        source = REPO / "functions" / name / "handler.py"
        if not source.is_file():
            raise FileNotFoundError(f"no handler for function {name!r}: {source}")
        target = function_dir(build_dir, name)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy2(source, target / "handler.py")
        shutil.copytree(REPO / "shared" / "engram", target / "engram", ignore=_IGNORE)
        if name == MIGRATE_FUNCTION:
            shutil.copytree(REPO / "migrations", target / "migrations", ignore=_IGNORE)
        built.append(target)
    return built


def build_layer(build_dir: Path = BUILD_DIR) -> Path:
    """pip-install the locked dependencies as aarch64/CPython 3.12 wheels into layer/python, and the CA
    bundle into layer/certs."""
    target = layer_dir(build_dir) / "python"
    shutil.rmtree(layer_dir(build_dir), ignore_errors=True)
    target.mkdir(parents=True)
    _pip_install(target, lock_file("dependencies"))
    certs = layer_dir(build_dir) / LAYER_CA_BUNDLE
    certs.parent.mkdir(parents=True)
    shutil.copy2(RDS_CA_BUNDLE, certs)
    return target


def build_extra_layer(extra: str, build_dir: Path = BUILD_DIR) -> Path:
    """The group resolved together with the dependencies (so shared packages agree), then only what the
    dependencies layer does not already hold is kept: Lambda merges both layers into /opt/python."""
    base = layer_dir(build_dir) / "python"
    if not base.is_dir():
        raise FileNotFoundError(f"build the dependencies layer first: {base}")
    target = extras_dir(build_dir) / extra / "python"
    shutil.rmtree(target.parent, ignore_errors=True)
    target.mkdir(parents=True)
    _pip_install(target, lock_file(extra))  # the lock holds the dependencies too, at the same versions
    for entry in list(target.iterdir()):
        if (base / entry.name).exists():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    return target


def _pip_install(target: Path, lock: Path) -> None:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--target",
        str(target),
        *platforms,
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--only-binary=:all:",
        "--require-hashes",  # every wheel is the one the lock names
        "--no-deps",  # the lock is complete
        "-r",
        str(lock),
    ]
    subprocess.run(command, check=True)  # noqa: S603 (a fixed command line)
    for entry in list(target.iterdir()):
        package = _name_of(entry.name.split("-")[0]) if entry.suffix == ".dist-info" else _name_of(entry.name)
        if package in RUNTIME_PROVIDED or entry.name in ("bin", "__pycache__"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    prune(target)


def prune(target: Path) -> None:
    """Remove what a function never loads: packages' test suites, C headers, type stubs, bytecode."""
    for path in sorted(target.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and path.name in PRUNED_DIRS and path.parent != target:
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file() and path.name.endswith(PRUNED_SUFFIXES):
            path.unlink()


def lock_layers() -> None:
    """Resolve the layers' requirements for Lambda (aarch64, CPython 3.12, binary wheels) with hashes:
    the dependencies from pyproject.toml, then each extras group constrained to the same versions."""
    uv = Path(sys.executable).parent / "uv"
    common = [
        "--python-version",
        PYTHON_VERSION,
        "--python-platform",
        UV_PLATFORM,
        "--only-binary",
        ":all:",
        "--generate-hashes",
        "--custom-compile-command",
        "make lock-layers",
        "--quiet",
        *(arg for package in RUNTIME_PROVIDED for arg in ("--no-emit-package", package)),
    ]
    pyproject = str(REPO / "pyproject.toml")
    base = lock_file("dependencies")
    subprocess.run([str(uv), "pip", "compile", pyproject, *common, "-o", str(base)], check=True)  # noqa: S603
    for extra in EXTRAS:
        out = lock_file(extra)
        out.parent.mkdir(parents=True, exist_ok=True)
        command = [
            str(uv),
            "pip",
            "compile",
            pyproject,
            "--extra",
            extra,
            "-c",
            str(base),
            *common,
            "-o",
            str(out),
        ]
        subprocess.run(command, check=True)  # noqa: S603


def unzipped_size(*paths: Path) -> int:
    """Bytes of every file under these directories: what Lambda counts against its 250 MB."""
    return sum(f.stat().st_size for path in paths for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="build the Lambda assets into .build/")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--functions-only", action="store_true", help="no dependencies layer (offline)")
    which.add_argument(
        "--layer-only", action="store_true", help="only the dependencies and extras layers (needs PyPI)"
    )
    which.add_argument("--lock", action="store_true", help="write layers/*/requirements.txt (needs PyPI)")
    parser.add_argument("--build-dir", type=Path, default=BUILD_DIR)
    args = parser.parse_args(argv)
    if args.lock:
        lock_layers()
        return 0
    if not args.layer_only:
        for path in build_functions(args.build_dir):
            print(f"built {path}")
    if not args.functions_only:
        layer = build_layer(args.build_dir)
        size = unzipped_size(layer.parent)
        print(f"built {layer.parent} ({size / 2**20:.1f} MiB unzipped; Lambda allows 250 MiB per function)")
        for extra in EXTRAS:
            extra_layer = build_extra_layer(extra, args.build_dir)
            extra_size = unzipped_size(extra_layer)
            print(f"built {extra_layer} ({extra_size / 2**20:.1f} MiB unzipped, on top of the layer above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
