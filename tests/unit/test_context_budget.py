"""How POST /v1/context fills its budget (engram.context.service.fit): the lines ranked by relevance
(memories, facts, procedures) in order of their scores across sections, the conversation and the plan
within their shares."""

from __future__ import annotations

from engram.context.models import ContextItem, Source
from engram.context.service import SECTIONS, fit


def _ranked(source: Source, n: int, text: str, score: float) -> ContextItem:
    return ContextItem(source=source, id=f"00000000-0000-4000-8000-{n:012d}", text=text, score=score)


def _sections(**given: list[ContextItem]) -> dict[str, list[ContextItem]]:
    return {name: given.get(name, []) for name in SECTIONS}


def test_a_small_budget_keeps_the_best_scored_lines_whichever_section_they_are_in() -> None:
    # Given: barely related memories, a user fact at 0.67 and a procedure that matched exactly
    memories = [_ranked("memory", n, f"Unrelated note number {n} about the office", 0.01) for n in range(6)]
    fact = _ranked("fact", 10, "(fact) Carol lives in Porto", 0.67)
    procedure = _ranked("procedure", 11, "when booking a trip: confirm the baggage allowance", 1.0)

    # When: they are fitted in a budget that holds only some of them
    context = fit(_sections(memories=memories, facts=[fact], procedures=[procedure]), 80)

    # Then: the procedure and the fact are kept, and no omitted line scores above a kept one
    kept = {item.id for item in context.items}
    assert procedure.id in kept and fact.id in kept
    omitted = [m for m in memories if m.id not in kept]
    assert omitted and context.token_estimate <= 80
    assert max(m.score or 0 for m in omitted) <= min(item.score or 0 for item in context.items)


def test_a_top_line_longer_than_its_share_is_not_passed_over_for_lower_scored_ones() -> None:
    # Given: a long procedure that matched exactly, and two shorter memories scored lower
    procedure = _ranked("procedure", 1, "when planning a trip for Erin: ask whether she wants the train", 1.0)
    memories = [
        _ranked("memory", 2, "Erin prefers trains to planes", 0.81),
        _ranked("memory", 3, "name: Erin; city: Lisbon.", 0.61),
    ]

    # When: the budget holds the procedure, but not within the ranked lines' first share of it
    context = fit(_sections(memories=memories, procedures=[procedure]), 50)

    # Then: the procedure is kept; the memories get only what it leaves
    assert [item.id for item in context.items] == [procedure.id]
    assert context.omitted == 2


def test_sections_keep_their_order_and_each_line_its_rank() -> None:
    memories = [_ranked("memory", 1, "a memory", 0.5), _ranked("memory", 2, "another memory", 0.4)]
    procedure = _ranked("procedure", 3, "when x: y", 0.9)
    fact = _ranked("fact", 4, "(fact) z", 0.6)

    context = fit(_sections(memories=memories, facts=[fact], procedures=[procedure]), 1000)

    headings = [line for line in context.context.splitlines() if line.startswith("## ")]
    assert headings == ["## Relevant memories", "## About the user", "## Procedures that apply"]
    assert [item.id for item in context.items] == [m.id for m in memories] + [fact.id, procedure.id]
