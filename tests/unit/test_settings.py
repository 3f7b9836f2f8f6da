"""Settings read the environment as pydantic-settings did: ENGRAM_<FIELD> or the field's aliases,
case-insensitively, validated, with explicit values first."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from engram.settings import Settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "ENGRAM_DATABASE_URL", "AWS_REGION", "ENGRAM_AWS_REGION", "ENGRAM_PORT"):
        monkeypatch.delenv(name, raising=False)


def test_prefixed_variables_are_read_and_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_PORT", "9000")
    monkeypatch.setenv("ENGRAM_DB_IAM_AUTH", "true")
    monkeypatch.setenv("ENGRAM_DATA_DIR", "/tmp/engram-data")
    monkeypatch.setenv("ENGRAM_SUPERSEDED_RETENTION_DAYS", "7")
    settings = Settings()
    assert settings.port == 9000
    assert settings.db_iam_auth is True
    assert settings.data_dir == Path("/tmp/engram-data")
    assert settings.superseded_retention_days == 7


def test_names_match_case_insensitively(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("engram_llm_provider", "anthropic")
    assert Settings().llm_provider == "anthropic"


def test_aliases_in_order_then_the_prefixed_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_AWS_REGION", "eu-west-1")
    assert Settings().aws_region == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "us-east-1")  # AliasChoices("AWS_REGION", "ENGRAM_AWS_REGION")
    assert Settings().aws_region == "us-east-1"


def test_explicit_values_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://from-env/engram")
    monkeypatch.setenv("ENGRAM_PORT", "9000")
    assert Settings().database_url == "postgresql://from-env/engram"
    assert Settings(database_url=None).database_url is None
    assert Settings(DATABASE_URL="postgresql://given/engram").database_url == "postgresql://given/engram"
    assert Settings(port=8081).port == 8081


def test_invalid_environment_values_fail_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_PORT", "0")
    with pytest.raises(ValidationError, match="port"):
        Settings()


def test_unknown_values_are_ignored() -> None:
    assert not hasattr(Settings(unknown="x"), "unknown")  # type: ignore[call-arg]
