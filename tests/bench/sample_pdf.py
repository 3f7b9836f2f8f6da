"""A generated, seeded PDF of prose for the pipeline bench: an operations handbook, one chapter heading
every ten pages, a section heading on some pages, and a page full of varied sentences on every page."""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf

A4 = (595, 842)
MARGIN = 56
BODY_FONT_SIZE = 10.5
CHAPTERS = (
    "Deployments",
    "Incident response",
    "Storage and backups",
    "Access control",
    "Billing runs",
    "Search and indexing",
    "Capacity planning",
    "Audits",
    "Data retention",
    "Onboarding",
)
SECTIONS = ("Overview", "Procedure", "Known problems", "Checklist", "Who to call", "History", "Metrics")
SUBJECTS = (
    "The payments service",
    "Each regional cluster",
    "The on-call engineer",
    "A nightly batch job",
    "The ingestion queue",
    "Our storage layer",
    "The release train",
    "The audit log",
    "Every tenant",
    "The search index",
    "The billing team",
    "A failed deployment",
    "The security review board",
    "The customer support desk",
    "The reporting pipeline",
)
VERBS = (
    "writes",
    "replicates",
    "reviews",
    "rotates",
    "throttles",
    "archives",
    "validates",
    "rebuilds",
    "reports",
    "compresses",
    "pauses",
    "escalates",
    "migrates",
    "signs off",
)
OBJECTS = (
    "its snapshots to cold storage",
    "the customer's invoices",
    "expired credentials",
    "requests above the agreed quota",
    "the weekly capacity report",
    "every schema change",
    "the list of open incidents",
    "the encryption keys of each bucket",
    "stale cache entries",
    "the results of the load test",
    "the dashboards for the eu-west region",
    "the contracts that renew this quarter",
)
TAILS = (
    "before the maintenance window closes",
    "within fifteen minutes of the alert",
    "unless the change is flagged as urgent",
    "every Monday morning",
    "so that auditors can trace each change",
    "after the second reviewer approves it",
    "when traffic drops below {n} requests per second",
    "and keeps the last {n} days of history",
    "at most {n} times per hour",
    "",
)
OPENERS = ("", "", "", "However, ", "In practice, ", "As a rule, ", "Since last year, ", "By default, ")


def write_handbook(path: Path, pages: int, seed: int = 5) -> bytes:
    """Write the PDF to `path` and return its bytes. The same seed gives the same text."""
    rng = random.Random(seed)
    doc = pymupdf.open()
    # Fixed dates: the same seed gives the same bytes too.
    doc.set_metadata(
        {
            "title": f"Operations handbook ({pages} pages)",
            "author": "Engram bench",
            "creationDate": "D:20260101000000Z",
            "modDate": "D:20260101000000Z",
        }
    )
    body = pymupdf.Rect(MARGIN, MARGIN + 60, A4[0] - MARGIN, A4[1] - MARGIN - 20)
    for number in range(1, pages + 1):
        page = doc.new_page(width=A4[0], height=A4[1])
        if number % 10 == 1:
            chapter = CHAPTERS[(number // 10) % len(CHAPTERS)]
            page.insert_text((MARGIN, MARGIN + 24), f"Chapter {number // 10 + 1}: {chapter}", fontsize=18)
        elif rng.random() < 0.3:
            page.insert_text((MARGIN, MARGIN + 24), rng.choice(SECTIONS), fontsize=14, fontname="hebo")
        paragraphs = [_paragraph(rng) for _ in range(8)]
        # Fill the page: drop paragraphs until the rest fits (a failed insert writes nothing).
        while paragraphs and page.insert_textbox(body, "\n\n".join(paragraphs), fontsize=BODY_FONT_SIZE) < 0:
            paragraphs.pop()
        page.insert_text((A4[0] / 2 - 10, A4[1] - MARGIN + 10), f"- {number} -", fontsize=9)
    data: bytes = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    doc.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))


def _sentence(rng: random.Random) -> str:
    tail = rng.choice(TAILS).format(n=rng.randint(2, 90))
    opener = rng.choice(OPENERS)
    subject = rng.choice(SUBJECTS)
    if opener:
        subject = subject[0].lower() + subject[1:]
    words = [opener + subject, rng.choice(VERBS), rng.choice(OBJECTS), tail]
    return " ".join(w for w in words if w) + "."
