"""`make sam-invoke FN=... EVENT=...` resolves FN to the function's logical id in the template."""

from __future__ import annotations

import pytest

from infra.sam import logical_id
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions


def test_every_function_name_resolves_to_its_logical_id(dev: Synth) -> None:
    for name, logical in engram_functions(dev).items():
        assert logical_id(dev.template, "dev", name) == logical


def test_an_unknown_function_lists_the_known_ones(dev: Synth) -> None:
    with pytest.raises(SystemExit, match=r"known: admin, authorizer, .*health.*memories.*search") as raised:
        logical_id(dev.template, "dev", "nope")
    assert "nope" in str(raised.value)
