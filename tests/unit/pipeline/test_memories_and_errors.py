"""The pipeline's memory extraction (chunks through engram.memory_extraction), graph-link's rules, and how a
Step Functions error becomes the document's error."""

from __future__ import annotations

import json
import uuid

from engram.graph.link_rules import LinkCandidate, LinkSubject, RuleLinker
from engram.memory_extraction import HeuristicExtractor
from engram.pipeline.document_memories import ChunkInfo, DocumentInfo, extract_memories
from engram.pipeline.finish import describe_failure
from engram.pipeline.steps import EXTRACT_FAMILIES, FINAL_STATUSES, STAGES, STATUSES, STEPS

DOC = DocumentInfo(uuid.uuid4(), "kb", "handbook.md", "text/markdown", ["hr"])


def _chunk(content: str, ordinal: int = 0, **meta: object) -> ChunkInfo:
    return ChunkInfo(uuid.uuid4(), ordinal, content, {"kind": "prose", **meta})


def _extract(chunks: list[ChunkInfo], cap: int = 500) -> list:
    return extract_memories(HeuristicExtractor(), DOC, chunks, cap).memories


def test_statements_become_memories_and_the_rest_does_not() -> None:
    chunk = _chunk(
        "# Leave\n\n[page 2]\n\nEmployees get twenty five days of paid leave per year. What about sick days? "
        "See https://intranet/leave for details. Ok.\n\n- Alice prefers to take her holidays in August."
    )

    found = _extract([chunk])

    assert [(m.content, m.memory_type) for m in found] == [
        ("Employees get twenty five days of paid leave per year.", "fact"),
        ("Alice prefers to take her holidays in August.", "preference"),
    ]
    meta = found[0].metadata
    assert meta["extractor"] == "heuristic" and meta["document_id"] == str(DOC.id)
    assert meta["chunk_id"] == str(chunk.id) and found[0].chunk_id == chunk.id
    assert found[0].confidence == 0.5
    assert found[1].subject == "Alice" and found[1].entities[0].name == "Alice"


def test_source_chunk_ordinals_map_to_the_chunk_ids() -> None:
    first = _chunk("The build takes about twelve minutes on the shared runners.", 0)
    second = _chunk("Alice lives in Paris with her two cats.", 7)

    found = _extract([first, second])

    assert [(m.chunk_id, m.metadata["chunk_ordinal"]) for m in found] == [(first.id, 0), (second.id, 7)]


def test_duplicates_within_a_document_and_the_cap() -> None:
    same = _chunk("The build takes about twelve minutes on the shared runners.")
    many = _chunk(" ".join(f"Service number {i} is owned by the platform team." for i in range(20)))

    assert len(_extract([same, _chunk(same.content, 1)])) == 1
    assert len(_extract([many], cap=5)) == 5


def test_code_records_and_transcripts_have_their_own_memories() -> None:
    function = ChunkInfo(
        uuid.uuid4(),
        1,
        "def add_tax(amount): ...",
        {
            "kind": "function",
            "symbol": "add_tax",
            "signature": "add_tax(amount)",
            "language": "python",
            "doc": "Return the amount with VAT added.",
        },
    )
    records = ChunkInfo(
        uuid.uuid4(), 2, "name: Bob; city: Berlin\nname: Ann; city: Oslo", {"kind": "records"}
    )
    talk = ChunkInfo(
        uuid.uuid4(),
        3,
        "spk_0: We will ship the new billing system in March.\nspk_1: Ok.",
        {"kind": "transcript"},
    )

    found = [m.content for m in _extract([function, records, talk])]

    assert found == [
        "The python function `add_tax(amount)` in handbook.md: Return the amount with VAT added.",
        "name: Bob; city: Berlin.",
        "name: Ann; city: Oslo.",
        "spk_0 said: We will ship the new billing system in March.",
    ]


ALICE, PARIS, BERLIN, BOB = (uuid.uuid4() for _ in range(4))


