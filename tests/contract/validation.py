"""Checks real responses against the OpenAPI document: the status is documented for the operation,
the media type is one it documents for that status, the body matches its schema, and documented
headers are present. Reusable: any test (the contract run, a fuzzer) that holds httpx responses can
hand them to `ContractChecker.problems` or record them with `ContractChecker.hook`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from openapi_core import Config, OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.templating.paths.finders import APICallPathFinder
from werkzeug.datastructures import Headers, ImmutableMultiDict

NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class _Request:
    host_url: str
    path: str
    method: str
    body: bytes | None
    content_type: str
    parameters: RequestParameters


@dataclass(frozen=True)
class _Response:
    status_code: int
    headers: Headers
    data: bytes | None
    content_type: str


@dataclass(frozen=True)
class Exchange:
    """One request and its response, with the operation it hit and what was wrong with the answer."""

    operation_id: str
    method: str
    path: str
    status: int
    problems: tuple[str, ...]


@dataclass
class ContractChecker:
    document: dict[str, Any]
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        # JSON Lines are text to the schema; each line is checked to be JSON below.
        config = Config(extra_media_type_deserializers={NDJSON: lambda data: data.decode("utf-8")})
        self._openapi = OpenAPI.from_dict(self.document, config=config)
        self._finder = APICallPathFinder(self._openapi.spec)

    def operation_of(self, response: httpx.Response) -> str:
        request = response.request
        url = urlsplit(str(request.url))
        found = self._finder.find(request.method.lower(), f"{url.scheme}://{url.netloc}{url.path}")
        return str(found.operation["operationId"])

    def problems(self, response: httpx.Response) -> list[str]:
        """What is wrong with this response according to the document (empty: nothing)."""
        request = response.request
        url = urlsplit(str(request.url))
        response.read()
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        wrapped_request = _Request(
            host_url=f"{url.scheme}://{url.netloc}",
            path=url.path,
            method=request.method.lower(),
            body=None,  # only the response is checked: the request names the operation
            content_type=request.headers.get("content-type", "application/json"),
            parameters=RequestParameters(
                query=ImmutableMultiDict(httpx.QueryParams(url.query).multi_items()),
                header=Headers(dict(request.headers)),
            ),
        )
        data = response.content if response.content else None
        wrapped = _Response(response.status_code, Headers(dict(response.headers)), data, content_type)
        try:
            result = self._openapi.unmarshal_response(wrapped_request, wrapped)
        except Exception as exc:  # the operation itself is not in the document
            return [f"{request.method} {url.path}: {exc}"]
        found = [_describe(error) for error in result.errors]
        if content_type == NDJSON and data:
            found += _ndjson_problems(data)
        return found

    def hook(self) -> Callable[[httpx.Response], None]:
        """An httpx response event hook that records every exchange and its problems."""

        def record(response: httpx.Response) -> None:
            url = urlsplit(str(response.request.url))
            try:
                operation = self.operation_of(response)
            except Exception:
                operation = "(undocumented)"
            self.exchanges.append(
                Exchange(
                    operation,
                    response.request.method,
                    url.path,
                    response.status_code,
                    tuple(self.problems(response)),
                )
            )

        return record

    def failures(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.problems]


def _describe(error: Exception) -> str:
    causes = getattr(error, "schema_errors", None) or getattr(error, "__cause__", None)
    if isinstance(causes, (list, tuple)):
        return f"{error}: " + "; ".join(str(getattr(c, "message", c)) for c in causes)
    return f"{error}: {causes}" if causes else str(error)


def _ndjson_problems(data: bytes) -> list[str]:
    import json

    problems = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        try:
            json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number} of the NDJSON body is not JSON: {exc}")
    return problems
