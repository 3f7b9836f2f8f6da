"""Domain errors. The API maps each to one HTTP status, once, in `engram.api.app`."""

from __future__ import annotations

from typing import Any

from engram.unavailable import DEPENDENCY_SECONDS


class EngramError(Exception):
    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def within(self, part: str) -> None:
        """This error, about a field of one part of a request (a batch's item: `memories[2]`), with
        that field named from the request's top, as validation names it: `supersedes` becomes
        `memories[2].supersedes`, in `field` and where the message starts with it. An error that names
        no field stays as it is."""
        field = self.details.get("field")
        if not isinstance(field, str):
            return
        named = f"{part}.{field}"
        if self.message.startswith((f"{field}:", f"{field} ")):
            self.message = named + self.message[len(field) :]
            self.args = (self.message, *self.args[1:])
        self.details = {**self.details, "field": named}


class InvalidInput(EngramError):
    status_code = 422
    code = "validation_error"


class MalformedJson(EngramError):
    status_code = 400
    code = "malformed_json"


class NotFound(EngramError):
    status_code = 404
    code = "not_found"


class Conflict(EngramError):
    status_code = 409
    code = "conflict"


class UnsupportedHere(Conflict):
    """What this deployment does another way (in AWS: events through EventBridge, imports uploaded)."""

    code = "unsupported_here"


class PayloadTooLarge(EngramError):
    status_code = 413
    code = "payload_too_large"


class Unauthorized(EngramError):
    status_code = 401
    code = "unauthorized"


class Forbidden(EngramError):
    status_code = 403
    code = "forbidden"


class ServiceUnavailable(EngramError):
    """Answered 503 with Retry-After: `retry_after_seconds` (engram.unavailable). It may come after
    some of the work was applied (a document registered whose pipeline could not be started)."""

    status_code = 503
    code = "service_unavailable"
    retry_after_seconds = DEPENDENCY_SECONDS


class TransientError(ServiceUnavailable):
    """A failure that may succeed if retried later: a provider throttling or briefly down, after the
    provider's own retries with backoff. The class name is what Step Functions matches in its retry
    rules (a Lambda's error type is the exception's class name), so raise this class itself, never a
    subclass, when the pipeline should retry."""

    code = "temporarily_unavailable"


class MigrationError(EngramError):
    """A migration cannot be applied safely."""


class ProviderError(EngramError):
    """An embedding or LLM provider failed."""

    status_code = 502
    code = "provider_error"

    def __init__(self, message: str, *, transient: bool, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        self.transient = transient


class ExtractionFailed(EngramError):
    """An LLM's answer could not be used even after one repair attempt: not JSON, not the extraction
    schema, or fields it must never set (tenant, container, ids). Permanent: sending the same text again
    is not expected to help. `details["usage"]` holds the tokens the failed attempts spent."""

    status_code = 502
    code = "extraction_failed"
