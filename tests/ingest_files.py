"""Office documents, source code, scanned PDFs and images the tests make themselves (nothing downloaded),
broken and hostile ones included."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import pymupdf
from PIL import Image, ImageDraw, ImageFont


def docx() -> bytes:
    """A Word document: a title, headings two levels deep, paragraphs, a list, and a table."""
    import docx as python_docx

    document = python_docx.Document()
    document.core_properties.title = "Operations handbook"
    document.add_heading("Operations handbook", 0)
    document.add_heading("Deploys", 1)
    document.add_paragraph("Deploys happen on Mondays after the change review.")
    document.add_paragraph("# this line is text, not a heading")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate(
        [
            ("Service", "Owner", "On call"),
            ("billing-api", "Alice Martin", "yes"),
            ("search", "Bob Stone", "no"),
        ]
    ):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Rollback", 2)
    document.add_paragraph("Redeploy the previous image tag.", style="List Bullet")
    document.add_heading("Incidents", 1)
    document.add_paragraph("Page the on-call engineer; write the postmortem within two days.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx() -> bytes:
    """A workbook of two sheets: Sales (a header row, numbers, a date) and Staff."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sales = workbook.active
    assert sales is not None
    sales.title = "Sales"
    sales.append(["Region", "Quarter", "Revenue", "Closed"])
    sales.append(["Europe", "Q1", 125000.0, dt.datetime(2025, 3, 31)])
    sales.append(["Asia", "Q1", 98000.5, dt.datetime(2025, 3, 30)])
    staff = workbook.create_sheet("Staff")
    staff.append(["Name", "Team"])
    staff.append(["Alice Martin", "Platform"])
    staff.append(["Chen Wei", "Search"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx() -> bytes:
    """A deck of two slides: bullets with speaker notes, then a table."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    assert first.shapes.title is not None
    first.shapes.title.text = "Roadmap for Q3"
    first.placeholders[1].text = "Ship hybrid search\nHire two platform engineers"
    first.notes_slide.notes_text_frame.text = "Mention the budget freeze in August."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    assert second.shapes.title is not None
    second.shapes.title.text = "Budget"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (r, c), value in {(0, 0): "Item", (0, 1): "Cost", (1, 0): "GPUs", (1, 1): "40000"}.items():
        table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def encrypted(data: bytes, password: str = "hunter2") -> bytes:  # noqa: S107 - a test file's password
    """An Office file saved with a password, as Word/Excel/PowerPoint save it (an OLE2 container)."""
    import msoffcrypto.format.ooxml

    out = io.BytesIO()
    msoffcrypto.format.ooxml.OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()


def legacy_ole(data: bytes) -> bytes:
    """An OLE2 compound file with no encryption streams, as a legacy .doc is (the encrypted container
    with its streams renamed: same length, so the directory stays valid)."""
    ole = encrypted(data)
    for old, new in (("EncryptedPackage", "WordDocumentData"), ("EncryptionInfo", "SummaryStream1")):
        ole = ole.replace(old.encode("utf-16-le"), new.encode("utf-16-le"))
    return ole


def zip_bomb(expanded_bytes: int, *, members: int = 1) -> bytes:
    """A package that looks like a .docx and expands to `expanded_bytes` of zeros."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        package.writestr("word/document.xml", "<w:document/>")
        each = expanded_bytes // members
        for index in range(members):
            package.writestr(f"word/media/image{index}.bin", b"\0" * each)
    return out.getvalue()


def many_members(count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("xl/workbook.xml", "<workbook/>")
        for index in range(count):
            package.writestr(f"x/{index}", b"")
    return out.getvalue()


def xlsx_with_sheet(sheet_xml: str) -> bytes:
    """A real workbook whose second sheet's XML is replaced (an XML entity bomb, say)."""
    source = zipfile.ZipFile(io.BytesIO(xlsx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet2.xml":
                data = sheet_xml.encode()
            package.writestr(item, data)
    return out.getvalue()


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>"""


def text_image(lines: list[str], *, size: tuple[int, int] = (1400, 500), font_size: int = 56) -> bytes:
    """A PNG of black text on white, large and clear enough for OCR."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=font_size)
    for index, line in enumerate(lines):
        draw.text((60, 60 + index * int(font_size * 1.6)), line, fill=0, font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


SCANNED_LINES = ["INVOICE 4471", "Total due 950 EUR", "Payable by March 31"]


def scanned_pdf(*, text_pages: list[str] = (), scanned_pages: int = 1, blank_pages: int = 0) -> bytes:  # type: ignore[assignment]
    """A PDF whose first pages have a text layer, then `scanned_pages` pages that are only an image of
    text (as a scanner makes them), then blank pages (no text, no image)."""
    doc = pymupdf.open()
    for text in text_pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=11)
    image = text_image(SCANNED_LINES, size=(1700, 2200), font_size=64)
    for _ in range(scanned_pages):
        page = doc.new_page()
        page.insert_image(page.rect, stream=image)
    for _ in range(blank_pages):
        doc.new_page()
    return doc.tobytes()


TYPESCRIPT = """import { Request } from "./http";

/** A cart of line items. */
export interface Line {
  sku: string;
  quantity: number;
}

export class Cart {
  private lines: Line[] = [];

  // Adds a line, merging the same SKU.
  add(line: Line): void {
    this.lines.push(line);
  }

  total(prices: Map<string, number>): number {
    return this.lines.reduce((sum, l) => sum + (prices.get(l.sku) ?? 0) * l.quantity, 0);
  }
}

export const checkout = async (cart: Cart, request: Request): Promise<string> => {
  return request.post("/checkout", cart);
};
"""

GO = """package billing

import "fmt"

// Invoice is what a customer owes.
type Invoice struct {
	Customer string
	Cents    int64
}

// Total formats the amount due.
func (i *Invoice) Total() string {
	return fmt.Sprintf("%d.%02d EUR", i.Cents/100, i.Cents%100)
}

func NewInvoice(customer string, cents int64) *Invoice {
	return &Invoice{Customer: customer, Cents: cents}
}
"""

JAVA = """package com.example.billing;

import java.util.List;

/** Sums invoices. */
public class Ledger {
    private final List<Long> amounts;

    public Ledger(List<Long> amounts) {
        this.amounts = amounts;
    }

    public long total() {
        return amounts.stream().mapToLong(Long::longValue).sum();
    }
}
"""

RUST = """use std::fmt;

/// A point on the plane.
#[derive(Debug, Clone)]
pub struct Point {
    x: f64,
    y: f64,
}

impl Point {
    pub fn norm(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

fn main() {
    println!("{}", Point { x: 3.0, y: 4.0 }.norm());
}
"""

C = """#include <stdio.h>

struct account {
    int id;
    long cents;
};

/* Adds interest in basis points. */
static long with_interest(long cents, int bps) {
    return cents + cents * bps / 10000;
}

int main(void) {
    printf("%ld\\n", with_interest(10000, 250));
    return 0;
}
"""

CPP = """#include <string>

namespace shop {

class Basket {
 public:
  void add(const std::string& sku) { items_.push_back(sku); }
  size_t size() const { return items_.size(); }

 private:
  std::vector<std::string> items_;
};

}  // namespace shop

int main() { return 0; }
"""

JAVASCRIPT = """const express = require("express");

function health(req, res) {
  res.send("ok");
}

class Router {
  route(path) {
    return path;
  }
}

module.exports = { health, Router };
"""
