"""Word, Excel and PowerPoint files the tests make, read into the chunker's structures; encrypted,
legacy, broken and hostile packages refused with their own error codes."""

from __future__ import annotations

import pytest

from engram.documents.failures import (
    CorruptDocument,
    DecompressionBomb,
    EmptyContent,
    EncryptedDocument,
    TooLarge,
    UnsupportedType,
)
from engram.pipeline.chunking import chunk
from engram.pipeline.extracted import Extracted
from engram.pipeline.readers import Limits, Services, Source, family_of, identify, read
from engram.pipeline.readers.office import sheet_records
from engram.pipeline.readers.packages import DOCX, PPTX, XLSX
from tests import ingest_files as files


def _read(data: bytes, filename: str | None, declared: str | None = None, **limits: int) -> Extracted:
    return read(Source(data, filename, declared), Limits(**limits), Services())


def test_office_files_are_told_from_zips_by_their_parts_whatever_their_name() -> None:
    for make, content_type in ((files.docx, DOCX), (files.xlsx, XLSX), (files.pptx, PPTX)):
        for name in (f"x.{content_type.rsplit('.', 1)[-1]}", "no-extension", "renamed.zip", None):
            found = identify(Source(make(), name, None), Limits())
            assert (found.content_type, found.family) == (content_type, "office"), name
    assert family_of("application/zip") == "documents"  # a plain ZIP is refused there, with the reason


def test_docx_headings_become_the_heading_structure_and_table_rows_stay_whole() -> None:
    extracted = _read(files.docx(), "handbook.docx")

    text = extracted.segments[0].text
    assert extracted.kind == "prose" and extracted.title == "Operations handbook"
    assert "# Operations handbook\n\n## Deploys\n\nDeploys happen on Mondays" in text
    assert "### Rollback\n\n- Redeploy the previous image tag." in text
    # each row is a paragraph of its own, named by the header row
    assert (
        "Service: billing-api; Owner: Alice Martin; On call: yes\n\nService: search; Owner: Bob Stone" in text
    )
    # body text that looks like a heading is not taken for one
    assert "\\# this line is text, not a heading" in text

    chunks = chunk(extracted, target=40, overlap=0)
    headings = [c.metadata.get("heading") for c in chunks]
    assert "Operations handbook > Deploys" in headings
    assert "Operations handbook > Deploys > Rollback" in headings
    assert headings[-1] == "Operations handbook > Incidents"
    rows = [line for c in chunks for line in c.content.split("\n") if line.startswith("Service: ")]
    assert len(rows) == 2 and all(line.endswith(("yes", "no")) for line in rows)  # never cut in two


def test_xlsx_sheets_become_records_that_keep_their_sheet_name() -> None:
    extracted = _read(files.xlsx(), "sales.xlsx")

    assert extracted.kind == "records" and extracted.meta == {"records": 4, "sheets": ["Sales", "Staff"]}
    assert [s.text for s in extracted.segments] == [
        "[Sales] Region: Europe; Quarter: Q1; Revenue: 125000; Closed: 2025-03-31",
        "[Sales] Region: Asia; Quarter: Q1; Revenue: 98000.5; Closed: 2025-03-30",
        "[Staff] Name: Alice Martin; Team: Platform",
        "[Staff] Name: Chen Wei; Team: Search",
    ]
    assert [(s.meta["sheet"], s.meta["row"]) for s in extracted.segments] == [
        ("Sales", 2),
        ("Sales", 3),
        ("Staff", 2),
        ("Staff", 3),
    ]
    (only,) = chunk(extracted, target=500)
    assert only.metadata == {"kind": "records", "records": [1, 4], "sheets": ["Sales", "Staff"]}


def test_a_sheet_without_a_text_header_is_named_by_column_letters_and_one_row_is_kept() -> None:
    numbers = list(sheet_records("Data", [(None, None), (1, 2.5, None, "x"), (3, None, None, None)]))
    lonely = list(sheet_records("Notes", [("only a title row",)]))

    assert numbers == [(2, "[Data] A: 1; B: 2.5; D: x"), (3, "[Data] A: 3")]
    assert lonely == [(1, "[Notes] only a title row")]


def test_pptx_is_one_section_per_slide_with_its_notes_and_tables() -> None:
    extracted = _read(files.pptx(), "roadmap.pptx")

    assert extracted.meta == {"slides": 2}
    first, second = extracted.segments
    assert first.meta == {"slide": 1} and second.meta == {"slide": 2}
    assert first.text.startswith("# Slide 1: Roadmap for Q3\n\n")
    assert "Ship hybrid search\nHire two platform engineers" in first.text
    assert "Notes: Mention the budget freeze in August." in first.text
    assert second.text == "# Slide 2: Budget\n\nItem: GPUs; Cost: 40000\n"
    chunks = chunk(extracted, target=60, overlap=0)
    assert [(c.metadata["heading"], c.metadata["slides"]) for c in chunks] == [
        ("Slide 1: Roadmap for Q3", [1, 1]),
        ("Slide 2: Budget", [2, 2]),
    ]


@pytest.mark.parametrize(
    ("make", "name"), [(files.docx, "a.docx"), (files.xlsx, "a.xlsx"), (files.pptx, "a.pptx")]
)
def test_password_protected_office_files_fail_as_encrypted(make: object, name: str) -> None:
    assert callable(make)
    with pytest.raises(EncryptedDocument, match="password-protected"):
        _read(files.encrypted(make()), name)


def test_legacy_binary_office_files_are_refused_with_what_to_do() -> None:
    for name in ("memo.doc", "memo.docx", "no-name"):
        with pytest.raises(UnsupportedType, match=r"legacy binary Office format .* save it as \.docx"):
            _read(files.legacy_ole(files.docx()), name)


def test_broken_office_files_fail_as_corrupt() -> None:
    whole = files.docx()
    with pytest.raises(CorruptDocument, match="not a readable ZIP package"):
        _read(whole[: len(whole) // 2], "cut.docx")
    with pytest.raises(CorruptDocument, match="not a readable ZIP package"):
        _read(b"not a zip at all", None, DOCX)
    with pytest.raises(CorruptDocument, match="not a readable Word document"):
        _read(files.zip_bomb(100), "parts-missing.docx")  # a package without Word's parts
    with pytest.raises(CorruptDocument, match="damaged"):
        _read(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 8, "garbage.doc")


def test_zip_bombs_are_refused_before_any_part_is_read() -> None:
    bomb = files.zip_bomb(5 * 1024 * 1024)
    assert len(bomb) < 20_000

    with pytest.raises(DecompressionBomb, match=r"expands to 5242[0-9]+ bytes .* decompression bomb"):
        _read(bomb, "bomb.docx", max_file_bytes=1024 * 1024)
    with pytest.raises(DecompressionBomb, match=r"holds 20002 files"):
        _read(files.many_members(20_000), "many.xlsx")


def test_an_xml_entity_bomb_in_a_sheet_is_refused() -> None:
    with pytest.raises(CorruptDocument, match="amplification"):
        _read(files.xlsx_with_sheet(files.BILLION_LAUGHS), "laughs.xlsx")


def test_workbook_limits_and_empty_files() -> None:
    with pytest.raises(TooLarge, match="more than 3 rows"):
        _read(files.xlsx(), "sales.xlsx", max_records=3)
    import io

    import openpyxl

    empty = io.BytesIO()
    openpyxl.Workbook().save(empty)
    with pytest.raises(EmptyContent, match="no cells with values"):
        _read(empty.getvalue(), "empty.xlsx")
