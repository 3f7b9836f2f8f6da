"""Connections in AWS: verify-full TLS against the CA bundle, and retries that outlast a database that is
not there yet (an Aurora cluster resuming from 0 ACU), against the real embedded PostgreSQL."""

from __future__ import annotations

import json
import socket
import time

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tenacity import wait_none

from engram.db.connect import (
    PROXY_CONNECT_TIMEOUT_S,
    _iam_conninfo_factory,
    master_conninfo_factory,
    wait_for_database,
)
from engram.db.database import Database
from engram.local.stack import LocalDatabase
from engram.settings import Settings

BUNDLE = "/opt/certs/rds-ca-bundle.pem"


def _closed_port() -> int:
    with socket.socket() as s:  # a port nobody listens on: connections are refused at once
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Resuming:
    """A conninfo factory whose server refuses the first `refusals` attempts, as a paused cluster does
    while it resumes, then answers."""

    def __init__(self, conninfo: str, refusals: int) -> None:
        self.real, self.refusals, self.calls = conninfo, refusals, 0
        self.down = make_conninfo(conninfo, host="127.0.0.1", port=_closed_port(), connect_timeout=2)

    def __call__(self) -> str:
        self.calls += 1
        return self.down if self.calls <= self.refusals else self.real


def test_wait_for_database_retries_until_the_server_answers(local_db: LocalDatabase) -> None:
    resuming = Resuming(local_db.admin_conninfo, refusals=3)

    conninfo = wait_for_database(resuming, wait_seconds=30, wait=wait_none())

    assert conninfo == local_db.admin_conninfo and resuming.calls == 4
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_wait_for_database_gives_up_after_its_budget(local_db: LocalDatabase) -> None:
    never = Resuming(local_db.admin_conninfo, refusals=10**6)
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError):
        wait_for_database(never, wait_seconds=1, wait=wait_none())
    assert time.monotonic() - started < 10 and never.calls >= 2


def test_the_pool_keeps_retrying_until_the_server_answers(local_db: LocalDatabase) -> None:
    resuming = Resuming(local_db.admin_conninfo, refusals=2)
    db = Database(resuming, max_size=1, open_timeout=30)
    try:
        with db.transaction() as cur:
            cur.execute("SELECT 1 AS one")
            assert cur.fetchone() == {"one": 1}
    finally:
        db.close()
    assert resuming.calls >= 3


class StubRds:
    def generate_db_auth_token(self, DBHostname: str, Port: int, DBUsername: str) -> str:
        return f"token-for-{DBUsername}@{DBHostname}:{Port}"


def test_the_proxy_connection_verifies_the_server_against_the_bundle() -> None:
    settings = Settings(
        db_host="engram-dev.proxy-abc.eu-west-1.rds.amazonaws.com",
        db_iam_auth=True,
        db_sslmode="verify-full",
        db_sslrootcert=BUNDLE,
    )
    params = conninfo_to_dict(_iam_conninfo_factory(settings, StubRds())())
    assert params["sslmode"] == "verify-full" and params["sslrootcert"] == BUNDLE
    assert params["password"] == "token-for-engram_app@engram-dev.proxy-abc.eu-west-1.rds.amazonaws.com:5432"
    assert int(params["connect_timeout"]) == PROXY_CONNECT_TIMEOUT_S


class StubSecrets:
    def __init__(self, passwords: list[str]) -> None:
        self.passwords = passwords

    def get_secret_value(self, SecretId: str) -> dict[str, str]:
        password = self.passwords.pop(0) if len(self.passwords) > 1 else self.passwords[0]
        secret = {"host": "engram-dev.cluster-abc.eu-west-1.rds.amazonaws.com", "username": "engram_admin"}
        return {"SecretString": json.dumps({**secret, "password": password})}


def test_the_owner_connection_verifies_the_server_and_reads_the_secret_each_time() -> None:
    settings = Settings(db_secret_arn="arn:secret", db_sslmode="verify-full", db_sslrootcert=BUNDLE)
    factory = master_conninfo_factory(settings, StubSecrets(["before-rotation", "after-rotation"]))
    first, second = conninfo_to_dict(factory()), conninfo_to_dict(factory())
    assert (first["sslmode"], first["sslrootcert"]) == ("verify-full", BUNDLE)
    assert (first["password"], second["password"]) == ("before-rotation", "after-rotation")
