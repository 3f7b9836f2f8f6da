"""Who within a tenant a request is made for: a plain value, importable without the database driver
(the API handlers build one from the query before any database work)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Party:
    """Who within the tenant a request is made for. Restrictive RLS policies (0002) narrow private
    memories to their user, conversations to their user/agent pair and private procedures to their
    agent. `all_users` is for maintenance that must see every user's rows of the one tenant
    (export, import, cleanup, deleting a container); it never crosses the tenant boundary."""

    user_id: str | None = None
    agent_id: str | None = None
    all_users: bool = False


NOBODY = Party()
EVERYONE = Party(all_users=True)
