"""Real files the tests make themselves: PDFs with PyMuPDF, HTML, CSV, JSON, code."""

from __future__ import annotations

import pymupdf

PYTHON_SOURCE = '''"""Billing helpers."""
import decimal

RATE = decimal.Decimal("0.2")


# Tax is charged on the net amount.
def add_tax(amount):
    """Return the amount with VAT added."""
    return amount * (1 + RATE)


class Invoice:
    """An invoice with lines."""

    def __init__(self, lines):
        self.lines = lines

    def total(self):
        return sum(add_tax(line) for line in self.lines)
'''


def pdf(pages: list[str], *, password: str | None = None) -> bytes:
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=10)
    if password:
        return doc.tobytes(
            encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner"
        )
    return doc.tobytes()


def html(title: str, heading: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f"<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav>"
        f"<article><h1>{heading}</h1>{body}</article>"
        f"<footer>Copyright 2024</footer><script>var tracking = 1;</script></body></html>"
    ).encode()


def csv_people() -> bytes:
    return b"name,city,team\nAlice Martin,Paris,Platform\nBob Stone,Berlin,Data\nChen Wei,Singapore,Search\n"
