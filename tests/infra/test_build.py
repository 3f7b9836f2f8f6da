"""`make build`: function assets (offline) and the dependencies layer (checked when it was built)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from infra.build import (
    ALL_FUNCTIONS,
    EXTRAS,
    FUNCTION_EXTRAS,
    Assets,
    build_functions,
    extra_requirements,
    layer_requirements,
)

EM_AARCH64 = 183


def test_each_function_asset_holds_its_handler_and_the_engram_package(tmp_path: Path) -> None:
    built = build_functions(tmp_path)
    names = [str(p.relative_to(tmp_path / "functions")) for p in built]
    assert names == list(ALL_FUNCTIONS)
    assert {"cleanup", "pipeline/extract", "pipeline/trigger", "pipeline/sweeper"} <= set(names)
    on_disk = {str(h.parent.relative_to("functions")) for h in Path("functions").rglob("handler.py")}
    assert set(names) == on_disk, "every function folder is packaged"
    for name, path in zip(names, built, strict=True):
        assert (path / "handler.py").read_text() == (Path("functions") / name / "handler.py").read_text()
        assert (path / "engram" / "settings.py").is_file()
        assert not list(path.rglob("__pycache__"))
    assert (tmp_path / "functions" / "migrate" / "migrations" / "0001_core.sql").is_file()
    assert not (tmp_path / "functions" / "health" / "migrations").exists()


def test_layer_requirements_are_the_runtime_dependencies_without_boto3() -> None:
    requirements = layer_requirements()
    names = [r.split(">")[0].split("[")[0].split("=")[0] for r in requirements]
    assert "boto3" not in names
    assert {"psycopg", "pydantic", "aws-lambda-powertools", "pgvector"} <= set(names)


def test_the_extract_step_gets_the_extractors_group_as_its_own_layer() -> None:
    assert FUNCTION_EXTRAS == {"pipeline/extract": ("extractors",)}
    names = [r.split(">")[0].split("[")[0].split("=")[0] for r in extra_requirements("extractors")]
    assert {"pymupdf", "trafilatura"} <= set(names)


def test_built_extras_layers_hold_only_what_the_dependencies_layer_lacks() -> None:
    assets = Assets.in_build_dir()
    if not assets.layer_built:
        pytest.skip("no layers: run `make build` (needs PyPI once)")
    base = {entry.name for entry in (assets.layer / "python").iterdir()}
    for extra in EXTRAS:
        python = assets.extra_layer(extra) / "python"
        assert not base & {entry.name for entry in python.iterdir()}, extra
        assert (python / "pymupdf").is_dir() or (python / "fitz").is_dir()
        assert {_elf_machine(path) for path in python.rglob("*.so")} == {EM_AARCH64}
    for function, extras in FUNCTION_EXTRAS.items():  # Lambda's limit: code and all layers, unzipped
        parts = [assets.layer, *(assets.extra_layer(extra) for extra in extras), Path("shared") / "engram"]
        size = sum(f.stat().st_size for part in parts for f in part.rglob("*") if f.is_file())
        assert size < 250 * 1024 * 1024, (function, size)


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return int(struct.unpack("<H", header[18:20])[0])


def test_built_layer_is_aarch64_cp312_without_boto() -> None:
    assets = Assets.in_build_dir()
    if not assets.layer_built:
        pytest.skip("no dependencies layer: run `make build` (needs PyPI once)")
    python = assets.layer / "python"
    for provided in ("boto3", "botocore", "s3transfer"):
        assert not (python / provided).exists(), provided
    extensions = list(python.rglob("*.so"))
    assert extensions
    assert {_elf_machine(path) for path in extensions} == {EM_AARCH64}
    assert list(python.glob("pydantic_core/_pydantic_core.cpython-312-aarch64-linux-gnu.so"))
    size = sum(f.stat().st_size for f in python.rglob("*") if f.is_file())
    assert size < 250 * 1024 * 1024, "Lambda's limit for a function and its layers, unzipped"
