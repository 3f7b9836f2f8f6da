"""Health: a real round trip to the database, reported without internals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.errors import ServiceUnavailable
from engram.observability import logger

if TYPE_CHECKING:
    from engram.db.database import Database


def check_health(db: Database) -> dict[str, str]:
    try:
        with db.transaction() as cur:
            cur.execute("SELECT 1")
    except Exception as exc:
        logger.exception("database health check failed")
        raise ServiceUnavailable("database unreachable") from exc
    return {"status": "ok", "database": "ok"}
