"""The HTTP core under `Engram` and `AsyncEngram`: configuration, one request per operation, retries
with backoff, answers parsed into models and errors into exceptions.

Retries. A connection that could not be opened is retried for every call (nothing was sent: httpx's
transport retries). A 429, 502, 503 or 504, or a connection that broke after the request went out,
is retried only for calls that change nothing when repeated (reads, PUT, DELETE, searches, upserts by
key), with exponential backoff and full jitter, honouring Retry-After. Anything else is raised at once.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from engram_client.errors import (
    APIConnectionError,
    ConfigurationError,
    IngestionFailed,
    InvalidInputError,
    WaitTimeout,
    error_from_response,
)

DEFAULT_URL = "http://127.0.0.1:8080"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
USER_AGENT = "engram-client/0.1.0"


class NotGiven:
    """The default of an optional argument: it is not sent, so the server's default applies (None
    is a value some fields take: it clears them)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


def given(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not NOT_GIVEN}


@dataclass(frozen=True)
class Operation:
    """One API operation: where it goes, what its success answers hold, whether it may be repeated."""

    method: str
    path: str
    responses: Mapping[int, Any]  # status -> the type its body parses into (None: no body; str: text)
    idempotent: bool


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff: float = 0.5  # seconds before the first retry (at most; full jitter)
    max_backoff: float = 8.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff * 4)
            except ValueError:
                pass  # an HTTP date: fall back to backoff
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)  # jitter: retries of many clients spread out


@dataclass(frozen=True)
class Settings:
    base_url: str
    api_key: str
    timeout: float
    retry: RetryPolicy
    headers: Mapping[str, str] = field(default_factory=dict)


def settings_from(
    base_url: str | None,
    api_key: str | None,
    *,
    timeout: float,
    max_retries: int,
    headers: Mapping[str, str] | None,
) -> Settings:
    """Arguments first, then ENGRAM_URL / ENGRAM_API_KEY. Only an api_key of None is taken from the
    environment: an empty one is refused (a tenant's key that is missing must not become another's)."""
    url = (base_url or os.environ.get("ENGRAM_URL") or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("ENGRAM_API_KEY")
    source = "api_key" if api_key is not None else "ENGRAM_API_KEY"
    if not key:
        given_empty = "api_key is empty" if api_key is not None else "no API key"
        raise ConfigurationError(
            f"{given_empty}: pass api_key=... or (with api_key=None) set ENGRAM_API_KEY (`make local` "
            "prints the dev key)",
            code="missing_api_key",
        )
    check_api_key(key, source)
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"base_url must be an http(s) URL, not {url!r}", code="invalid_base_url")
    return Settings(url, key, timeout, RetryPolicy(max_retries=max_retries), dict(headers or {}))


def check_api_key(key: str, source: str) -> None:
    """ConfigurationError unless `key` can be sent as a header value: printable ASCII, no space. The
    error never shows the key (HTTP libraries put a refused header value in their message)."""
    for position, character in enumerate(key):
        if not 0x21 <= ord(character) <= 0x7E:
            raise ConfigurationError(
                f"the API key ({source}) holds {_named(character)} at position {position + 1} of "
                f"{len(key)}, which an HTTP header cannot carry: check it was copied whole and alone "
                "(a line break read from a file?)",
                code="invalid_api_key",
            )


def _named(character: str) -> str:
    names = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
    return names.get(character) or f"the character U+{ord(character):04X}"


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


