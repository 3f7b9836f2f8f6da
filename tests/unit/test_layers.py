"""The layers of the engram package (pyproject's [tool.importlinter], the README's map) hold, an upward
import breaks them, and no module imports a module that imports it back."""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.contracts.layers import LayersContract

from infra.gate.graphs import circles

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture(scope="module")
def configuration() -> dict[str, Any]:
    return read_configuration(str(PYPROJECT))


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("engram")


def _kept(configuration: dict[str, Any], graph: grimp.ImportGraph, contract_name: str) -> bool:
    (options,) = [c for c in configuration["contracts_options"] if c["name"] == contract_name]
    contract = LayersContract(
        name=contract_name, session_options=configuration["session_options"], contract_options=options
    )
    return contract.check(graph, verbose=False).kept


def _names(configuration: dict[str, Any]) -> list[str]:
    return [c["name"] for c in configuration["contracts_options"] if c["type"] == "layers"]


def test_every_layers_contract_is_kept(configuration: dict[str, Any], graph: grimp.ImportGraph) -> None:
    names = _names(configuration)

    assert len(names) == 2
    for name in names:
        assert _kept(configuration, deepcopy(graph), name), name


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("engram.settings", "engram.pipeline.steps"),  # settings once took WORK_PREFIX from the pipeline
        ("engram.documents.service", "engram.pipeline.run"),  # a service reaching into the pipeline
        ("engram.pipeline.runner", "engram.local.functions"),  # the runner's invoker is injected
        ("engram.memories.repo", "engram.memories.writer"),  # a repository calling up into the writer
        ("engram.graph.repo", "engram.graph.service"),
    ],
)
def test_an_upward_import_breaks_a_contract(
    configuration: dict[str, Any], graph: grimp.ImportGraph, importer: str, imported: str
) -> None:
    upward = deepcopy(graph)
    upward.add_import(importer=importer, imported=imported)

    assert not all(_kept(configuration, deepcopy(upward), name) for name in _names(configuration))


def test_no_module_imports_one_that_imports_it_back(graph: grimp.ImportGraph) -> None:
    assert _circles(graph) == []


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other back."""
    return circles({m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)})
