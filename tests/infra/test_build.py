"""`make build`: function assets (offline), the layers' locks in layers/ (hashes, in step with
pyproject.toml), the RDS CA bundle, and the built layers (checked whenever they were built; the deploy
gate, `make check-deploy`, builds them and sets ENGRAM_REQUIRE_BUILT so that these cannot be skipped)."""

from __future__ import annotations

import os
import re
import struct
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509
from packaging.requirements import Requirement

from infra.build import (
    ALL_FUNCTIONS,
    EXTRAS,
    FUNCTION_EXTRAS,
    LAYER_CA_BUNDLE,
    RDS_CA_BUNDLE,
    RUNTIME_PROVIDED,
    Assets,
    build_functions,
    extra_requirements,
    layer_requirements,
    lock_file,
    prune,
    unzipped_size,
)

EM_AARCH64 = 183
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)")


def _locked(layer: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from a lock written by `make lock-layers`."""
    locked: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in lock_file(layer).read_text().splitlines():
        match = _PIN.match(line)
        if match:
            current = match.group(1).lower().replace("_", "-")
            locked[current] = (match.group(2), [])
        elif "--hash=sha256:" in line and current:
            locked[current][1].append(line.strip().removesuffix("\\").strip())
    return locked


def _built() -> Assets:
    assets = Assets.in_build_dir()
    if not assets.layer_built:
        if os.environ.get("ENGRAM_REQUIRE_BUILT"):
            pytest.fail("the layers are not built: run `make build`")
        pytest.skip("no layers: run `make build` (needs PyPI once)")
    return assets


def test_each_function_asset_holds_its_handler_and_the_engram_package(tmp_path: Path) -> None:
    built = build_functions(tmp_path)
    names = [str(p.relative_to(tmp_path / "functions")) for p in built]
    assert names == list(ALL_FUNCTIONS)
    assert {"cleanup", "export_worker", "pipeline/extract", "pipeline/trigger", "pipeline/sweeper"} <= set(
        names
    )
    on_disk = {str(h.parent.relative_to("functions")) for h in Path("functions").rglob("handler.py")}
    assert set(names) == on_disk, "every function folder is packaged"
    for name, path in zip(names, built, strict=True):
        assert (path / "handler.py").read_text() == (Path("functions") / name / "handler.py").read_text()
        assert (path / "engram" / "settings.py").is_file()
        assert not list(path.rglob("__pycache__"))
    assert (tmp_path / "functions" / "migrate" / "migrations" / "0001_core.sql").is_file()
    assert not (tmp_path / "functions" / "health" / "migrations").exists()


@pytest.mark.parametrize("layer", ["dependencies", *EXTRAS])
def test_every_locked_package_is_pinned_with_hashes_and_none_the_runtime_provides(layer: str) -> None:
    locked = _locked(layer)
    assert locked
    for name, (version, hashes) in locked.items():
        assert hashes, f"{name}=={version} has no hash: run `make lock-layers`"
    assert not set(locked) & set(RUNTIME_PROVIDED)


@pytest.mark.parametrize(
    ("layer", "requirements"),
    [
        ("dependencies", layer_requirements),
        *((extra, lambda e=extra: extra_requirements(e)) for extra in EXTRAS),
    ],
)
def test_the_locks_satisfy_pyproject(layer: str, requirements: object) -> None:
    """A dependency added or changed in pyproject.toml without `make lock-layers` fails here."""
    locked = _locked(layer)
    assert callable(requirements)
    for line in requirements():
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in locked, f"{name} is not in {lock_file(layer)}: run `make lock-layers`"
        assert requirement.specifier.contains(locked[name][0], prereleases=True), (name, locked[name][0])


def test_the_extractors_lock_agrees_with_the_dependencies_lock() -> None:
    base = _locked("dependencies")
    for extra in EXTRAS:
        for name, (version, _) in _locked(extra).items():
            if name in base:
                assert version == base[name][0], (extra, name)  # one version in /opt/python


def test_the_rds_ca_bundle_holds_current_rds_and_amazon_roots() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one RDS CA has a non-positive serial number
        certs = x509.load_pem_x509_certificates(RDS_CA_BUNDLE.read_bytes())
    subjects = [c.subject.rfc4514_string() for c in certs]
    now = datetime.now(UTC)
    assert all(c.not_valid_after_utc > now for c in certs), "expired certificates: run `make rds-ca-bundle`"
    assert any("CN=Amazon Root CA 1" in s for s in subjects), "RDS Proxy's certificates chain to it"
    for region in ("us-east-1", "eu-west-1", "ap-southeast-2"):
        assert any(f"Amazon RDS {region} Root CA RSA2048 G1" in s for s in subjects), region
    for cert in certs:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        assert constraints.ca, cert.subject


def test_prune_drops_test_suites_headers_and_stubs_only(tmp_path: Path) -> None:
    for path in (
        "pkg/__init__.py",
        "pkg/tests/test_x.py",
        "pkg/_core/include/a.h",
        "pkg/a.pyi",
        "tests/x.py",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    prune(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["pkg/__init__.py", "tests/x.py"]  # a top-level package named tests is left alone


def test_each_extract_function_gets_only_its_familys_group_as_its_own_layer() -> None:
    assert FUNCTION_EXTRAS == {
        "pipeline/extract": ("extractors",),
        "pipeline/extract_office": ("office",),
        "pipeline/extract_code": ("code",),
        "pipeline/extract_media": ("media",),
    }
    groups = {extra: {Requirement(r).name for r in extra_requirements(extra)} for extra in EXTRAS}
    assert {"pymupdf", "trafilatura"} <= groups["extractors"]
    assert {"python-docx", "openpyxl", "python-pptx"} <= groups["office"]
    assert {"tree-sitter", "tree-sitter-typescript", "tree-sitter-go"} <= groups["code"]
    assert groups["media"] == {"pillow"}
    # The documents function's layer no longer carries what only another family reads.
    assert not groups["extractors"] & (groups["office"] | groups["code"] | groups["media"])


def test_every_function_with_its_layers_fits_lambdas_250_mb() -> None:
    assets = _built()
    for function in ALL_FUNCTIONS:
        code = Path("shared") / "engram"  # what build_functions copies, plus a handler
        layers = [assets.layer, *(assets.extra_layer(extra) for extra in FUNCTION_EXTRAS.get(function, ()))]
        size = unzipped_size(code, *layers)
        assert size < LAMBDA_UNZIPPED_LIMIT, (function, f"{size / 2**20:.1f} MiB")


def test_built_extras_layers_hold_only_what_the_dependencies_layer_lacks() -> None:
    assets = _built()
    base = {entry.name for entry in (assets.layer / "python").iterdir()}
    for extra in EXTRAS:
        python = assets.extra_layer(extra) / "python"
        assert not base & {entry.name for entry in python.iterdir()}, extra
        package = {"extractors": "pymupdf", "office": "docx", "code": "tree_sitter", "media": "PIL"}[extra]
        assert (python / package).is_dir(), extra
        assert {_elf_machine(path) for path in python.rglob("*.so")} == {EM_AARCH64}
        assert not [p for p in python.rglob("tests") if p.is_dir() and p.parent != python]


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return int(struct.unpack("<H", header[18:20])[0])


def test_built_layer_is_aarch64_cp312_without_boto_with_the_ca_bundle() -> None:
    assets = _built()
    python = assets.layer / "python"
    for provided in ("boto3", "botocore", "s3transfer"):
        assert not (python / provided).exists(), provided
    extensions = list(python.rglob("*.so"))
    assert extensions
    assert {_elf_machine(path) for path in extensions} == {EM_AARCH64}
    assert list(python.glob("pydantic_core/_pydantic_core.cpython-312-aarch64-linux-gnu.so"))
    assert (assets.layer / LAYER_CA_BUNDLE).read_bytes() == RDS_CA_BUNDLE.read_bytes()
    locked = _locked("dependencies")
    for dist in python.glob("*.dist-info"):  # exactly what the lock names
        name, version = dist.name.removesuffix(".dist-info").rsplit("-", 1)
        name = name.lower().replace("_", "-")
        assert locked[name][0] == version, name
