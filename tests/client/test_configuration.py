"""What a client is built with: an empty API key is an error (only None reads ENGRAM_API_KEY), and a
key an HTTP header cannot carry is refused at once, without showing it."""

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


@pytest.mark.parametrize("suffix", ["\n", " ", "\r\n", "\x00", "é"])
def test_a_key_a_header_cannot_carry_is_refused_without_showing_it(
    suffix: str, live_url: str, tenant: IssuedKey
) -> None:
    key = tenant.plaintext + suffix

    with pytest.raises(ConfigurationError) as raised:
        Engram(live_url, key)

    assert raised.value.code == "invalid_api_key"
    assert tenant.plaintext[8:] not in str(raised.value) and tenant.plaintext[8:] not in repr(raised.value)
    assert f"position {len(tenant.plaintext) + 1}" in raised.value.message


def test_a_key_from_the_environment_is_checked_too(live_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_API_KEY", "engram_secret\n")

    with pytest.raises(ConfigurationError, match="ENGRAM_API_KEY") as raised:
        Engram(live_url)

    assert "secret" not in str(raised.value)


@pytest.mark.parametrize("client", [Engram, AsyncEngram])
def test_an_empty_url_is_refused_not_read_as_the_local_default(
    client: type[Engram] | type[AsyncEngram], tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by QA: ENGRAM_URL="" (a deployment whose URL setting is missing) sent the real key to whatever
    # listened on 127.0.0.1:8080
    monkeypatch.setenv("ENGRAM_URL", "")
    with pytest.raises(ConfigurationError) as from_environment:
        client(None, tenant.plaintext)
    monkeypatch.delenv("ENGRAM_URL")
    with pytest.raises(ConfigurationError) as given:
        client("", tenant.plaintext)

    assert from_environment.value.code == given.value.code == "missing_base_url"
    assert client(None, tenant.plaintext).settings.base_url == "http://127.0.0.1:8080"
