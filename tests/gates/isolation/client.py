"""One tenant's HTTP client, and the request the probe replays."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # with its path parameters filled in
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    files: dict[str, Any] | None = None  # multipart upload
    data: dict[str, str] | None = None  # multipart fields
    headers: dict[str, str] = field(default_factory=dict)  # besides the key (If-Match)
    content: str | None = None  # a body sent as it is (the import's JSON Lines)

    @property
    def url(self) -> str:
        return f"{self.path}?{urlencode(self.query)}" if self.query else self.path

    def text(self) -> str:
        """Everything the request says, as the probe compares it with the answer."""
        sent = [self.method, self.path, *self.query.values()]
        if self.body is not None:
            sent.append(json.dumps(self.body))
        if self.content is not None:
            sent.append(self.content)
        sent.extend((self.data or {}).values())
        sent.extend(self.headers.values())
        return " ".join(sent)


@dataclass
class Answer:
    status: int
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


class TenantClient:
    def __init__(self, base_url: str, key: str) -> None:
        self.key = key
        self.http = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=120)

    def send(self, call: Call) -> Answer:
        if call.files is not None:
            response = self.http.request(
                call.method, call.url, files=call.files, data=call.data, headers=call.headers
            )
        elif call.content is not None:
            response = self.http.request(call.method, call.url, content=call.content, headers=call.headers)
        else:
            response = self.http.request(
                call.method, call.url, json=call.body if call.body is not None else None, headers=call.headers
            )
        return Answer(response.status_code, response.text)

    def ok(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        """A call this tenant makes on its own data: it must succeed."""
        answer = self.send(Call(method, path, {k: str(v) for k, v in query.items() if v is not None}, body))
        if not 200 <= answer.status < 300:
            raise RuntimeError(f"{method} {path} {query} -> {answer.status}: {answer.text[:500]}")
        return answer.json

    def close(self) -> None:
        self.http.close()
