"""Domain errors. The API maps each to one HTTP status, once, in `engram.api.app`."""

from __future__ import annotations

from typing import Any


class EngramError(Exception):
    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class InvalidInput(EngramError):
    status_code = 422
    code = "validation_error"


class NotFound(EngramError):
    status_code = 404
    code = "not_found"


class Conflict(EngramError):
    status_code = 409
    code = "conflict"


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
    status_code = 503
    code = "service_unavailable"


class MigrationError(EngramError):
    """A migration cannot be applied safely."""


class ProviderError(EngramError):
    """An embedding or LLM provider failed."""

    status_code = 502
    code = "provider_error"

    def __init__(self, message: str, *, transient: bool, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        self.transient = transient
