"""The HTTP core under `Engram` and `AsyncEngram`: configuration, one request per operation, retries
with backoff, answers parsed into models and errors into exceptions.

Retries (the rule is in `Attempts`; shared/client/README.md explains it). At most `max_retries` retries,
with exponential backoff and full jitter; a Retry-After the answer carries (seconds or an HTTP date)
replaces the backoff, up to `max_backoff`:
- nothing was sent (the connection could not be opened), or the server refused before doing anything
  (429; a 503 with Retry-After whose `error.code` is `not_handled`, which the server sends only when no
  handler ran): retried for every call, writes too; but a 429 `quota_exceeded` (the key's daily quota
  is used up) is raised at once;
- the request may have reached the server (the connection broke or timed out after it went out; any
  other 502, 503 or 504, Retry-After or not: a handler's 503 may come after its commit): retried only
  when repeating it can change neither the outcome nor the answer (reads, searches, PUT and upserts by
  key, a DELETE answered by 204, where a 404 then means it is done); never a conditional write
  (If-Match), a DELETE that answers counts, or any other write. A write that ends there raises
  `MaybeApplied`: it may have been applied, or not.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from engram_client.errors import (
    APIConnectionError,
    ConfigurationError,
    IngestionFailed,
    InvalidInputError,
    MaybeApplied,
    UnexpectedResponse,
    WaitTimeout,
    error_from_response,
    excerpt,
)

DEFAULT_URL = "http://127.0.0.1:8080"
# Answers a gateway gives when it may have lost the handler's: the request may have been applied.
LOST_STATUSES = frozenset({502, 503, 504})
# error.code of a 503 the server answers before any handler ran (the authorizer failed, the local server
# is stopping or had no worker free): nothing was applied. Retry-After alone does not say so: every 503
# of the server carries it.
NOT_HANDLED = "not_handled"
# error.code of a 429 for an API key whose daily quota is used up: no retry within a backoff can help.
QUOTA_EXCEEDED = "quota_exceeded"
# Errors raised before any byte of the request was sent.
NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The request cannot be sent as it is: repeating it cannot help.
UNSENDABLE = (httpx.LocalProtocolError, httpx.UnsupportedProtocol)
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
        """Seconds to wait before retry number `attempt` (0-based): what Retry-After asks (seconds, or
        until an HTTP date), at most `max_backoff`; else exponential backoff with jitter."""
        asked = _seconds_asked(retry_after) if retry_after is not None else None
        if asked is not None:
            return min(max(asked, 0.0), self.max_backoff)
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)  # jitter: retries of many clients spread out


def _seconds_asked(retry_after: str) -> float | None:
    """A Retry-After value in seconds from now: delay-seconds or an HTTP date (RFC 9110, 10.2.3); None
    when it is neither."""
    text = retry_after.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, as HTTP dates are
            when = when.replace(tzinfo=datetime.UTC)
        return when.timestamp() - time.time()
    return seconds if math.isfinite(seconds) else None


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
    environment: an empty one is refused (a tenant's key that is missing must not become another's). So
    is an empty URL, given or in ENGRAM_URL: only when neither says anything is it the local stack's."""
    given_url = base_url if base_url is not None else os.environ.get("ENGRAM_URL")
    if given_url is not None and not given_url.strip():
        where = "base_url" if base_url is not None else "ENGRAM_URL"
        raise ConfigurationError(
            f"{where} is empty: give the deployment's URL (leave both out for the local stack, "
            f"{DEFAULT_URL})",
            code="missing_base_url",
        )
    url = (given_url or DEFAULT_URL).rstrip("/")
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
    def _parse(operation: Operation, response: httpx.Response) -> Any:
        status = response.status_code
        if status >= 400:
            raise error_from_response(response)
        name = f"{operation.method} {operation.path}"
        if status not in operation.responses:
            raise UnexpectedResponse(
                f"{name} answered {status}, which the API does not answer there (a proxy? a wrong URL?)",
                status=status,
                excerpt=excerpt(response),
                code="unexpected_status",
            )
        kind = operation.responses[status]
        if kind is None:
            return None
        if kind is str:
            return response.text
        return parse_answer(kind, response, name)

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
        raise _invalid(name, f"{name} must not be empty")
    # ":" may stand in a path segment (RFC 3986): working-memory scopes and keys use it.
    segment = quote(text, safe=":")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def parse_answer(kind: Any, response: httpx.Response, name: str) -> Any:
    """The answer's body as `kind`; UnexpectedResponse when it is not (HTML from a proxy, JSON of
    another shape)."""
    try:
        return _adapter(kind).validate_json(response.content)
    except ValidationError as exc:
        shown = response.headers.get("Content-Type", "no Content-Type")
        raise UnexpectedResponse(
            f"{name}: the {response.status_code} answer ({shown}) is not what the API answers there",
            status=response.status_code,
            excerpt=excerpt(response),
        ) from exc


