"""The fuzz gate's regression corpus: requests that once broke a rule (the issue's findings, and every
example the gate has failed on), one JSON file each under corpus/, replayed by the gate before it
fuzzes and by tests/integration/test_fuzz_corpus.py in `make test`.

A file holds the request as sent (`headers` as [name, value] lines, `{key}`/`{peer_key}` standing for
the two tenants' keys; the writer's key is added when no x-api-key line is given), what found it, and
optionally `expect`: a status, or "4xx"/"2xx". Whatever it expects, the answer must not be a 5xx, must
match the OpenAPI document (a 405 instead: JSON, with Allow), and a 2xx write must store what it sent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.contract.validation import ContractChecker
from tests.gates.fuzz.hooks import KEY_HEADER, exchange_of, read_back
from tests.gates.fuzz.readback import Readback

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    name: str
    found_by: str
    method: str
    path: str  # as sent: percent-encoded, with its query string
    headers: tuple[tuple[str, str], ...]
    body: bytes
    expect: int | str | None = None

    @classmethod
    def load(cls, file: Path) -> Case:
        data = json.loads(file.read_text())
        request = data["request"]
        body = (
            base64.b64decode(request["body_base64"])
            if "body_base64" in request
            else request.get("body", "").encode("utf-8")
        )
        return cls(
            name=file.stem,
            found_by=data["found_by"],
            method=request["method"],
            path=request["path"],
            headers=tuple((name, value) for name, value in request.get("headers", [])),
            body=body,
            expect=data.get("expect"),
        )

    def to_json(self) -> str:
        request: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "headers": [list(h) for h in self.headers],
        }
        try:
            request["body"] = self.body.decode("utf-8")
        except UnicodeDecodeError:
            request["body_base64"] = base64.b64encode(self.body).decode()
        data: dict[str, Any] = {"found_by": self.found_by, "request": request}
        if self.expect is not None:
            data["expect"] = self.expect
        return json.dumps(data, indent=2, ensure_ascii=True) + "\n"

    def save(self, folder: Path = CORPUS) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / f"{self.name}.json"
        file.write_text(self.to_json())
        return file


def load_all(folder: Path = CORPUS) -> list[Case]:
    return [Case.load(file) for file in sorted(folder.glob("*.json"))]


def case_name(label: str, method: str, path: str, body: bytes) -> str:
    """A stable file name for a found example: what found it, the route, a digest of the request."""
    digest = hashlib.sha256(f"{method} {path}".encode() + b"\n" + body).hexdigest()[:10]
    route = re.sub(r"[^a-z0-9]+", "-", f"{method} {path.split('?')[0]}".lower()).strip("-")[:60]
    return f"{label}-{route}-{digest}"


def replay(
    case: Case,
    http: httpx.Client,
    key: str,
    peer_key: str | None,
    checker: ContractChecker,
    readback: Readback,
) -> list[str]:
    """What is wrong with the answer to this case now (empty: nothing)."""
    keys = {"{key}": key, "{peer_key}": peer_key or key}
    headers = [(name, keys.get(value, value)) for name, value in case.headers]
    if not any(name.lower() == KEY_HEADER for name, _ in case.headers):
        headers.append((KEY_HEADER, key))
    response = http.request(case.method, case.path, headers=headers, content=case.body)
    where = f"{case.name}: {case.method} {case.path[:120]} answered {response.status_code}"
    problems: list[str] = []
    if response.status_code >= 500:
        problems.append(f"{where}, a server error: {response.text[:300]}")
    if not _as_expected(response.status_code, case.expect):
        problems.append(f"{where}, expected {case.expect}: {response.text[:300]}")
    if response.status_code == 405:
        if "allow" not in response.headers or "error" not in _json(response):
            problems.append(f"{where} without Allow or a JSON error")
    else:
        problems += [f"{where}: {p}" for p in checker.problems(response)]
    if 200 <= response.status_code < 300:
        url, status = str(response.request.url), response.status_code
        sent = exchange_of(case.method, url, case.body, status, response.content)
        if sent is not None:
            base_url = str(http.base_url).rstrip("/")
            problems += [f"{case.name}: {p}" for p in read_back(base_url, readback, sent, key, peer_key)]
    return problems


def _as_expected(status: int, expect: int | str | None) -> bool:
    if expect is None:
        return True
    if isinstance(expect, int):
        return status == expect
    return str(status)[0] == expect[0]


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return {}
