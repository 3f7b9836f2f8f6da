"""The contract run's fixtures: the OpenAPI document as served, a client generated from it with
openapi-python-client (once per session), and a checker that validates every response it receives."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.contract.validation import ContractChecker

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "engram_api_client"
# openapi-python-client reads no NDJSON: as a binary body, the local export (200, JSON Lines) comes back
# as bytes and the import's body (JSON Lines) is sent as bytes (a text/plain body it does not generate).
GENERATOR_CONFIG = (
    "post_hooks: []\ncontent_type_overrides:\n  application/x-ndjson: application/octet-stream\n"
)


@pytest.fixture(scope="session")
def generated(document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client openapi-python-client generates from /openapi.json, imported."""
    root = tmp_path_factory.mktemp("generated")
    (root / "openapi.json").write_text(json.dumps(document))
    (root / "config.yaml").write_text(GENERATOR_CONFIG)
    result = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(root / "openapi.json"),
            "--output-path",
            str(root / PACKAGE),
            "--meta",
            "none",
            "--config",
            str(root / "config.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # no operation or response left out
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    _import_unset_where_used(root / PACKAGE)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _import_unset_where_used(package: Path) -> None:
    """openapi-python-client 0.29 annotates a required body of several media types (the upload: multipart
    or JSON) `| Unset` without importing Unset (openapi-python-client issue #1451, still open): the
    module fails to import. Add the import; nothing else is touched."""
    for module in (package / "api").rglob("*.py"):
        text = module.read_text()
        if "| Unset" in text and "import Unset" not in text and "Unset," not in text:
            module.write_text(
                text.replace(
                    "from ... import errors\n", "from ... import errors\nfrom ...types import Unset\n", 1
                )
            )


@pytest.fixture(scope="session")
def checker(document: dict[str, Any]) -> ContractChecker:
    return ContractChecker(document)
