"""How the app reaches PostgreSQL in each environment, decided once from settings."""

from __future__ import annotations

from collections.abc import Callable

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
