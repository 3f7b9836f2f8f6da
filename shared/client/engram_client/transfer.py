"""Moving a tenant between deployments through their APIs: `export_to` writes a deployment's export to a
file, `import_from` loads a file into a deployment. Both work against the local stack and AWS alike:

- export: locally POST /v1/export answers the file, streamed to disk as it arrives; in AWS it answers a
  job, followed until the worker has written the file to S3, which is then downloaded from its presigned
  link.
- import: in AWS the file is uploaded to a presigned URL (`POST /v1/import?upload=true`) and the job
  followed; locally (which imports at once) the whole file is the body of one request, streamed from disk
  as it is sent, whatever its size: the local stack reads it as it arrives and imports it in one
  transaction (all or nothing). An import is idempotent, so a run that failed is simply run again.

`on_records` hears the kinds of the records moved so far (a Counter of the step), for progress bars: as they
are written for an export; as they are sent for an import locally (the server imports each as it arrives),
from the job's report in AWS.

An export of format version 3 or later ends with an `end` record that counts the records before it:
`export_to` checks the file it wrote against it (an export whose stream broke off is an error, never a
shorter file), and `import_from` checks a file before it sends any of it.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from engram_client import models
from engram_client._base import parse_answer
from engram_client.client import NDJSON, Engram
from engram_client.errors import ConflictError, EngramError, error_from_response

_KIND = re.compile(rb'^\{"record":"([a-z_]+)"')
_NOT_RECORDS = ("header", "end", "None")  # "None": a line that is no record (_kind_of)
SEND_PIECE_BYTES = 64 * 1024  # an import's body is read from disk and sent in pieces of this size
Progress = Callable[[Counter[str]], None]


class TransferError(EngramError):
    """An export or import that could not be completed (a job that failed, a file too large for the server,
    a file cut short)."""


@dataclass
class ImportSummary:
    inserted: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    job_id: str | None = None


def record_kinds(path: Path) -> Counter[str]:
    """How many records of each kind a file holds (the header left out), read from each line's start."""
    counts: Counter[str] = Counter()
    with path.open("rb") as handle:
        for line in handle:
            counts.update(_kinds([line]))
    return counts


def check_complete(path: Path) -> None:
    """TransferError unless the file at `path` is whole: a file of version 3 or later ends with its end
    record, and holds the records it counts (older versions have no end record to check)."""
    with path.open("rb") as handle:
        header = _json(handle.readline())
        if header is None or header.get("record") != "header":
            raise TransferError(f"{path} does not start with an engram export header")
        if not isinstance(header.get("version"), int) or header["version"] < 3:
            return
        counts: Counter[str] = Counter()
        last: bytes | None = None
        for line in handle:
            if not line.strip():
                continue
            if last is not None:
                counts[_kind_of(last)] += 1
            last = line
    end = _json(last) if last is not None else None
    if end is None or end.get("record") != "end":
        raise TransferError(f"{path} is incomplete: it lacks its end record", code="export_incomplete")
    if end.get("counts") != dict(counts):
        raise TransferError(
            f"{path} is incomplete or altered: its end record counts {end.get('counts')}, it holds "
            f"{dict(counts)}",
            code="export_incomplete",
        )


def _kind_of(line: bytes) -> str:
    found = _KIND.match(line)
    if found:
        return found.group(1).decode()
    return str((_json(line) or {}).get("record"))


def _json(line: bytes) -> dict[str, Any] | None:
    try:
        loaded = json.loads(line)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


# --- export ---------------------------------------------------------------------------------------------


def export_to(
    client: Engram,
    out: Path,
    *,
    container: str | None = None,
    with_files: bool = False,
    on_records: Progress | None = None,
    poll_seconds: float = 2.0,
    timeout: float = 3600.0,
) -> Counter[str]:
    """The deployment's export of this tenant, into `out`; returns the records written by kind."""
    body: dict[str, Any] = {"with_files": with_files}
    if container is not None:
        body["container"] = container
    http = client._http
    with http.stream("POST", "/v1/export", json=body, timeout=timeout) as response:
        if response.status_code == 200:
            return _save(response.iter_bytes(), out, on_records)  # streamed by the local stack
        response.read()
        if response.status_code != 202:
            raise error_from_response(response)
        job = parse_answer(models.ExportJob, response, "POST /v1/export")
    deadline = time.monotonic() + timeout
    while job.status == "running":
        if time.monotonic() > deadline:
            raise TransferError(f"export {job.id} still running after {timeout:.0f} s", code="timeout")
        time.sleep(poll_seconds)
        job = client.get_export(job.id)
    if job.status == "failed" or job.url is None:
        raise TransferError(f"export {job.id} failed: {job.error}", code="export_failed")
    with httpx.stream("GET", job.url, timeout=timeout) as download:  # presigned: no API key
        download.raise_for_status()
        return _save(download.iter_bytes(), out, on_records)


