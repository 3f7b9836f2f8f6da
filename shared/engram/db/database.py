"""Connections as the least-privileged app role, and tenant-scoped transactions.

Every statement the app runs on tenant data goes through `Database.tenant(tenant_id)`, which opens a
transaction and sets `engram.tenant_id` with `set_config(..., true)`: the setting dies with the
transaction, so a pooled connection never carries one tenant's id into another request.
"""

from __future__ import annotations

import select
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from engram.db.party import EVERYONE, NOBODY, Party

__all__ = ["EVERYONE", "NOBODY", "Database", "Party", "TenantTx", "UnitOfWork"]

TenantTx = psycopg.Cursor[dict[str, Any]]


@dataclass(frozen=True)
class UnitOfWork:
    """One tenant's transaction, opened by the caller and handed down: everything written through it
    commits together, or nothing does. It carries its tenant, so a cursor never travels with another
    tenant's id."""

    cur: TenantTx
    tenant_id: UUID

    def act_for(self, party: Party) -> None:
        """From now on in this transaction, RLS sees the tenant's rows as `party` does (a batch whose
        items are made for different users)."""
        _set_scope(self.cur, self.tenant_id, party)

    def run_as(self, role: str) -> None:
        """From now on in this transaction, statements run as `role` (SET LOCAL ROLE): with its rights
        only, and under RLS as it is. An administrator's transaction that wrote what only an administrator
        may (a new tenant's row) goes on as the app role."""
        self.cur.execute(psycopg.sql.SQL("SET LOCAL ROLE {}").format(psycopg.sql.Identifier(role)))


def _set_scope(cur: TenantTx, tenant_id: UUID, party: Party) -> None:
    cur.execute(_scope(tenant_id, party))


def _check(conn: psycopg.Connection[Any]) -> None:
    """The pool's check before it hands a connection out, with a round trip only when one is due. An
    idle connection has nothing to read: one that has (the server's goodbye: a terminated session, a
    restart, a proxy's idle timeout while a Lambda was frozen) or no socket left is checked with an
    empty query, and replaced when that fails. The empty query every time cost 0.35-0.4 ms of a
    17 ms search here, and one more round trip behind RDS Proxy."""
    try:
        unsound = conn.closed or bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        unsound = True
    if unsound:
        ConnectionPool.check_connection(conn)


def _configure(role: str | None) -> Callable[[psycopg.Connection[Any]], None]:
    def configure(conn: psycopg.Connection[Any]) -> None:
        # No pgvector adapters: the app sends vectors as text literals (`%s::vector`) and reads only
        # distances, never a vector column. Registering them cost numpy's import at cold start and
        # four catalog round trips on every new connection.
        if role:
            # Used when the login user is an admin (a shared DATABASE_URL): drop to the app role.
            conn.execute(psycopg.sql.SQL("SET ROLE {}").format(psycopg.sql.Identifier(role)))
            conn.commit()

    return configure


