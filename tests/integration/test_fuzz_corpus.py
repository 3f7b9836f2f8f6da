"""The fuzz gate's regression corpus (tests/gates/fuzz/corpus/), replayed against the local HTTP front:
every request that once broke a rule must now get no 5xx, an answer the OpenAPI document allows (the
status it expects, when it names one), and, for a 2xx write, an item that reads back as it was sent."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from engram.tenants.service import IssuedKey
from tests.contract.validation import ContractChecker
from tests.gates.fuzz.corpus import Case, load_all, replay
from tests.gates.fuzz.readback import Readback

CASES = load_all()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_corpus_case_is_answered_by_the_rules(
    case: Case, live_url: str, document: dict[str, Any], tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    with httpx.Client(base_url=live_url, timeout=60) as http:
        checker, readback = ContractChecker(document), Readback(document)
        problems = replay(case, http, tenant.plaintext, other_tenant.plaintext, checker, readback)
    assert problems == []


def test_the_corpus_holds_the_issues_findings_and_the_gates() -> None:
    names = {c.name.split("-", 1)[0] for c in CASES}
    assert {"issue14", "gate"} <= names and len(CASES) >= 20