def encode_body(body: Mapping[str, Any]) -> Any:
    """JSON for a request body: models as the fields that were set, UUIDs and times as strings. A value
    JSON cannot carry (NaN, infinity, an object of no JSON form) is refused before anything is sent
    (InvalidInputError, with the field)."""

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
        raise TypeError(f"{type(value).__name__} is not JSON")

    encoded: dict[str, Any] = {}
    for name, value in body.items():
        try:
            encoded[name] = to_jsonable_python(value, fallback=plain)
        except (TypeError, ValueError, PydanticSerializationError) as exc:
            raise _invalid(name, f"{name}: a {type(value).__name__} cannot be sent as JSON") from exc
        where = _non_finite(encoded[name], name)
        if where is not None:
            raise _invalid(where, f"{where} is not a finite number: JSON has no NaN or infinity")
    return encoded


def _non_finite(value: Any, where: str) -> str | None:
    """Where in `value` a NaN or an infinity is, if anywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found = _non_finite(inner, f"{where}.{key}")
        if found is not None:
            return found
    return None


def _invalid(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, code="validation_error", field=field, errors=[{"field": field}])


class SyncCore(_Core):
    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self._http = httpx.Client(
            base_url=settings.base_url,
            headers=self._headers(),
            timeout=settings.timeout,
            # No retries of the transport's own: they would multiply the client's (Attempts).
            transport=transport or httpx.HTTPTransport(),
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
        attempts = Attempts.of(operation, args["headers"], retry, self.settings.retry)
        while True:
            try:
                response = self._http.request(**args)
            except httpx.TransportError as exc:
                time.sleep(attempts.after_error(exc))
                continue
            delay = attempts.after_answer(response)
            if delay is None:
                return attempts.answer(response)
            time.sleep(delay)


class AsyncCore(_Core):
    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self._http = httpx.AsyncClient(
            base_url=settings.base_url,
            headers=self._headers(),
            timeout=settings.timeout,
            transport=transport or httpx.AsyncHTTPTransport(),
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
        attempts = Attempts.of(operation, args["headers"], retry, self.settings.retry)
        while True:
            try:
                response = await self._http.request(**args)
            except httpx.TransportError as exc:
                await asyncio.sleep(attempts.after_error(exc))
                continue
            delay = attempts.after_answer(response)
            if delay is None:
                return attempts.answer(response)
            await asyncio.sleep(delay)


@dataclass
class Attempts:
    """The retry rule for one call (the module's docstring): after each attempt, whether to send it again
    (the delay before) or what to answer."""

    operation: Operation
    policy: RetryPolicy
    writes: bool  # the call changes something (not a GET, nor a POST the API declares safe to repeat)
    repeatable: bool  # it may be sent again after an attempt that may have reached the server
    gone_is_done: bool  # a DELETE answered by 204: a 404 after such an attempt means it is done
    attempt: int = 0
    arrived: bool = False  # an attempt may have reached the server

    @classmethod
    def of(
        cls, operation: Operation, headers: Mapping[str, str], retry: bool | None, policy: RetryPolicy
    ) -> Attempts:
        conditional = any(name.lower() == "if-match" for name in headers)
        counts = operation.method == "DELETE" and any(
            kind is not None for kind in operation.responses.values()
        )
        idempotent = operation.idempotent if retry is None else retry
        return cls(
            operation,
            policy,
            writes=writes(operation),
            repeatable=idempotent and not conditional and not counts,
            gone_is_done=operation.method == "DELETE" and not conditional and not counts,
        )

    @property
    def name(self) -> str:
        return f"{self.operation.method} {self.operation.path}"

    def _again(self, retry_after: str | None = None) -> float | None:
        if self.attempt >= self.policy.max_retries:
            return None
        delay = self.policy.delay(self.attempt, retry_after)
        self.attempt += 1
        return delay

    def after_error(self, exc: httpx.TransportError) -> float:
        """The delay before the next attempt, or the exception to raise, after the transport failed."""
        if isinstance(exc, UNSENDABLE):
            # Never the exception's text: it quotes the header value refused (a key, a token).
            raise APIConnectionError(
                f"{self.name}: the request could not be sent ({type(exc).__name__}): a header value "
                "holds a character HTTP does not allow, or the URL's scheme is not http(s)",
                code="connection_error",
            ) from None
        if not isinstance(exc, NOTHING_SENT):
            self.arrived = True
        if isinstance(exc, NOTHING_SENT) or self.repeatable:
            delay = self._again()
            if delay is not None:
                return delay
        failure = f"{self.name}: {type(exc).__name__}: {exc}"
        if self.arrived and self.writes:
            raise MaybeApplied(
                f"{failure}; the request may have reached the server and the write may have been applied "
                "(it was not repeated, as that could apply it twice): read the item back to know",
                operation=self.name,
            ) from exc
        raise APIConnectionError(failure, code="connection_error") from exc

    def after_answer(self, response: httpx.Response) -> float | None:
        """The delay before the next attempt, or None to take this answer."""
        status = response.status_code
        retry_after = response.headers.get("Retry-After")
        if status == 429 and error_from_response(response).code == QUOTA_EXCEEDED:
            return None  # the key's daily quota: it is not back within any backoff
        if status == 429 or refused_unhandled(response):
            return self._again(retry_after)  # refused before anything was done
        if status in LOST_STATUSES:
            self.arrived = True
            return self._again(retry_after) if self.repeatable else None
        return None

    def answer(self, response: httpx.Response) -> Any:
        status = response.status_code
        if status == 404 and self.arrived and self.gone_is_done:
            return None  # an earlier attempt deleted it
        if status in LOST_STATUSES and self.arrived and self.writes:
            failure = error_from_response(response)
            raise MaybeApplied(
                f"{self.name}: {failure}; the request reached the server, whose answer says nothing of "
                "what it applied: the write may have been applied, or not: read the item back to know",
                operation=self.name,
                status=status,
            ) from failure
        return _Core._parse(self.operation, response)


def writes(operation: Operation) -> bool:
    """Whether a call changes something: not a GET, nor a POST the API declares safe to repeat (a
    search, a listing) unless it creates (answers 201: an upsert, which is sent again and so may run out
    of attempts with its write applied)."""
    if operation.method == "GET":
        return False
    return not (operation.method == "POST" and operation.idempotent and 201 not in operation.responses)


def refused_unhandled(response: httpx.Response) -> bool:
    """Whether an answer is the server's word that it refused the request before any handler ran, so
    that nothing was applied: a 503 with Retry-After whose `error.code` is `not_handled`."""
    return (
        response.status_code == 503
        and "Retry-After" in response.headers
        and error_from_response(response).code == NOT_HANDLED
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