class _Core:
    settings: Settings

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.settings.api_key, "User-Agent": USER_AGENT, **self.settings.headers}

    @staticmethod
    def _url(operation: Operation, path: Mapping[str, Any]) -> str:
        url = operation.path
        for name, value in path.items():
            url = url.replace("{" + name + "}", path_segment(name, value))
        return url

    @staticmethod
    def _query(query: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in query.items():
            if value is None or value is NOT_GIVEN:
                continue
            out[name] = str(value).lower() if isinstance(value, bool) else to_jsonable_python(value)
        return out

    @staticmethod
    def _retryable_status(response: httpx.Response) -> bool:
        return response.status_code in RETRY_STATUSES

    @staticmethod
    def _parse(operation: Operation, response: httpx.Response) -> Any:
        if response.status_code >= 400 or response.status_code not in operation.responses:
            if response.status_code < 400:
                raise APIConnectionError(
                    f"unexpected {response.status_code} from {operation.method} {operation.path}",
                    code="unexpected_status",
                    status=response.status_code,
                )
            raise error_from_response(response)
        kind = operation.responses[response.status_code]
        if kind is None:
            return None
        if kind is str:
            return response.text
        return _adapter(kind).validate_json(response.content)

    def _request_args(
        self,
        operation: Operation,
        path: Mapping[str, Any] | None,
        query: Mapping[str, Any] | None,
        body: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        files: Any,
        data: Mapping[str, Any] | None,
        content: bytes | None = None,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {
            "method": operation.method,
            "url": self._url(operation, path or {}),
            "params": self._query(query or {}),
            "headers": {**(headers or {})},
        }
        if content is not None:  # a body sent as it is (the import's JSON Lines); headers name its type
            args["content"] = content
        elif files is not None:
            args["files"], args["data"] = files, {k: v for k, v in (data or {}).items() if v is not None}
        elif body is not None:
            args["json"] = encode_body(body)
        return args


def path_segment(name: str, value: Any) -> str:
    """`value` as one path segment, whatever it holds. "/" is encoded, and so are the dots of a "." or
    ".." (which HTTP clients and servers resolve as a step up: `delete_working("notes", ".")` would
    otherwise clear the scope); the server decodes them back (API Gateway decodes path parameters).
    An empty value cannot be a segment: it is refused before anything is sent."""
    text = str(value)
    if not text:
        raise InvalidInputError(
            f"{name} must not be empty", code="validation_error", field=name, errors=[{"field": name}]
        )
    # ":" may stand in a path segment (RFC 3986): working-memory scopes and keys use it.
    segment = quote(text, safe=":")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def encode_body(body: Mapping[str, Any]) -> Any:
    """JSON for a request body: models as the fields that were set, UUIDs and times as strings."""

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
        raise TypeError(f"{type(value).__name__} is not JSON")

    return to_jsonable_python(dict(body), fallback=plain)


class SyncCore(_Core):
    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self._http = httpx.Client(
            base_url=settings.base_url,
            headers=self._headers(),
            timeout=settings.timeout,
            transport=transport or httpx.HTTPTransport(retries=settings.retry.max_retries),
        )

    def close(self) -> None:
        self._http.close()

    def _call(
        self,
        operation: Operation,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        retry: bool | None = None,
    ) -> Any:
        args = self._request_args(operation, path, query, body, headers, files, data, content)
        repeatable = operation.idempotent if retry is None else retry
        policy = self.settings.retry
        for attempt in range(policy.max_retries + 1):
            last = attempt == policy.max_retries
            try:
                response = self._http.request(**args)
            except httpx.TransportError as exc:
                if not repeatable or last:
                    raise _connection_error(operation, exc) from exc
                time.sleep(policy.delay(attempt))
                continue
            if repeatable and not last and self._retryable_status(response):
                time.sleep(policy.delay(attempt, response.headers.get("Retry-After")))
                continue
            return self._parse(operation, response)
        raise AssertionError("unreachable")  # pragma: no cover


class AsyncCore(_Core):
    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self._http = httpx.AsyncClient(
            base_url=settings.base_url,
            headers=self._headers(),
            timeout=settings.timeout,
            transport=transport or httpx.AsyncHTTPTransport(retries=settings.retry.max_retries),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self,
        operation: Operation,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        retry: bool | None = None,
    ) -> Any:
        args = self._request_args(operation, path, query, body, headers, files, data, content)
        repeatable = operation.idempotent if retry is None else retry
        policy = self.settings.retry
        for attempt in range(policy.max_retries + 1):
            last = attempt == policy.max_retries
            try:
                response = await self._http.request(**args)
            except httpx.TransportError as exc:
                if not repeatable or last:
                    raise _connection_error(operation, exc) from exc
                await asyncio.sleep(policy.delay(attempt))
                continue
            if repeatable and not last and self._retryable_status(response):
                await asyncio.sleep(policy.delay(attempt, response.headers.get("Retry-After")))
                continue
            return self._parse(operation, response)
        raise AssertionError("unreachable")  # pragma: no cover


def _connection_error(operation: Operation, exc: httpx.TransportError) -> APIConnectionError:
    return APIConnectionError(
        f"{operation.method} {operation.path}: {type(exc).__name__}: {exc}", code="connection_error"
    )


def document_finished(document: Any, deadline: float, timeout: float) -> bool:
    """Whether to stop following a document: True when done; raises when it failed or time is up."""
    if document.status == "done":
        return True
    if document.status == "failed":
        raise IngestionFailed(document)
    if time.monotonic() >= deadline:
        raise WaitTimeout(document, timeout)
    return False
