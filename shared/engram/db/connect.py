"""How the app reaches PostgreSQL in each environment, decided once from settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from psycopg.conninfo import make_conninfo

from engram.db.database import Database
from engram.settings import Settings


def app_database(settings: Settings, *, max_size: int = 1) -> Database:
    """The app role's connection: one per Lambda container, reused while warm.

    - AWS: RDS Proxy with IAM authentication and TLS; a fresh token for each new connection.
    - `ENGRAM_APP_DATABASE_URL`: a URL that logs in as the app role.
    - `DATABASE_URL` alone: log in as given, then `SET ROLE` to the app role (RLS applies to it).
    """
    if settings.db_host and settings.db_iam_auth:
        return Database(_iam_conninfo_factory(settings), max_size=max_size)
    if settings.app_database_url:
        return Database(settings.app_database_url, max_size=max_size)
    if settings.database_url:
        return Database(settings.database_url, set_role=settings.app_role, max_size=max_size)
    raise RuntimeError(
        "no database configured: set ENGRAM_DB_HOST (AWS), ENGRAM_APP_DATABASE_URL or DATABASE_URL, "
        "or run the local stack with `engram local`"
    )


def _iam_conninfo_factory(settings: Settings) -> Callable[[], str]:
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
            sslmode="require",
            connect_timeout=5,
        )

    return conninfo


def master_conninfo(secret: Mapping[str, Any], *, dbname: str, sslmode: str = "require") -> str:
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
        connect_timeout=10,
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
        import json

        secret = json.loads(client.get_secret_value(SecretId=secret_arn)["SecretString"])
        return master_conninfo(secret, dbname=settings.db_name, sslmode=settings.db_sslmode)

    return conninfo


def admin_database(settings: Settings, *, secrets_client: Any = None) -> Database:
    """The owner's connection, for tenant and key administration (RLS is forced, so it still works
    one tenant at a time): the master secret on AWS, `DATABASE_URL` elsewhere."""
    if settings.db_secret_arn:
        return Database(master_conninfo_factory(settings, secrets_client), max_size=1)
    if settings.database_url:
        return Database(settings.database_url, max_size=2)
    raise RuntimeError("no admin database configured: set ENGRAM_DB_SECRET_ARN (AWS) or DATABASE_URL")
