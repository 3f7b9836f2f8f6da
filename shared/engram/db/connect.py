"""How the app reaches PostgreSQL in each environment, decided once from settings.

In AWS every connection verifies the server (sslmode verify-full against the RDS CA bundle shipped in
the layer, ENGRAM_DB_SSLROOTCERT) and outlasts an Aurora Serverless v2 resume from 0 ACU: the app's
pool keeps retrying with backoff until ENGRAM_DB_CONNECT_WAIT_SECONDS (psycopg-pool's own reconnect
loop), and the owner's direct connections retry with tenacity, reading the master secret again on each
attempt so that a password rotated meanwhile is picked up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import make_conninfo

from engram.db.database import Database
from engram.observability import logger
from engram.settings import Settings

# RDS Proxy holds a new client while it borrows a database connection (its ConnectionBorrowTimeout, 30 s
# in infra/database.py), which is how long a resume may keep one attempt waiting.
PROXY_CONNECT_TIMEOUT_S = 30
OWNER_CONNECT_TIMEOUT_S = 20
T = TypeVar("T")


def _tls(settings: Settings) -> dict[str, Any]:
    tls: dict[str, Any] = {"sslmode": settings.db_sslmode}
    if settings.db_sslrootcert:
        tls["sslrootcert"] = settings.db_sslrootcert
    return tls


def app_database(settings: Settings, *, max_size: int = 1) -> Database:
    """The app role's connection: one per Lambda container, reused while warm.

    - AWS: RDS Proxy with IAM authentication and TLS; a fresh token for each new connection.
    - `ENGRAM_APP_DATABASE_URL`: a URL that logs in as the app role.
    - `DATABASE_URL` alone: log in as given, then `SET ROLE` to the app role (RLS applies to it).
    """
    wait = settings.db_connect_wait_seconds
    if settings.db_host and settings.db_iam_auth:
        return Database(_iam_conninfo_factory(settings), max_size=max_size, open_timeout=wait)
    if settings.app_database_url:
        return Database(settings.app_database_url, max_size=max_size, open_timeout=wait)
    if settings.database_url:
        return Database(
            settings.database_url, set_role=settings.app_role, max_size=max_size, open_timeout=wait
        )
    raise RuntimeError(
        "no database configured: set ENGRAM_DB_HOST (AWS), ENGRAM_APP_DATABASE_URL or DATABASE_URL, "
        "or run the local stack with `engram local`"
    )


def _iam_conninfo_factory(settings: Settings, rds: Any = None) -> Callable[[], str]:
    if rds is None:
        import boto3

        rds = boto3.client("rds", region_name=settings.aws_region)
    host, port, user = settings.db_host, settings.db_port, settings.app_role

    def conninfo() -> str:
        token = rds.generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user)
        return make_conninfo(
            host=host,
            port=port,
            dbname=settings.db_name,
            user=user,
            password=token,
            connect_timeout=PROXY_CONNECT_TIMEOUT_S,
            **_tls(settings),
        )

    return conninfo


def master_conninfo(
    secret: Mapping[str, Any], *, dbname: str, sslmode: str = "require", sslrootcert: str | None = None
) -> str:
    """The master user's connection, from the JSON secret RDS generates (host, port, username, password)."""
    missing = [key for key in ("host", "username", "password") if not secret.get(key)]
    if missing:
        raise RuntimeError(f"the database secret lacks {', '.join(missing)}")
    return make_conninfo(
        host=str(secret["host"]),
        port=int(secret.get("port") or 5432),
        dbname=dbname,
        user=str(secret["username"]),
        password=str(secret["password"]),
        sslmode=sslmode,
        connect_timeout=OWNER_CONNECT_TIMEOUT_S,
        **({"sslrootcert": sslrootcert} if sslrootcert else {}),
    )


def master_conninfo_factory(settings: Settings, secrets_client: Any = None) -> Callable[[], str]:
    """Reads the master secret from Secrets Manager for each new connection, so a rotated password is
    picked up without a redeploy. Used only by the migration and admin functions."""
    if not settings.db_secret_arn:
        raise RuntimeError("ENGRAM_DB_SECRET_ARN is not set")
    if secrets_client is None:
        import boto3

        secrets_client = boto3.client("secretsmanager", region_name=settings.aws_region)
    secret_arn, client = settings.db_secret_arn, secrets_client

    def conninfo() -> str:
        secret = json.loads(client.get_secret_value(SecretId=secret_arn)["SecretString"])
        return master_conninfo(
            secret, dbname=settings.db_name, sslmode=settings.db_sslmode, sslrootcert=settings.db_sslrootcert
        )

    return conninfo


def wait_for_database(
    conninfo: Callable[[], str],
    *,
    wait_seconds: float,
    wait: Any = None,
) -> str:
    """Connect once, retrying with jittered exponential backoff for up to `wait_seconds`, and return the
    conninfo that worked. The first attempt wakes a paused cluster; each attempt builds the conninfo
    again (a fresh token, the current secret). `wait`: tenacity's wait strategy (tests shorten it)."""
    from tenacity import wait_exponential_jitter

    def connect() -> str:
        info = conninfo()
        with psycopg.connect(info, autocommit=True):
            return info

    return while_unreachable(
        connect,
        wait_seconds=wait_seconds,
        wait=wait or wait_exponential_jitter(initial=1, max=10),
        retrying="database not reachable yet; retrying",
    )


def while_unreachable(action: Callable[[], T], *, wait_seconds: float, wait: Any, retrying: str) -> T:
    """`action`, tried again while PostgreSQL cannot be reached (psycopg.OperationalError), with `wait`
    (a tenacity wait strategy) between attempts and `retrying` logged before each, for up to
    `wait_seconds`; then its last error."""
    from tenacity import Retrying, retry_if_exception_type, stop_after_delay

    for attempt in Retrying(
        retry=retry_if_exception_type(psycopg.OperationalError),
        stop=stop_after_delay(wait_seconds),
        wait=wait,
        before_sleep=lambda state: logger.warning(retrying, extra={"attempt": state.attempt_number}),
        reraise=True,
    ):
        with attempt:
            return action()
    raise AssertionError("unreachable: tenacity reraises the last error")


def admin_database(settings: Settings, *, secrets_client: Any = None) -> Database:
    """The owner's connection, for tenant and key administration (RLS is forced, so it still works
    one tenant at a time): the master secret on AWS, `DATABASE_URL` elsewhere."""
    wait = settings.db_connect_wait_seconds
    if settings.db_secret_arn:
        return Database(master_conninfo_factory(settings, secrets_client), max_size=1, open_timeout=wait)
    if settings.database_url:
        return Database(settings.database_url, max_size=2, open_timeout=wait)
    raise RuntimeError("no admin database configured: set ENGRAM_DB_SECRET_ARN (AWS) or DATABASE_URL")
