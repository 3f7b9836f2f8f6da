"""The API key of an API Gateway event: one `x-api-key` header, or none. Both the authorizer and
every API handler read it here, so a request that names several keys is refused in both places (the
authorizer's cached answer for one of the keys cannot let it through)."""

from __future__ import annotations

from typing import Any

API_KEY_HEADER = "x-api-key"
SEVERAL_KEYS = "send exactly one x-api-key header: this request has several"


class AmbiguousApiKey(Exception):
    """The request carries more than one x-api-key header."""


def api_key_from(event: dict[str, Any]) -> str | None:
    """The key, or None when there is none. Header names are case-insensitive, and API Gateway (REST)
    passes every value of a repeated header in `multiValueHeaders` (and only the last in `headers`)."""
    values: list[str] = []
    multi = event.get("multiValueHeaders") or {}
    for name, given in multi.items():
        if name.lower() == API_KEY_HEADER:
            values.extend(str(v) for v in (given or []))
    if not multi:
        values = [str(v) for k, v in (event.get("headers") or {}).items() if k.lower() == API_KEY_HEADER]
    if len(values) > 1:
        raise AmbiguousApiKey(SEVERAL_KEYS)
    key = values[0].strip() if values else ""
    return key or None
