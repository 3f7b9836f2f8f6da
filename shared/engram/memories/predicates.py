"""Which memory rows count, defined once: current, live (not expired), in a container scope, valid in
a time scope, matching search filters (the owner, `filters.user_id`, among them). Every repository
that reads memories builds its WHERE clause from these (as SQL fragments on a table alias, `m` by
default).

Who may see a row is not here: RLS decides it (party_scope, migrations/0002). The PL/pgSQL candidate
functions, which run beside RLS, build the same predicates, visibility included, with
memory_scope_sql (migrations/0010, 0012); tests/integration/test_predicate_parity.py checks that both select
the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

if TYPE_CHECKING:  # only annotations: the cleanup function loads no API models
    from engram.memories.models import ContainerQuery, SearchFilters


@dataclass(frozen=True)
class ContainerScope:
    """`name` exactly, or with `include_children` also everything below it ('a.b.*')."""

    name: str
    include_children: bool
    # With `include_children`: the single range [name, name + '/'), an upper bound that also takes
    # siblings named 'name-...' (one index range is cheaper to count than an OR).
    as_one_range: bool = False

    @classmethod
    def parse(cls, query: ContainerQuery | None) -> ContainerScope | None:
        if query is None:
            return None
        if query.endswith(".*"):
            return cls(query[:-2], True)
        return cls(query, False)

    @classmethod
    def subtree(cls, name: str) -> ContainerScope:
        return cls(name, True)


@dataclass(frozen=True)
class TimeScope:
    """Which versions count: current ones (default), those valid at `as_of`, or all but reverted."""

    as_of: datetime | None = None
    include_history: bool = False


CURRENT = TimeScope()


def _col(alias: str, column: str) -> sql.Composable:
    return sql.Identifier(alias, column)


def live(alias: str = "m", at: datetime | None = None) -> sql.Composable:
    """Not expired (now, or at `at`)."""
    when: sql.Composable = sql.SQL("now()") if at is None else sql.Literal(at)
    return sql.SQL("({e} IS NULL OR {e} > {when})").format(e=_col(alias, "expires_at"), when=when)


def expired(alias: str = "m") -> sql.Composable:
    """Past its expiry: never read again, deleted by cleanup (the complement of `live`)."""
    return sql.SQL("{e} IS NOT NULL AND {e} <= now()").format(e=_col(alias, "expires_at"))


def current(alias: str = "m") -> sql.Composable:
    """The latest version, not expired: what a memory read sees unless it asks for history."""
    return sql.SQL("{latest} AND {live}").format(latest=_col(alias, "is_latest"), live=live(alias))


def in_time(time: TimeScope, alias: str = "m") -> sql.Composable:
    """Current versions by default; those valid at `as_of`; or every version not reverted."""
    if time.as_of is not None:
        t = sql.Literal(time.as_of)
        return sql.SQL(
            "{reverted} IS NULL AND {valid_from} <= {t} "
            "AND ({valid_to} IS NULL OR {valid_to} > {t}) AND {live}"
        ).format(
            reverted=_col(alias, "reverted_at"),
            valid_from=_col(alias, "valid_from"),
            valid_to=_col(alias, "valid_to"),
            t=t,
            live=live(alias, time.as_of),
        )
    if time.include_history:
        return sql.SQL("{reverted} IS NULL AND {live}").format(
            reverted=_col(alias, "reverted_at"), live=live(alias)
        )
    return current(alias)


def in_container(scope: ContainerScope | None, alias: str = "m", column: str = "container") -> sql.Composable:
    """The index-friendly predicate for a container scope. A range on the "C"-collated name: unlike
    LIKE, its operators are leakproof, so the B-tree index stays usable under RLS ('.' + 1 = '/')."""
    if scope is None:
        return sql.SQL("true")
    col = _col(alias, column)
    name = sql.Literal(scope.name)
    if not scope.include_children:
        return sql.SQL("{col} = {name}").format(col=col, name=name)
    hi = sql.Literal(scope.name + "/")
    if scope.as_one_range:
        return sql.SQL("({col} >= {name} AND {col} < {hi})").format(col=col, name=name, hi=hi)
    return sql.SQL("({col} = {name} OR ({col} > {lo} AND {col} < {hi}))").format(
        col=col, name=name, lo=sql.Literal(scope.name + "."), hi=hi
    )


def matching(filters: SearchFilters, alias: str = "m") -> list[sql.Composable]:
    """One clause per filter that is set."""
    clauses: list[sql.Composable] = []

    def add(column: str, operator: str, value: object) -> None:
        clauses.append(sql.SQL("{} " + operator).format(_col(alias, column), sql.Literal(value)))

    if filters.memory_type:
        add("memory_type", "= ANY({}::text[])", list(filters.memory_type))
    if filters.tags:
        add("tags", "@> {}::text[]", list(filters.tags))
    if filters.agent_id is not None:
        add("agent_id", "= {}", filters.agent_id)
    if filters.conversation_id is not None:
        add("conversation_id", "= {}", filters.conversation_id)
    if filters.metadata:
        add("metadata", "@> {}::jsonb", Jsonb(filters.metadata))
    if filters.user_id is not None:
        add("user_id", "= {}", filters.user_id)
    return clauses


def where(
    tenant_id: UUID,
    container: ContainerScope | None,
    filters: SearchFilters,
    time: TimeScope | None = CURRENT,
    alias: str = "m",
) -> sql.Composable:
    """The tenant, the time scope, the container scope and the filters. `time` None: versions of every
    time, superseded, reverted and expired ones included."""
    clauses: list[sql.Composable] = [
        sql.SQL("{} = {}").format(_col(alias, "tenant_id"), sql.Literal(tenant_id))
    ]
    if time is not None:
        clauses.append(in_time(time, alias))
    clauses.append(in_container(container, alias))
    clauses.extend(matching(filters, alias))
    return sql.SQL(" AND ").join(clauses)


def of_user(user_id: str | sql.Composable | None, alias: str = "m") -> sql.Composable:
    """Memories of this user (with None, of no user: shared ones): whose a memory is. The one rule for
    which memories a request made for a user may change (PATCH, DELETE, revert: only that user's), and
    half of `same_owner`."""
    return sql.SQL("{user} IS NOT DISTINCT FROM {u}").format(user=_col(alias, "user_id"), u=_sql(user_id))


def same_owner(
    user_id: str | sql.Composable | None, visibility: str | sql.Composable, alias: str = "m"
) -> sql.Composable:
    """Memories of this user (or of none) with this visibility: the one rule for which memories a write
    may retire (graph-link's peers, an explicit `supersedes`) and which an upsert may match. The owner
    is given as values, or as SQL (another row's columns, `owner_of`; placeholders)."""
    return sql.SQL("{user} AND {visibility} = {v}").format(
        user=of_user(user_id, alias),
        visibility=_col(alias, "visibility"),
        v=_sql(visibility),
    )


def owner_of(alias: str) -> tuple[sql.Composable, sql.Composable]:
    """The owner of the row `alias` (user_id, visibility), for `same_owner`."""
    return _col(alias, "user_id"), _col(alias, "visibility")


def _sql(value: str | sql.Composable | None) -> sql.Composable:
    return value if isinstance(value, sql.Composable) else sql.Literal(value)
