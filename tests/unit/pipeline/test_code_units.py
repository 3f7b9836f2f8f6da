"""Code cut at function, class and method boundaries by tree-sitter, per language; the language told
by the file's name or, without one, by its content; other languages read as prose or by declarations."""

from __future__ import annotations

import pytest

from engram.pipeline.chunking import chunk
from engram.pipeline.extracted import Extracted
from engram.pipeline.readers import Limits, Services, Source, identify, read
from engram.pipeline.readers.code import detect_language, language_from_content
from tests import ingest_files as files


def _read(text: str, filename: str | None) -> Extracted:
    return read(Source(text.encode(), filename, None), Limits(), Services())


def _units(extracted: Extracted) -> list[tuple[str, str | None]]:
    return [(s.meta["kind"], s.meta.get("symbol")) for s in extracted.segments]


CASES = [
    (
        "cart.ts",
        files.TYPESCRIPT,
        "typescript",
        [("module", None), ("class", "Line"), ("class", "Cart"), ("function", "checkout")],
    ),
    (
        "invoice.go",
        files.GO,
        "go",
        [("module", None), ("class", "Invoice"), ("method", "Invoice.Total"), ("function", "NewInvoice")],
    ),
    ("Ledger.java", files.JAVA, "java", [("module", None), ("class", "Ledger")]),
    (
        "point.rs",
        files.RUST,
        "rust",
        [
            ("module", None),
            ("class", "Point"),
            ("class", "Point"),
            ("class", "fmt::Display for Point"),
            ("function", "main"),
        ],
    ),
    (
        "bank.c",
        files.C,
        "c",
        [("module", None), ("class", "account"), ("function", "with_interest"), ("function", "main")],
    ),
    ("basket.hpp", files.CPP, "cpp", [("module", None), ("class", "shop"), ("function", "main")]),
    (
        "server.js",
        files.JAVASCRIPT,
        "javascript",
        [("module", None), ("function", "health"), ("class", "Router"), ("module", None)],
    ),
]


@pytest.mark.parametrize(("filename", "source", "language", "units"), CASES, ids=[c[2] for c in CASES])
def test_each_language_is_cut_at_its_definitions(
    filename: str, source: str, language: str, units: list[tuple[str, str | None]]
) -> None:
    extracted = _read(source, filename)

    assert extracted.kind == "code" and extracted.language == language
    assert _units(extracted) == units
    assert "".join(s.text for s in extracted.segments).split() == source.split()  # nothing lost
    assert all(s.meta["language"] == language and "parse_error" not in s.meta for s in extracted.segments)


def test_comments_above_a_definition_belong_to_it_and_classes_list_their_methods() -> None:
    ts = _read(files.TYPESCRIPT, "cart.ts").segments
    go = _read(files.GO, "invoice.go").segments
    java = _read(files.JAVA, "Ledger.java").segments

    assert ts[1].text.startswith("/** A cart of line items. */\nexport interface Line")
    assert go[2].text.startswith("// Total formats the amount due.\nfunc (i *Invoice) Total()")
    assert ts[2].meta["methods"] == ["add", "total"]
    assert [m["symbol"] for m in java[1].meta["members"]] == ["Ledger.Ledger", "Ledger.total"]
    add = next(m for m in ts[2].meta["members"] if m["symbol"] == "Cart.add")
    assert ts[2].text.splitlines()[add["start_line"] - ts[2].meta["start_line"]].strip() == (
        "// Adds a line, merging the same SKU."
    )
    assert go[3].meta["signature"] == "NewInvoice(customer string, cents int64)"


def test_a_class_larger_than_a_chunk_is_cut_between_its_methods() -> None:
    methods = "\n".join(
        f"  m{i}(a: number): number {{\n    const v = a * {i} + compute(a, {i});\n    return v + {i};\n  }}\n"
        for i in range(30)
    )
    extracted = _read(f"export class Big {{\n  field = 1;\n\n{methods}}}\n", "big.ts")

    chunks = chunk(extracted, target=120)

    assert len(chunks) > 3 and all(c.token_count <= 120 for c in chunks)
    starts = [c.content.lstrip().split("\n", 1)[0] for c in chunks]
    assert starts[0].startswith("export class Big")
    assert all(s.startswith("m") and s.endswith("{") for s in starts[1:])  # each opens at a method
    symbols = [name for c in chunks for name in c.metadata.get("symbols", [c.metadata["symbol"]])]
    assert symbols.count("Big.m0") == 1 and symbols.count("Big.m29") == 1
    assert chunks[-1].content.rstrip().endswith("}")


def test_the_language_is_told_by_content_when_the_name_does_not_tell() -> None:
    assert language_from_content(files.GO) == "go"
    assert language_from_content(files.RUST) == "rust"
    assert language_from_content(files.JAVA) == "java"
    assert language_from_content("#!/usr/bin/env node\nconsole.log(1)\n") == "javascript"
    assert language_from_content("<?php echo 'x';") == "php"
    assert language_from_content("We deploy on Mondays. The package main ships first.\n") is None
    assert language_from_content("# Notes\n\n```go\npackage main\nfunc main() {}\n```\n") is None
    assert detect_language("text/x-c", "api.h", "#include <vector>\nclass Api {};\n") == "cpp"
    assert detect_language("text/x-c", "api.h", "#include <stdio.h>\nint f(void);\n") == "c"
    found = identify(Source(files.GO.encode(), "Invoice", None), Limits())
    assert (found.content_type, found.family) == ("text/x-go", "code")
    plain = identify(Source(b"Deploys happen on Mondays.\n", "notes", None), Limits())
    assert (plain.content_type, plain.family) == ("text/plain", "documents")


def test_languages_without_a_grammar_fall_back() -> None:
    lua = _read("local function greet(name)\n  print('hi ' .. name)\nend\n\nreturn greet\n", "greet.lua")
    ruby = _read("class Cart\nend\n\ndef total\n  1\nend\n", "cart.rb")

    assert (lua.kind, lua.language) == ("prose", "lua")  # the prose chunker cuts it at blank lines
    assert chunk(lua, target=500)[0].metadata["kind"] == "prose"
    assert (ruby.kind, _units(ruby)) == ("code", [("class", "Cart"), ("function", "total")])


def test_code_that_does_not_parse_is_still_indexed_and_marked() -> None:
    broken = "export class Half {\n  method( {\n    return 1\n\nfunction after() { return 2; }\n"

    extracted = _read(broken, "half.ts")

    assert "".join(s.text for s in extracted.segments).split() == broken.split()
    assert all(s.meta.get("parse_error") for s in extracted.segments)
    chunks = chunk(extracted, target=500)
    assert chunks and all(c.metadata.get("parse_error") is True for c in chunks)


def test_a_module_that_does_not_parse_keeps_the_mark_on_its_chunks() -> None:
    # Found by QA: the module-level chunks (imports, constants) were built without the mark.
    extracted = _read("x = (1,\ny = [\n", "broken_mod.py")

    chunks = chunk(extracted, target=500)

    assert [c.metadata["kind"] for c in chunks] == ["module"]
    assert chunks[0].metadata["parse_error"] is True
    assert "parse_error" not in chunk(_read("x = 1\n", "fine.py"), target=500)[0].metadata