def _save(chunks: Iterator[bytes], out: Path, on_records: Progress | None) -> Counter[str]:
    """Write the body to `out` as it arrives; TransferError if it breaks off or is not whole."""
    counts: Counter[str] = Counter()

    def heard(step: Counter[str]) -> None:
        counts.update(step)
        if on_records is not None:
            on_records(step)

    with out.open("wb") as handle:
        try:
            for chunk in _counted(chunks, heard):
                handle.write(chunk)
        except httpx.TransportError as exc:  # the connection closed before the body's end
            raise TransferError(
                f"the export broke off after {handle.tell()} bytes ({exc}); {out} is incomplete",
                code="export_incomplete",
            ) from exc
    check_complete(out)
    return counts


def _counted(pieces: Iterable[bytes], on_records: Progress | None) -> Iterator[bytes]:
    """Each piece of a JSON Lines body, passed on as it comes; after each, `on_records` hears the kinds of
    the records it completed (the last line's at the end)."""
    pending = b""
    for piece in pieces:
        yield piece
        *lines, pending = (pending + piece).split(b"\n")
        step = _kinds(lines)
        if step and on_records is not None:
            on_records(step)
    step = _kinds([pending])
    if step and on_records is not None:
        on_records(step)


def _kinds(lines: list[bytes]) -> Counter[str]:
    """The kinds of the records among `lines` (the header and the end record left out)."""
    kinds = (_kind_of(line) for line in lines if line.strip())
    return Counter(kind for kind in kinds if kind not in _NOT_RECORDS)


# --- import ---------------------------------------------------------------------------------------------


def import_from(
    client: Engram,
    path: Path,
    *,
    new_ids: bool = False,
    on_records: Progress | None = None,
    poll_seconds: float = 2.0,
    timeout: float = 3600.0,
) -> ImportSummary:
    """Load the export at `path` into the client's tenant (see the module's docstring for how)."""
    check_complete(path)
    try:
        job = client.import_tenant(new_ids=new_ids, upload=True)
    except ConflictError as exc:
        if exc.code != "unsupported_here":
            raise
        return _streamed(client, path, new_ids, on_records, timeout)
    assert isinstance(job, models.ImportJob) and job.upload_url is not None
    with path.open("rb") as handle:
        uploaded = httpx.put(job.upload_url, content=handle, headers=NDJSON, timeout=timeout)
    if uploaded.status_code >= 300:
        raise TransferError(f"the upload was refused: {uploaded.status_code} {uploaded.text[:300]}")
    deadline = time.monotonic() + timeout
    while job.status in ("awaiting_upload", "running"):
        if time.monotonic() > deadline:
            raise TransferError(f"import {job.id} still running after {timeout:.0f} s", code="timeout")
        time.sleep(poll_seconds)
        job = client.get_import(job.id)
    if job.status == "failed" or job.report is None:
        raise TransferError(f"import {job.id} failed: {job.error}", code="import_failed")
    summary = ImportSummary(job_id=job.id)
    _add(summary, job.report, on_records)
    return summary


def _streamed(
    client: Engram, path: Path, new_ids: bool, on_records: Progress | None, timeout: float
) -> ImportSummary:
    """The whole file as the body of one request, read from disk as it is sent (never held whole); the
    server imports each record as it arrives, so the records sent are the progress."""
    params = {"new_ids": "true" if new_ids else "false"}
    with path.open("rb") as handle:
        response = client._http.post(
            "/v1/import", params=params, content=_sent(handle, on_records), headers=NDJSON, timeout=timeout
        )
    if response.status_code == 413:
        raise TransferError(
            f"the server refused {path} as too large ({error_from_response(response)}); a server that takes "
            "an import of any size streams it: update it, or import the file on the server (engram import "
            "FILE --tenant NAME)",
            code="payload_too_large",
        )
    if response.status_code != 200:
        raise error_from_response(response)
    summary = ImportSummary()
    report = parse_answer(models.ImportReport, response, "POST /v1/import")
    _add(summary, report, None)  # heard as it was sent
    return summary


def _sent(
    handle: BinaryIO, on_records: Progress | None, piece_bytes: int = SEND_PIECE_BYTES
) -> Iterator[bytes]:
    """The file in pieces as they are sent; `on_records` hears the kinds of the records each completes."""
    return _counted(iter(lambda: handle.read(piece_bytes), b""), on_records)


def _add(summary: ImportSummary, report: models.ImportReport, on_records: Progress | None) -> None:
    inserted, skipped = Counter(report.inserted), Counter(report.skipped)
    summary.inserted.update(inserted)
    summary.skipped.update(skipped)
    if on_records is not None:
        on_records(inserted + skipped)
