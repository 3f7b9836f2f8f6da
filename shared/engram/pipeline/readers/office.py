"""Office documents (OOXML), each read with its well-known library:

- Word (python-docx): paragraphs in order; headings (Heading 1-9, Title, or an outline level) become
  '#' lines, so the prose chunker keeps the document's heading structure; each table row is a paragraph
  of its own ("Name: Alice; City: Paris" under a header row), so a row is never cut in two.
- Excel (openpyxl): each sheet's rows become records, as a CSV's do, the first row naming the columns
  and every record carrying its sheet's name; values as Excel last computed them.
- PowerPoint (python-pptx): one section per slide ("# Slide 3: <title>"): its text, tables and notes.

An OLE2 file (encrypted, or a legacy .doc/.xls/.ppt) is refused by name, and a package that would
expand past the file-size limit as a decompression bomb, before any library parses it.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any

from engram.documents.failures import CorruptDocument, EmptyContent, PipelineFailure, TooLarge
from engram.pipeline.extracted import Extracted, Segment
from engram.pipeline.readers.packages import (
    DOCX,
    LEGACY_OFFICE,
    OLE,
    OLE_MAGIC,
    PPTX,
    XLSX,
    check_zip,
    refuse_ole,
)

OFFICE_TYPES = (DOCX, XLSX, PPTX, OLE, *LEGACY_OFFICE)
_NAMES = {DOCX: "Word document", XLSX: "Excel workbook", PPTX: "PowerPoint presentation"}
MAX_CELL_CHARS = 2000
# Lines the prose chunker would take for structure ('# heading', '[page N]'): escaped in body text.
_STRUCTURE = re.compile(r"^(#{1,6}\s|\[page \d+\]$)")
_HEADING_STYLE = re.compile(r"^heading (\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def read_office(data: bytes, content_type: str, *, max_bytes: int, max_records: int) -> Extracted:
    what = _NAMES.get(content_type, "Office file")
    if data.startswith(OLE_MAGIC) or content_type in (OLE, *LEGACY_OFFICE):
        refuse_ole(data, what)
    check_zip(data, max_bytes, what)
    try:
        if content_type == DOCX:
            return read_docx(data)
        if content_type == XLSX:
            return read_xlsx(data, max_records=max_records)
        return read_pptx(data)
    except PipelineFailure:
        raise
    except Exception as exc:  # each library has its own errors for a damaged package (KeyError, ...)
        raise CorruptDocument(f"not a readable {what}: {type(exc).__name__}: {exc}"[:500]) from None


def clean(text: str) -> str:
    """One cell's or paragraph's text on one line, its whitespace runs collapsed."""
    return " ".join(text.split())[:MAX_CELL_CHARS]


def body_line(text: str) -> str:
    return "\\" + text if _STRUCTURE.match(text) else text


def row_text(cells: list[str], header: list[str] | None) -> str:
    """A table row: "Name: Alice; City: Paris" under a header, else "Alice | Paris"."""
    if header is None:
        return " | ".join(cell for cell in cells if cell)
    pairs = []
    for index, cell in enumerate(cells):
        if cell:
            name = header[index] if index < len(header) and header[index] else f"column {index + 1}"
            pairs.append(f"{name}: {cell}")
    return "; ".join(pairs)


def table_lines(rows: list[list[str]]) -> list[str]:
    """A table's rows, each a line; the first row names the columns when it has a name in every cell and
    there are rows under it."""
    rows = [row for row in rows if any(row)]
    if not rows:
        return []
    header = rows[0] if len(rows) > 1 and all(rows[0]) else None
    body = rows[1:] if header else rows
    return [body_line(line) for line in (row_text(row, header) for row in body) if line]


# --- Word -------------------------------------------------------------------------------------


def read_docx(data: bytes) -> Extracted:
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    blocks: list[str] = []
    title = document.core_properties.title or None
    below_title = 0  # headings under a Title paragraph are one level deeper in the chunks' heading paths
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            blocks.extend(table_lines(_docx_rows(item)))
            continue
        text = item.text.strip()
        if not text:
            continue
        level = heading_level(item)
        if level is not None:
            heading = clean(text)
            is_title = item.style is not None and item.style.name == "Title"
            blocks.append(f"{'#' * (level if is_title else min(level + below_title, 6))} {heading}")
            if is_title:
                below_title = 1
            title = title or heading
        else:
            bullet = "- " if (item.style is not None and (item.style.name or "").startswith("List")) else ""
            lines = [body_line(clean(line)) for line in text.split("\n") if line.strip()]
            blocks.append(bullet + "\n".join(lines))
    text = "\n\n".join(blocks)
    return Extracted(kind="prose", content_type=DOCX, segments=[Segment(text, {})], title=title)


def heading_level(paragraph: Any) -> int | None:
    """1-6 for a heading: its style (Title, Heading N) or an outline level set on it or its style."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name == "Title":
        return 1
    named = _HEADING_STYLE.match(name)
    if named and named.group(1) != "0":
        return min(int(named.group(1)), 6)
    for element in (paragraph._p, style.element if style is not None else None):
        if element is None:
            continue
        found = element.xpath("./w:pPr/w:outlineLvl/@w:val")
        if found and str(found[0]).isdigit() and int(found[0]) < 9:  # 9 is "body text"
            return min(int(found[0]) + 1, 6)
    return None


