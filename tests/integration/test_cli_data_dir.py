"""`engram` commands find the data directory as `engram local` does (ENGRAM_DATA_DIR, else the project's
`.engram`, from any working directory), and refuse to create a fresh database when a stack answers on
the local port with its data elsewhere, saying where they looked."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from engram import cli
from engram import settings as settings_module
from engram.local import stack
from engram.settings import Settings
from tests.conftest import REPO


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """Stands in for the embedded database: records which settings a command opened it with."""
    opened: list[Settings] = []

    class Opened:
        admin = app = None

        def close(self) -> None:
            return None

    def open_database(settings: Settings, **_: Any) -> Opened:
        opened.append(settings)
        return Opened()

    monkeypatch.setattr(stack, "open_database", open_database)
    return opened


def test_the_data_dir_is_the_project_s_from_any_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ENGRAM_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)

    assert Settings().data_dir == REPO / ".engram"
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "mine"))
    assert Settings().data_dir == tmp_path / "mine"


def test_keys_refuse_a_fresh_database_while_a_stack_runs_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    live_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given: the project's data directory holds no database, and a stack answers on the local port
    monkeypatch.delenv("ENGRAM_DATA_DIR", raising=False)
    monkeypatch.setattr(settings_module, "default_data_dir", lambda: tmp_path / ".engram")
    where = urlsplit(live_url)
    monkeypatch.setattr(cli, "_settings", lambda: Settings(host=where.hostname, port=where.port))
    opened = _opened(monkeypatch)

    code = cli.main(["keys", "create", "--tenant", "acme"])

    err = capsys.readouterr().err
    assert code == 2 and opened == []
    assert str(tmp_path / ".engram") in err and live_url in err and "ENGRAM_DATA_DIR" in err
    assert not (tmp_path / ".engram").exists()


def test_a_chosen_or_existing_database_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, live_url: str
) -> None:
    where = urlsplit(live_url)
    opened = _opened(monkeypatch)
    existing = tmp_path / "existing"
    (existing / "pg").mkdir(parents=True)
    (existing / "pg" / "PG_VERSION").write_text("18\n")
    monkeypatch.setattr(settings_module, "default_data_dir", lambda: existing)

    discovered = Settings(host=where.hostname, port=where.port)
    chosen = Settings(host=where.hostname, port=where.port, data_dir=tmp_path / "fresh")
    cli._local_database(discovered, "keys list")
    cli._local_database(chosen, "keys list")

    assert [s.data_dir for s in opened] == [existing, tmp_path / "fresh"]


def test_without_a_running_stack_a_fresh_database_is_made_where_it_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = _opened(monkeypatch)
    monkeypatch.setattr(settings_module, "default_data_dir", lambda: tmp_path / ".engram")

    cli._local_database(Settings(port=9), "keys create")  # nothing listens on port 9

    assert [s.data_dir for s in opened] == [tmp_path / ".engram"]
    assert str(tmp_path / ".engram") in capsys.readouterr().err
