"""What a client is built with: an empty API key is an error (only None reads ENGRAM_API_KEY)."""

from __future__ import annotations

import pytest

from engram.tenants.service import IssuedKey
from engram_client import AsyncEngram, ConfigurationError, Engram


@pytest.mark.parametrize("client", [Engram, AsyncEngram])
def test_an_empty_api_key_is_refused_even_with_one_in_the_environment(
    client: type[Engram] | type[AsyncEngram],
    live_url: str,
    tenant: IssuedKey,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGRAM_API_KEY", tenant.plaintext)

    with pytest.raises(ConfigurationError) as raised:
        client(live_url, "")

    assert raised.value.code == "missing_api_key" and "empty" in raised.value.message