def _docx_rows(table: Any) -> list[list[str]]:
    rows = []
    for row in table.rows:
        seen: list[Any] = []
        cells = []
        for cell in row.cells:
            if any(cell._tc is tc for tc in seen):  # a merged cell is returned once per grid column
                continue
            seen.append(cell._tc)
            cells.append(clean(cell.text))
        rows.append(cells)
    return rows


# --- Excel ------------------------------------------------------------------------------------


def read_xlsx(data: bytes, *, max_records: int) -> Extracted:
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    segments: list[Segment] = []
    sheets: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "iter_rows"):
                continue  # a chart sheet
            sheet.reset_dimensions()  # a declared A1:XFD1048576 must not pad every row to 16 384 cells
            found = 0
            for row_number, text in sheet_records(sheet.title, sheet.iter_rows(values_only=True)):
                if len(segments) >= max_records:
                    raise TooLarge(f"the workbook has more than {max_records} rows with values")
                segments.append(
                    Segment(text, {"record": len(segments) + 1, "sheet": sheet.title, "row": row_number})
                )
                found += 1
            if found:
                sheets.append(sheet.title)
    finally:
        workbook.close()
    if not segments:
        raise EmptyContent("the workbook's sheets have no cells with values")
    return Extracted(
        kind="records",
        content_type=XLSX,
        segments=segments,
        meta={"records": len(segments), "sheets": sheets},
    )


def sheet_records(sheet: str, rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, str]]:
    """(row number, "[Sheet] Column: value; ...") for each row with a value. The first such row names
    the columns when all its values are text (else columns are named by letter, and it is a record)."""
    header: list[str] | None = None
    first: tuple[int, list[str]] | None = None
    for number, row in enumerate(rows, start=1):
        cells = [cell_text(value) for value in row]
        if not any(cells):
            continue
        if header is None:
            if all(isinstance(v, str) for v in row if v is not None and v != "") and first is None:
                header, first = cells, (number, cells)
                continue
            header = [column_letter(i) for i in range(len(cells))]
        yield number, f"[{sheet}] {_pairs(header, cells)}"
        first = None
    if first is not None:  # a sheet of one row: that row is its content
        yield first[0], f"[{sheet}] " + " | ".join(cell for cell in first[1] if cell)


def _pairs(header: list[str], cells: list[str]) -> str:
    pairs = []
    for index, cell in enumerate(cells):
        if cell:
            name = header[index] if index < len(header) and header[index] else column_letter(index)
            pairs.append(f"{name}: {cell}")
    return "; ".join(pairs)


def column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return clean(str(value))


# --- PowerPoint -------------------------------------------------------------------------------


def read_pptx(data: bytes) -> Extracted:
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    segments: list[Segment] = []
    title = presentation.core_properties.title or None
    for number, slide in enumerate(presentation.slides, start=1):
        heading_shape = slide.shapes.title
        heading = clean(heading_shape.text_frame.text) if heading_shape is not None else ""
        blocks = [f"# Slide {number}: {heading}" if heading else f"# Slide {number}"]
        for shape in _shapes(slide.shapes):
            if heading_shape is not None and shape.shape_id == heading_shape.shape_id:
                continue
            blocks.extend(_shape_blocks(shape))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = [clean(p.text) for p in slide.notes_slide.notes_text_frame.paragraphs if p.text.strip()]
            if notes:
                blocks.append("Notes: " + body_line(" ".join(notes)))
        title = title or heading or None
        segments.append(Segment("\n\n".join(blocks) + "\n", {"slide": number}))
    if not segments:
        raise EmptyContent("the presentation has no slides")
    return Extracted(
        kind="prose", content_type=PPTX, segments=segments, title=title, meta={"slides": len(segments)}
    )


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Every shape, those inside groups too, in the slide's order."""
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _shape_blocks(shape: Any) -> list[str]:
    if getattr(shape, "has_table", False):
        rows = [[clean(cell.text) for cell in row.cells] for row in shape.table.rows]
        return table_lines(rows)
    if not getattr(shape, "has_text_frame", False):
        return []
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = clean(paragraph.text)
        if text:
            lines.append(("  " * paragraph.level + "- " if paragraph.level else "") + body_line(text))
    return ["\n".join(lines)] if lines else []