class Database:
    """A small pool of connections as the app role. In Lambda the pool holds one connection,
    reused across warm invocations."""

    def __init__(
        self,
        conninfo: str | Callable[[], str],
        *,
        set_role: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        open_timeout: float = 30.0,
    ) -> None:
        # A callable conninfo lets IAM auth mint a fresh token for each new connection.
        self._pool = ConnectionPool(
            conninfo,
            kwargs={"prepare_threshold": None, "autocommit": False},
            min_size=min_size,
            max_size=max_size,
            configure=_configure(set_role),
            open=False,
            check=_check,
            name="engram",
        )
        self._opened = False
        # Until then the pool keeps retrying a connection that fails (with backoff): a server that is
        # starting or resuming is waited for.
        self._open_timeout = open_timeout

    def open(self) -> Database:
        if not self._opened:
            self._pool.open(wait=True, timeout=self._open_timeout)
            self._opened = True
        return self

    def close(self) -> None:
        if self._opened:
            self._pool.close()
            self._opened = False

    @contextmanager
    def tenant(self, tenant_id: UUID, party: Party = NOBODY, *, snapshot: bool = False) -> Iterator[TenantTx]:
        """A transaction in which RLS sees exactly one tenant's rows, as seen by `party` (by
        default: only what is shared across the tenant). `snapshot`: a read-only REPEATABLE READ
        transaction, so that several queries (an export) see one consistent state.

        The transaction begins in the message that sets the tenant: one round trip where psycopg's
        own BEGIN took two (each 0.1-0.2 ms here, more behind RDS Proxy)."""
        with self._transaction(snapshot, _scope(tenant_id, party)) as cur:
            yield cur

    def run(
        self,
        tenant_id: UUID,
        party: Party,
        statements: Sequence[psycopg.sql.Composable],
        settings: Mapping[str, str] | None = None,
    ) -> list[list[dict[str, Any]]]:
        """Read-only statements (with literals, no parameters) for one tenant, in one round trip: the
        tenant and party settings, `settings` and the statements go in one simple-protocol message,
        which PostgreSQL runs as one implicit transaction (so the settings, made transaction-local,
        hold for the statements and die with them, as in `tenant`). Each statement's rows."""
        self.open()
        prelude = [_scope(tenant_id, party)] + [
            psycopg.sql.SQL("SELECT set_config({}, {}, true)").format(
                psycopg.sql.Literal(name), psycopg.sql.Literal(value)
            )
            for name, value in (settings or {}).items()
        ]
        with self._pool.connection() as conn:
            conn.autocommit = True
            try:
                with conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(psycopg.sql.SQL("; ").join([*prelude, *statements]))
                    for _ in prelude:
                        cur.nextset()
                    results = [cur.fetchall()]
                    while cur.nextset():
                        results.append(cur.fetchall())
            finally:
                conn.autocommit = False
        return results

    def read(self, statement: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """One read that sees no tenant's rows (a SECURITY DEFINER lookup, such as an API key's), sent
        outside any transaction block: the statement is its own transaction, in one round trip where
        `transaction` takes three (BEGIN, the statement, COMMIT). Its rows."""
        self.open()
        with self._pool.connection() as conn:
            conn.autocommit = True
            try:
                with conn.cursor(row_factory=dict_row) as cur:
                    return cur.execute(statement, params).fetchall()
            finally:
                conn.autocommit = False

    @contextmanager
    def unit_of_work(self, tenant_id: UUID, party: Party = NOBODY) -> Iterator[UnitOfWork]:
        """`tenant(tenant_id, party)` as a UnitOfWork, for code that passes the transaction down."""
        with self.tenant(tenant_id, party) as cur:
            yield UnitOfWork(cur, tenant_id)

    @contextmanager
    def transaction(self, *, snapshot: bool = False) -> Iterator[TenantTx]:
        """A transaction with no tenant set: tenant tables show no rows in it."""
        with self._transaction(snapshot) as cur:
            yield cur

    @contextmanager
    def _transaction(self, snapshot: bool, *prelude: psycopg.sql.Composable) -> Iterator[TenantTx]:
        """BEGIN (read-only REPEATABLE READ if `snapshot`) and `prelude` in one message. It commits when
        the block ends, and rolls back when it raises, or when one of its statements failed (then it
        raises: PostgreSQL would answer COMMIT with a silent ROLLBACK, dropping the block's writes unseen
        if its caller caught the error and carried on)."""
        self.open()
        begin = _BEGIN_SNAPSHOT if snapshot else _BEGIN
        with self._pool.connection() as conn:
            conn.autocommit = True  # the transaction is begun and ended here, not by psycopg
            try:
                with conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(psycopg.sql.SQL("; ").join([begin, *prelude]))
                    try:
                        yield cur
                    except BaseException:
                        with suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                        raise
                    if conn.info.transaction_status == TransactionStatus.INERROR:
                        conn.execute("ROLLBACK")
                        raise psycopg.errors.InFailedSqlTransaction(
                            "a statement of this transaction failed, so none of it was committed"
                        )
                    conn.execute("COMMIT")
            finally:
                with suppress(psycopg.Error):
                    conn.autocommit = False


_BEGIN = psycopg.sql.SQL("BEGIN")
_BEGIN_SNAPSHOT = psycopg.sql.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def _scope(tenant_id: UUID, party: Party) -> psycopg.sql.Composed:
    """The transaction-local settings RLS reads: the tenant, and the party the request is made for."""
    return psycopg.sql.SQL(
        "SELECT set_config('engram.tenant_id', {}, true), set_config('engram.user_id', {}, true), "
        "set_config('engram.agent_id', {}, true), set_config('engram.all_users', {}, true)"
    ).format(
        psycopg.sql.Literal(str(tenant_id)),
        psycopg.sql.Literal(party.user_id or ""),
        psycopg.sql.Literal(party.agent_id or ""),
        psycopg.sql.Literal("on" if party.all_users else ""),
    )
