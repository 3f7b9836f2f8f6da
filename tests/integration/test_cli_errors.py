"""`engram` commands that fail say why on stderr and exit 2: never a traceback for a file that cannot be read
or written, a deployment that does not answer, or an argument out of range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from engram import cli
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey, issue_key


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_importing_a_file_that_does_not_exist_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nonexist.jsonl"

    code = cli.main(["import", str(missing)])

    assert code == 2
    assert capsys.readouterr().err == f"engram: No such file or directory: {missing}\n"


def test_exporting_from_a_deployment_that_does_not_answer_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"

    code = cli.main(["export", "--url", url, "--key", "k", "-o", str(tmp_path / "x.jsonl")])

    assert code == 2
    assert capsys.readouterr().err.strip().startswith("engram: connection_error: ")


def test_exporting_with_both_a_url_and_a_tenant_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["export", "--url", "http://127.0.0.1:1", "--key", "k", "--tenant", "dev", "-o", "x"])

    assert code == 2 and "the key decides" in capsys.readouterr().err


def test_cleanup_refuses_a_negative_retention(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["cleanup", "--retention-days", "-1"])

    assert exited.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


def test_revoking_with_both_a_key_and_a_prefix_is_refused_and_revokes_nothing(
    tenant: IssuedKey, local_db: LocalDatabase, capsys: pytest.CaptureFixture[str], cli_on_test_db: None
) -> None:
    # Given: two keys of one tenant (found by QA: --prefix of one beside --key of the other revoked the other)
    other = issue_key(local_db.admin, tenant.tenant_name)
    capsys.readouterr()

    # When: one is named by --prefix and the other by --key
    with pytest.raises(SystemExit) as exited:
        cli.main(
            [
                "keys",
                "revoke",
                "--tenant",
                tenant.tenant_name,
                "--prefix",
                tenant.prefix,
                "--key",
                other.plaintext,
            ]
        )

    # Then: argparse refuses the pair, and both keys still answer
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert cli.main(["keys", "list", "--tenant", tenant.tenant_name]) == 0
    assert capsys.readouterr().out.count("active") == 2


@pytest.mark.parametrize("name", ["evil\nname", "tab\there", "x" * 201])
def test_a_key_name_that_would_break_the_listing_is_refused(
    tenant: IssuedKey, capsys: pytest.CaptureFixture[str], cli_on_test_db: None, name: str
) -> None:
    code = cli.main(["keys", "create", "--tenant", tenant.tenant_name, "--name", name])

    err = capsys.readouterr().err
    assert code == 2 and "key name" in err and f"({len(name)} characters)" in err
    assert cli.main(["keys", "list", "--tenant", tenant.tenant_name]) == 0
    assert capsys.readouterr().out.count("active") == 1
