"""The heuristic memory extractor, the similarity linker, and how a Step Functions error becomes the
document's error."""

from __future__ import annotations

import json
import uuid

from engram.pipeline.handlers import describe_failure
from engram.pipeline.linking import LinkCandidate, LinkSubject, SimilarityLinker
from engram.pipeline.memory_extraction import ChunkInfo, DocumentInfo, HeuristicExtractor, memory_type_of
from engram.pipeline.steps import FINAL_STATUSES, STATUSES, STEPS

DOC = DocumentInfo(uuid.uuid4(), "kb", "handbook.md", "text/markdown", ["hr"])


def _chunk(content: str, **meta: object) -> ChunkInfo:
    return ChunkInfo(uuid.uuid4(), 0, content, {"kind": "prose", **meta})


def test_statements_become_memories_and_the_rest_does_not() -> None:
    chunk = _chunk(
        "# Leave\n\n[page 2]\n\nEmployees get twenty five days of paid leave per year. What about sick days? "
        "See https://intranet/leave for details. Ok.\n\n- Alice prefers to take her holidays in August."
    )

    found = HeuristicExtractor().extract(DOC, [chunk])

    assert [(m.content, m.memory_type) for m in found] == [
        ("Employees get twenty five days of paid leave per year.", "fact"),
        ("Alice prefers to take her holidays in August.", "preference"),
    ]
    meta = found[0].metadata
    assert meta["extractor"] == "heuristic" and meta["document_id"] == str(DOC.id)
    assert meta["chunk_id"] == str(chunk.id) and found[0].chunk_id == chunk.id
    assert found[0].confidence == 0.5


def test_duplicates_within_a_document_and_the_cap() -> None:
    same = _chunk("The build takes about twelve minutes on the shared runners.")
    many = _chunk(" ".join(f"Service number {i} is owned by the platform team." for i in range(20)))

    assert len(HeuristicExtractor().extract(DOC, [same, same])) == 1
    assert len(HeuristicExtractor(max_memories=5).extract(DOC, [many])) == 5


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

    found = [m.content for m in HeuristicExtractor().extract(DOC, [function, records, talk])]

    assert found == [
        "The python function `add_tax(amount)` in handbook.md: Return the amount with VAT added.",
        "name: Bob; city: Berlin",
        "name: Ann; city: Oslo",
        "spk_0 said: We will ship the new billing system in March.",
    ]


def test_memory_types() -> None:
    assert memory_type_of("Bob loves spicy food.") == "preference"
    assert memory_type_of("We need to renew the certificate before Friday.") == "task"
    assert memory_type_of("First open the console, then restart the worker.") == "procedure"
    assert memory_type_of("The office is in Lisbon.") == "fact"


def test_similarity_linker_updates_only_near_duplicates_with_other_text() -> None:
    linker = SimilarityLinker(threshold=0.9)
    subject = LinkSubject(uuid.uuid4(), "Deploys happen on Monday.")
    near = LinkCandidate(uuid.uuid4(), "Deploys happen on Friday.", 0.95)
    far = LinkCandidate(uuid.uuid4(), "Lunch is at noon.", 0.3)
    same = LinkCandidate(uuid.uuid4(), "deploys happen  on Monday.", 0.99)

    (link,) = linker.links(subject, [far, near])

    assert (link.source_id, link.target_id, link.relationship, link.confidence) == (
        subject.id,
        near.id,
        "updates",
        0.95,
    )
    assert linker.links(subject, [far]) == []
    assert linker.links(subject, [same]) == []


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
    assert [s.name for s in STEPS] == ["extract", "chunk", "embed", "llm-extract", "graph-link"]
