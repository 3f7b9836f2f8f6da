"""The admin function's request validation: malformed requests get a clear error, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from engram.tenants.admin import handle


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"action": "drop_tables", "tenant": "acme"}, None, "does not match any of the expected tags"),
        ({"tenant": "acme"}, None, "Unable to extract tag"),
        ({"action": "register_key", "tenant": "acme", "prefix": "engram_ab"}, "key_hash", "Field required"),
        (
            {"action": "register_key", "tenant": "acme", "key_hash": "AB" * 32, "prefix": "p"},
            "key_hash",
            "pattern",
        ),
        ({"action": "revoke_key", "tenant": "acme"}, None, "exactly one of key_hash and prefix"),
        (
            {"action": "revoke_key", "tenant": "acme", "prefix": "p", "key_hash": "0" * 64},
            None,
            "exactly one",
        ),
        ({"action": "list_keys", "tenant": "acme", "extra": 1}, "extra", "Extra inputs"),
        ("not an object", None, "input"),
    ],
)
def test_malformed_requests_are_refused_with_the_field(payload: Any, field: str | None, message: str) -> None:
    result = handle(None, payload)  # type: ignore[arg-type]  # validation fails before any database use

    assert result["ok"] is False
    assert result["error"]["code"] == "validation_error"
    assert result["error"].get("field") == field
    assert message.lower() in result["error"]["message"].lower()
