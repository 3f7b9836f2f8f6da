"""What can go wrong, as exceptions: every API error carries the server's `code`, `message` and, for
bad input, the `field` at fault (and `errors`, every problem found)."""

from __future__ import annotations

from typing import Any

import httpx


class EngramError(Exception):
    """Base of every error this package raises."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: int | None = None,
        field: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.field = field
        self.errors = errors or []
        self.details = details or {}

    def __str__(self) -> str:
        where = f" ({self.field})" if self.field else ""
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}{where}: {self.message}"


class ConfigurationError(EngramError):
    """The client is missing what it needs to call the API (a URL, an API key)."""


class APIError(EngramError):
    """The API answered with an error status."""


class BadRequestError(APIError):
    """400: the body is not JSON."""


class AuthenticationError(APIError):
    """401: no API key was sent."""


class PermissionDeniedError(APIError):
    """403: the API key is unknown or revoked."""


class NotFoundError(APIError):
    """404: unknown, or another tenant's (the same answer)."""


class ConflictError(APIError):
    """409: the item is not in the state the request expects (a version, an existing id, ...)."""

    @property
    def current_version(self) -> int | None:
        """On a version conflict: the version the item is at now (None: it does not exist)."""
        value = self.details.get("current_version")
        return int(value) if value is not None else None


class PayloadTooLargeError(APIError):
    """413: the body is over the API's limit."""


class InvalidInputError(APIError):
    """422: the request is well-formed but a value is not acceptable; `field` names it."""


class RateLimitError(APIError):
    """429: throttled (retried with backoff first), or the key's daily quota is used up (`code`
    `quota_exceeded`: raised at once, as no backoff outlasts the quota's day)."""


class ServerError(APIError):
    """5xx: the server failed (502/503/504 are retried with backoff first where that is safe). A write
    answered 502, 503 or 504 raises `MaybeApplied` instead, unless the server said it handled nothing
    (a 503 `not_handled`)."""


class APIConnectionError(EngramError):
    """The API could not be reached, or the connection broke (retried first where that is safe)."""


class MaybeApplied(APIConnectionError):
    """A write's answer was lost (the connection broke or timed out after the request went out; a gateway
    answered 502 or 504; a 503 that does not say nothing was handled) and repeating it was not safe, or
    did not help: the server may have applied it, or not. `operation` names the call
    ("PUT /v1/working/{scope}/{key}"); `status` is the last answer's, if one came (its `ServerError` is
    the exception's `__cause__`). Read the item back to know."""

    def __init__(self, message: str, *, operation: str, status: int | None = None) -> None:
        super().__init__(message, code="maybe_applied", status=status, details={"operation": operation})
        self.operation = operation


class UnexpectedResponse(EngramError):
    """An answer the client cannot read: a status the operation does not answer, or a body that is not
    the API's (a proxy's HTML page, JSON of another shape). `status` is the answer's, `excerpt` the
    start of its body."""

    def __init__(self, message: str, *, status: int, excerpt: str, code: str = "unexpected_response") -> None:
        super().__init__(f"{message}: {excerpt!r}" if excerpt else message, code=code, status=status)
        self.excerpt = excerpt


def excerpt(response: httpx.Response, limit: int = 200) -> str:
    """The start of an answer's body, on one line."""
    try:
        text = response.text
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        return ""
    shown = " ".join(text.split())
    return shown if len(shown) <= limit else shown[:limit] + "…"


class IngestionFailed(EngramError):
    """A document waited for (`wait=True`) ended `failed`; `document` holds it, with its error."""

    def __init__(self, document: Any) -> None:
        error = getattr(document, "error", None)
        super().__init__(
            getattr(error, "message", None) or "the document failed",
            code=getattr(error, "code", None) or "ingestion_failed",
        )
        self.document = document


class WaitTimeout(EngramError, TimeoutError):
    """A document waited for (`wait=True`) did not finish in time; `document` is its last state."""

    def __init__(self, document: Any, timeout: float) -> None:
        super().__init__(
            f"document {getattr(document, 'id', '?')} is still {getattr(document, 'status', '?')} "
            f"after {timeout:g} s",
            code="wait_timeout",
        )
        self.document = document


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidInputError,
    429: RateLimitError,
}


# API Gateway's own answers, when it gives its {"message": ...} (not reshaped, or before the API's stage).
_GATEWAY_CODES = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    413: "payload_too_large",
    429: "throttled",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout",
}


def error_from_response(response: httpx.Response) -> APIError:
    """The exception for an error answer, from its `{"error": {...}}` body, API Gateway's
    `{"message": ...}`, or what there is of one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict) and isinstance(body, dict) and isinstance(body.get("message"), str):
        detail = {"code": _GATEWAY_CODES.get(response.status_code, "http_error"), "message": body["message"]}
    if not isinstance(detail, dict):
        detail = {"code": "http_error", "message": excerpt(response, 500) or response.reason_phrase}
    known = {"code", "message", "field", "errors"}
    kind = _BY_STATUS.get(response.status_code) or (ServerError if response.status_code >= 500 else APIError)
    return kind(
        str(detail.get("message") or response.reason_phrase),
        code=str(detail.get("code") or "http_error"),
        status=response.status_code,
        field=detail.get("field"),
        errors=detail.get("errors") if isinstance(detail.get("errors"), list) else None,
        details={k: v for k, v in detail.items() if k not in known},
    )
