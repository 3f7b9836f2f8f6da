"""engram_client.transfer: what an import sends, and the progress it reports while sending."""

from __future__ import annotations

import io
from collections import Counter

from engram_client.transfer import _sent
from tests import export_records as records


def test_an_import_reports_its_records_as_their_pieces_are_sent() -> None:
    # Given: an export of a header, a container, 40 memories and its end record
    lines = [records.header(version=3), records.container("c")]
    lines += [records.memory(f"fact {i}", container="c") for i in range(40)]
    lines.append({"record": "end", "counts": {"container": 1, "memory": 40}})
    data = records.jsonl(lines).encode()
    heard: list[Counter[str]] = []

    # When: it is sent in pieces of 1 KB
    sent = b""
    for piece in _sent(io.BytesIO(data), heard.append, piece_bytes=1024):
        sent += piece
        assert sum(sum(c.values()) for c in heard) <= sent.count(b"\n")  # never ahead of what was sent

    # Then: the whole file went, and progress came piece by piece, each record counted once
    assert sent == data
    assert len(heard) > 10
    assert sum(heard, Counter()) == Counter({"container": 1, "memory": 40})