def test_updates_only_between_memories_about_one_subject() -> None:
    linker = RuleLinker(threshold=0.9)
    berlin = LinkSubject(
        uuid.uuid4(),
        "Alice moved to Berlin.",
        "fact",
        frozenset({ALICE, BERLIN}),
        frozenset({ALICE}),
        frozenset({(ALICE, "lives_in", BERLIN)}),
    )
    paris = LinkCandidate(
        uuid.uuid4(),
        "Alice lives in Paris.",
        0.4,
        frozenset({ALICE, PARIS}),
        frozenset({ALICE}),
        frozenset({(ALICE, "lives_in", PARIS)}),
    )
    bob_in_paris = LinkCandidate(
        uuid.uuid4(),
        "Bob lives in Paris.",
        0.6,
        frozenset({BOB, PARIS}),
        frozenset({BOB}),
        frozenset({(BOB, "lives_in", PARIS)}),
    )
    near_no_subject = LinkCandidate(uuid.uuid4(), "Someone moved to Berlin.", 0.95)
    same_text = LinkCandidate(uuid.uuid4(), "alice moved to  Berlin.", 0.99, subjects=frozenset({ALICE}))

    links = {
        link.target_id: link.relationship
        for link in linker.links(berlin, [paris, bob_in_paris, near_no_subject, same_text])
    }

    assert links == {paris.id: "updates", near_no_subject.id: "extends"}


def test_insights_derive_and_a_shared_subject_without_conflict_extends() -> None:
    linker = RuleLinker(threshold=0.9)
    likes = LinkCandidate(uuid.uuid4(), "Alice likes tea.", 0.3, frozenset({ALICE}), frozenset({ALICE}))
    insight = LinkSubject(uuid.uuid4(), "Alice seems to prefer calm places.", "insight", frozenset({ALICE}))
    fact = LinkSubject(uuid.uuid4(), "Alice plays chess.", "fact", frozenset({ALICE}), frozenset({ALICE}))

    assert [link.relationship for link in linker.links(insight, [likes])] == ["derives"]
    assert [link.relationship for link in linker.links(fact, [likes])] == ["extends"]


def _cause(message: str, name: str) -> str:
    return json.dumps({"errorMessage": message, "errorType": name, "stackTrace": ["..."]})


def test_step_functions_errors_become_clear_document_errors() -> None:
    assert describe_failure(
        "extract", {"Error": "EmptyContent", "Cause": _cause("the file is empty", "EmptyContent")}
    ) == ("empty_content", "extract: the file is empty")
    assert describe_failure("embed", {"Error": "States.Timeout", "Cause": ""}) == (
        "timeout",
        "embed: the step took longer than its time limit",
    )
    lambda_timeout = _cause("Task timed out after 600.00 seconds", "Sandbox.Timedout")
    assert describe_failure("embed", {"Error": "Sandbox.Timedout", "Cause": lambda_timeout}) == (
        "timeout",
        "embed: the step took longer than its time limit",
    )
    assert describe_failure("chunk", {"Error": "Lambda.ServiceException", "Cause": "boom"}) == (
        "unavailable",
        "chunk: still failing after retries (Lambda.ServiceException: boom)",
    )
    code, message = describe_failure("graph-link", {"Error": "KeyError", "Cause": _cause("'x'", "KeyError")})
    assert code == "internal_error" and "'x'" not in message and "KeyError" in message
    assert describe_failure(None, None)[0] == "internal_error"


def test_statuses_follow_the_step_list() -> None:
    assert STATUSES == ("queued", "extracting", "chunking", "embedding", "indexing", "done", "failed")
    assert FINAL_STATUSES == ("done", "failed")
    assert [s.name for s in STAGES] == ["detect", "extract", "chunk", "embed", "llm-extract", "graph-link"]
    # Each family's extract function is the step "extract", whatever function runs it.
    assert [s.name for s in STEPS if s.name == "extract"] == ["extract"] * len(EXTRACT_FAMILIES)
    assert {s.status for s in STEPS if s.name in ("detect", "extract")} == {"extracting"}
