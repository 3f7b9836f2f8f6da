"""Chunk boundaries: headings and paragraphs for prose (about `target` tokens, with overlap), function
and class for code, whole records, speaker turns for transcripts."""

from __future__ import annotations

import itertools

from engram.pipeline.chunking import chunk
from engram.pipeline.extracted import Extracted, Segment
from engram.pipeline.readers import Limits, Services, Source, read
from engram.pipeline.tokens import count_tokens
from tests import files


def _prose(text: str, **meta: object) -> Extracted:
    return Extracted(kind="prose", content_type="text/markdown", segments=[Segment(text, dict(meta))])


def _sentences(prefix: str, n: int) -> str:
    return " ".join(f"{prefix} sentence number {i} has exactly eight words." for i in range(n))


def test_sections_start_new_chunks_at_headings() -> None:
    text = (
        f"# Intro\n\n{_sentences('Intro', 12)}\n\n## Setup\n\n{_sentences('Setup', 12)}"
        f"\n\n# Usage\n\n{_sentences('Use', 3)}"
    )

    chunks = chunk(_prose(text), target=200, overlap=20)

    assert [c.metadata.get("heading") for c in chunks] == ["Intro", "Intro > Setup", "Usage"]
    assert [c.content.split("\n", 1)[0] for c in chunks] == ["# Intro", "## Setup", "# Usage"]


def test_small_sections_share_a_chunk() -> None:
    text = "# A\n\nShort one.\n\n# B\n\nShort two.\n\n# C\n\nShort three."

    (only,) = chunk(_prose(text), target=200, overlap=20)

    assert only.content == text
    assert only.metadata["heading"] == "C"


def test_long_paragraphs_are_cut_between_sentences_near_the_target_with_overlap() -> None:
    text = _sentences("Long", 60)  # one paragraph, ~660 tokens

    chunks = chunk(_prose(text), target=150, overlap=30)

    assert len(chunks) >= 4  # 60 sentences of 9 tokens
    assert all(c.token_count <= 150 for c in chunks)
    assert all(c.token_count >= 100 for c in chunks[:-1])  # filled close to the target
    for before, after in itertools.pairwise(chunks):
        last_sentence = before.content.rsplit(". ", 1)[-1]
        assert after.content.startswith(last_sentence.rstrip("."))  # whole sentences carried over
        assert count_tokens(last_sentence) <= 30
    joined = " ".join(chunks[0].content.split())
    assert joined.startswith("Long sentence number 0 has") and all(c.content.endswith(".") for c in chunks)


def test_no_overlap_across_a_heading() -> None:
    text = f"# One\n\n{_sentences('First', 20)}\n\n# Two\n\n{_sentences('Second', 20)}"

    chunks = chunk(_prose(text), target=120, overlap=30)

    second_section = [c for c in chunks if c.metadata["heading"] == "Two"]
    assert second_section[0].content.startswith("# Two")
    assert "First" not in second_section[0].content


def test_a_sentence_longer_than_a_chunk_is_cut_at_words() -> None:
    words = " ".join(f"word{i}" for i in range(500))

    chunks = chunk(_prose(words), target=100, overlap=10)

    assert all(c.token_count <= 100 for c in chunks)
    assert " ".join(" ".join(c.content.split()) for c in chunks).count("word499") == 1


def test_pdf_chunks_record_their_pages() -> None:
    pdf = files.pdf([_sentences("Page one", 20), _sentences("Page two", 20), _sentences("Page three", 20)])
    extracted = read(Source(pdf, "a.pdf", None), Limits(), Services())

    chunks = chunk(extracted, target=150, overlap=0)

    assert chunks[0].content.startswith("[page 1]")
    assert [c.metadata["pages"] for c in chunks] == sorted(c.metadata["pages"] for c in chunks)
    assert chunks[-1].metadata["pages"][1] == 3
    assert any(c.metadata["pages"][0] < c.metadata["pages"][1] for c in chunks)  # spanning a page break
    assert all("[page" in c.content for c in chunks if c.metadata["pages"][0] != c.metadata["pages"][1])


def test_code_is_one_chunk_per_function_and_class() -> None:
    extracted = read(Source(files.PYTHON_SOURCE.encode(), "billing.py", None), Limits(), Services())

    chunks = chunk(extracted, target=500)

    assert [(c.metadata["kind"], c.metadata.get("symbol")) for c in chunks] == [
        ("module", None),
        ("function", "add_tax"),
        ("class", "Invoice"),
    ]
    assert chunks[2].content.startswith("class Invoice:") and "def total" in chunks[2].content
    assert chunks[1].metadata["doc"] == "Return the amount with VAT added."  # for the memory extractor


def test_a_function_larger_than_a_chunk_is_cut_at_blank_lines() -> None:
    body = "\n\n".join(f"    x{i} = compute({i}, {i + 1}, {i + 2})\n    y{i} = x{i} * 2" for i in range(40))
    source = f"def big():\n{body}\n    return 0\n"
    extracted = read(Source(source.encode(), "big.py", None), Limits(), Services())

    chunks = chunk(extracted, target=120)

    assert len(chunks) > 1
    assert all(c.token_count <= 120 for c in chunks)
    assert [c.metadata["part"] for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c.metadata["symbol"] == "big" for c in chunks)
    assert all(not c.content.startswith("    y") for c in chunks)  # never between the two lines of a pair
    assert chunks[0].metadata["start_line"] == 1 and chunks[1].metadata["start_line"] > 1


def test_records_are_packed_whole() -> None:
    segments = [Segment(f"name: person {i}; city: somewhere far away", {"record": i + 1}) for i in range(30)]

    chunks = chunk(Extracted(kind="records", content_type="text/csv", segments=segments), target=60)

    assert sum(c.content.count("\n") + 1 for c in chunks) == 30
    assert all(c.token_count <= 60 for c in chunks)
    assert chunks[0].metadata["records"][0] == 1 and chunks[-1].metadata["records"][1] == 30


def test_transcripts_are_cut_at_speaker_turns() -> None:
    turns = [
        ("spk_0", "Welcome everyone to the planning call for the next quarter."),
        ("spk_1", "Thanks. I want to talk about the database migration first."),
        ("spk_0", "Sure, go ahead with the migration topic."),
        ("spk_1", _sentences("Migration", 12)),
    ]
    segments = [Segment(f"{s}: {t}", {"speaker": s, "start": float(i)}) for i, (s, t) in enumerate(turns)]

    chunks = chunk(Extracted(kind="transcript", content_type="audio/wav", segments=segments), target=60)

    assert chunks[0].content.split("\n") == [f"{s}: {t}" for s, t in turns[:3]]
    assert chunks[0].metadata == {"kind": "transcript", "speakers": ["spk_0", "spk_1"], "start": 0.0}
    assert all(line.startswith("spk_1: ") for c in chunks[1:] for line in c.content.split("\n"))
    assert all(c.token_count <= 60 for c in chunks)
