"""engram-mcp: Engram's memory as MCP tools, for Claude Desktop, Cursor and any MCP client.

    engram-mcp                                   # stdio (what desktop clients launch)
    engram-mcp --transport streamable-http --port 8765
    ENGRAM_URL=... ENGRAM_API_KEY=... engram-mcp --user-id alice --container assistant

Configured by --url/--api-key or ENGRAM_URL/ENGRAM_API_KEY. Optionally pinned to a user (every memory
it stores is that user's, private to them, and every read is made for them) and to a container (writes
go there, reads look there and below). Failures come back as tool errors with Engram's code and
message, for the model to act on; the server keeps running.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from engram_client._base import NOT_GIVEN, NotGiven
from engram_client.client import AsyncEngram
from engram_client.errors import EngramError, NotFoundError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

INSTRUCTIONS = """Long-term memory (Engram). At the start of a task, call get_profile (and recall with
the user's request) to know what is already known; before answering a message, get_context gives what
bears on it (memories, facts, procedures, the conversation, the plan) in one text. When the user states
a durable fact, preference or decision, call remember with one self-contained sentence. When something
remembered turns out wrong or out of date, call supersede with the memory's id. Use
working_get/working_set for scratch state shared between steps or agents, and match_procedures for rules
on how to act in a situation."""

MemoryType = Literal["fact", "preference", "episode", "insight", "task", "procedure"]


@dataclass(frozen=True)
class Pin:
    user_id: str | None = None
    container: str | None = None

    def container_for(self, asked: str | None) -> str | None:
        if self.container is None or asked is None or asked == self.container:
            return self.container or asked
        if asked.startswith(self.container + "."):
            return asked
        raise ValueError(f"this server is pinned to container {self.container!r}: use it or one below it")

    def scope_for(self, asked: str | None) -> str | None:
        container = self.container_for(asked)
        return None if container is None else (container if asked else f"{container}.*")

    def covers(self, container: str) -> bool:
        """Whether a memory in `container` is the pinned container's (or below it)."""
        pinned = self.container
        return pinned is None or container == pinned or container.startswith(pinned + ".")

    def check(self, memory_id: str, container: str) -> None:
        """A memory outside the pinned container is not this server's to change."""
        if not self.covers(container):
            raise ValueError(
                f"this server is pinned to container {self.container!r}: memory {memory_id} is in "
                f"{container!r}, outside it"
            )


HINTS = {
    "not_found": "check the id: recall and remember return ids",
    "version_conflict": "someone wrote in between: read it again (working_get) and retry with its version",
    "validation_error": "fix the argument named in the message and call again",
    "unauthorized": "the server's API key is missing: set ENGRAM_API_KEY",
    "forbidden": "the server's API key is unknown or revoked",
}


# A miss means something else for these tools than an unknown memory id.
NOT_FOUND_BY_TOOL = {
    "working_get": "no such key in that scope, or it expired: working_set writes it",
    "working_set": "no such key in that scope, or it expired: write it without expected_version",
    "get_entity": "no such entity: look it up by name, or use recall",
    "explore_graph": "no such entity: give its name or the id get_entity returns",
}
# On a server pinned to a user, another user's key is a miss too, and working_set of it is refused:
# "working_set writes it" alone would send the model into that refusal.
NOT_FOUND_FOR_PINNED_USER = {
    "working_get": "no such key for user {user!r} in that scope: it does not exist or expired (working_set "
    "writes it), or it is another user's (this server can neither read nor write it: use another key or "
    "scope)",
}


def _actionable(
    tool: Callable[..., Awaitable[dict[str, Any]]], pin: Pin = Pin()
) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Engram's errors and bad arguments as tool errors the model can read and act on (the SDK hides the
    message of any other exception)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return await tool(*args, **kwargs)
        except EngramError as exc:
            raise ToolError(_explained(exc, tool.__name__, pin)) from exc
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    return run


def _explained(exc: EngramError, tool: str, pin: Pin) -> str:
    if pin.user_id is not None and exc.field == "user_id":
        # The API's advice (make the request without user_id, or for the owner) is not the model's to
        # follow: the server is pinned. What it refused, and why, is.
        refused = exc.message.split("; ", 1)[0]
        return (
            f"{exc.status} {exc.code}: {refused} (this server acts for user {pin.user_id!r} only: it "
            "changes only what is theirs)"
        )
    hint = None
    if exc.code == "not_found":
        pinned = NOT_FOUND_FOR_PINNED_USER.get(tool) if pin.user_id is not None else None
        hint = pinned.format(user=pin.user_id) if pinned else NOT_FOUND_BY_TOOL.get(tool)
    hint = hint or HINTS.get(exc.code)
    return f"{exc}" + (f" ({hint})" if hint else "")


def _memory(found: Any) -> dict[str, Any]:
    return {
        "id": str(found.id),
        "content": found.content,
        "memory_type": found.memory_type,
        "container": found.container,
        "tags": list(found.tags),
        "valid_from": found.valid_from.isoformat(),
    }


def build_server(engram: AsyncEngram, pin: Pin = Pin()) -> MCPServer:
    """The MCP server with Engram's tools, over `engram`."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("engram", instructions=INSTRUCTIONS)
    actionable = functools.partial(_actionable, pin=pin)
    # Pinned to a user: what the server stores is that user's and private to them; reads are made for them.
    user: str | NotGiven = pin.user_id or NOT_GIVEN
    visibility: Literal["private"] | NotGiven = "private" if pin.user_id else NOT_GIVEN

    async def container_of(memory_id: str) -> str | None:
        try:
            return (await engram.get_memory(memory_id, user_id=user)).container
        except NotFoundError:
            return None

    async def pinned_relations(relations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The relations a container-pinned server shows: those its container's memories state, and
        those no memory states (made through the API); none taken from a memory elsewhere."""
        if pin.container is None:
            return relations
        sources = sorted({r["source_memory_id"] for r in relations if r.get("source_memory_id")})
        containers = dict(zip(sources, await asyncio.gather(*map(container_of, sources)), strict=True))
        return [
            r
            for r in relations
            if not r.get("source_memory_id")
            or ((found := containers[r["source_memory_id"]]) is not None and pin.covers(found))
        ]

    @server.tool()
    @actionable
    async def remember(
        content: Annotated[
            str, Field(description="one self-contained statement, e.g. 'Alice prefers aisle seats'")
        ],
        memory_type: Annotated[MemoryType, Field(description="what kind of memory it is")] = "fact",
        tags: Annotated[list[str] | None, Field(description="short labels to filter by later")] = None,
        container: Annotated[str | None, Field(description="namespace such as 'crm.contacts'")] = None,
    ) -> dict[str, Any]:
        """Store something worth remembering across conversations: a fact, preference, decision or event
        about the user or the task. Searchable at once. Returns the memory with its id."""
        stored = await engram.create_memory(
            content=content,
            memory_type=memory_type,
            tags=tags or [],
            container=pin.container_for(container) or NOT_GIVEN,
            user_id=user,
            visibility=visibility,
        )
        return _memory(stored)

    @server.tool()
    @actionable
    async def recall(
        query: Annotated[str, Field(description="what you want to know, in natural language")],
        limit: Annotated[int, Field(ge=1, le=50, description="how many memories at most")] = 10,
        container: Annotated[
            str | None, Field(description="'a.b' exactly, or 'a.b.*' with its children")
        ] = None,
    ) -> dict[str, Any]:
        """Search long-term memory (meaning, words and the entities named) and return the most relevant
        memories, best first, each with its id and a score from 0 to 1."""
        found = await engram.search(
            query=query,
            limit=limit,
            scope="memories",
            container=pin.scope_for(container) or NOT_GIVEN,
            user_id=user,
        )
        return {"results": [{**_memory(r), "score": round(r.score, 4)} for r in found.results]}

    @server.tool()
    @actionable
    async def get_profile(
        query: Annotated[str | None, Field(description="the task at hand, to add memories about it")] = None,
        user_id: Annotated[
            str | None, Field(description="whose profile (ignored when the server is pinned)")
        ] = None,
        max_tokens: Annotated[int, Field(ge=50, le=8000, description="budget for the summary")] = 1000,
    ) -> dict[str, Any]:
        """The user's profile, prompt-ready: their stable facts and preferences, recent episodes and tasks
        and, with a query, the memories relevant to it, each line ending with its memory id. Call it at
        the start of a conversation."""
        subject = pin.user_id or user_id
        if subject is None and pin.container is None:
            raise ValueError("name whose profile: pass user_id (this server is not pinned to a user)")
        profile = await engram.get_profile(
            user_id=subject,
            q=query,
            max_tokens=max_tokens,
            container=f"{pin.container}.*" if pin.container else NOT_GIVEN,
        )
        return {"context": profile.context, "token_estimate": profile.token_estimate}

    @server.tool()
    @actionable
    async def get_context(
        query: Annotated[str, Field(description="what you are about to do or answer: the user's message")],
        session_id: Annotated[
            str | None, Field(description="the conversation: adds its summary and last messages")
        ] = None,
        plan_id: Annotated[str | None, Field(description="a plan: adds its status and working state")] = None,
        max_tokens: Annotated[int, Field(ge=50, le=8000, description="budget for the text")] = 1000,
        user_id: Annotated[
            str | None, Field(description="whose facts (ignored when the server is pinned)")
        ] = None,
    ) -> dict[str, Any]:
        """Everything for this turn in one prompt-ready text: the memories most relevant to the query, the
        user's current facts and preferences, the procedures that apply and, with session_id or plan_id,
        the conversation so far and the plan's state, best first within the budget. Each line ends with
        the id it came from. Call it before answering a message."""
        found = await engram.get_context(
            query=query,
            user_id=pin.user_id or user_id or NOT_GIVEN,
            session_id=session_id or NOT_GIVEN,
            plan_id=plan_id or NOT_GIVEN,
            max_tokens=max_tokens,
            container=f"{pin.container}.*" if pin.container else NOT_GIVEN,
        )
        return {"context": found.context, "token_estimate": found.token_estimate, "omitted": found.omitted}

    @server.tool()
    @actionable
    async def forget(
        memory_id: Annotated[str, Field(description="the id recall or remember returned")],
    ) -> dict[str, Any]:
        """Delete a memory for good (the user asked to forget it, or it was stored by mistake). To correct
        a memory, use supersede instead, which keeps the history. A server pinned to a user forgets only
        that user's own memories: a shared one or another user's is refused. A server pinned to a
        container forgets only memories there (or below it)."""
        if pin.container is not None:
            pin.check(memory_id, (await engram.get_memory(memory_id, user_id=user)).container)
        await engram.delete_memory(memory_id, user_id=user)
        return {"deleted": memory_id}

    @server.tool()
    @actionable
    async def supersede(
        memory_id: Annotated[str, Field(description="the id of the memory that is now wrong or outdated")],
        content: Annotated[str, Field(description="the corrected statement")],
    ) -> dict[str, Any]:
        """Replace a memory that is no longer true (e.g. the user moved): the new one becomes current and the
        old one stays as history. Returns the new memory. A server pinned to a user supersedes only that
        user's own memories: a shared one or another user's is refused; one pinned to a container, only
        memories there (or below it)."""
        old = await engram.get_memory(memory_id, user_id=user)
        pin.check(memory_id, old.container)
        stored = await engram.create_memory(
            content=content,
            supersedes=memory_id,
            container=old.container,
            memory_type=old.memory_type,
            tags=list(old.tags),
            user_id=user,
            # the replacement keeps the memory's visibility: only a memory of the same owner and
            # visibility supersedes it (a pinned user's memory shared with the tenant stays shared)
            visibility=old.visibility if pin.user_id else NOT_GIVEN,
        )
        return _memory(stored)

    @server.tool()
    @actionable
    async def working_get(
        scope: Annotated[str, Field(description="a plan or agent scope, e.g. 'plan-42'")],
        key: Annotated[str, Field(description="the key in that scope")],
    ) -> dict[str, Any]:
        """Read a value of working memory (short-lived state shared between steps or agents), with its
        version for a later conditional working_set. A server pinned to a user reads that user's keys and
        keys of no user, never another user's."""
        item = await engram.get_working(scope, key, user_id=user)
        return {"scope": scope, "key": key, "value": item.value, "version": item.version}

    @server.tool()
    @actionable
    async def working_set(
        scope: Annotated[str, Field(description="a plan or agent scope, e.g. 'plan-42'")],
        key: Annotated[str, Field(description="the key in that scope")],
        value: Annotated[Any, Field(description="any JSON value")],
        expected_version: Annotated[
            int | None, Field(description="write only if the value is still at this version (0: absent)")
        ] = None,
        ttl_seconds: Annotated[
            int | None, Field(ge=1, description="forget the value after this long")
        ] = None,
    ) -> dict[str, Any]:
        """Write a value of working memory. With expected_version the write happens only if nobody wrote
        since you read it; on a conflict, read again and retry. A server pinned to a user writes keys that
        are that user's (a key of no user becomes theirs), never another user's."""
        item = await engram.set_working(
            scope,
            key,
            value=value,
            ttl_seconds=ttl_seconds or NOT_GIVEN,
            if_match=expected_version if expected_version is not None else NOT_GIVEN,
            # a pinned user's state is theirs: erased with them; the API refuses a key of another user
            user_id=user,
        )
        return {"scope": scope, "key": key, "version": item.version}

    @server.tool()
    @actionable
    async def match_procedures(
        situation: Annotated[str, Field(description="what is happening or what you are about to do")],
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
    ) -> dict[str, Any]:
        """Find the rules and worked examples stored for situations like this one, to follow them."""
        found = await engram.match_procedures(situation=situation, limit=limit)
        matches = [
            {"kind": m.kind, "trigger": m.trigger, "content": m.content, "similarity": round(m.similarity, 4)}
            for m in found.matches
        ]
        return {"matches": matches}

    @server.tool()
    @actionable
    async def ingest_document(
        content: Annotated[
            str | None, Field(description="the text itself (Markdown, HTML, CSV, ...)")
        ] = None,
        url: Annotated[str | None, Field(description="or a web page or file to fetch")] = None,
        filename: Annotated[str | None, Field(description="its name, which tells its type")] = None,
        container: Annotated[str | None, Field(description="where its chunks and memories go")] = None,
        wait: Annotated[bool, Field(description="wait until it is searchable (up to 2 minutes)")] = True,
    ) -> dict[str, Any]:
        """Add a document to memory: it is split into searchable chunks and memories are extracted from it.
        Give exactly one of content or url. A document is shared with the whole tenant (every user's
        recall may find its text); on a server pinned to a user it is that user's upload, erased with
        them."""
        target = pin.container_for(container) or NOT_GIVEN
        if not wait:
            accepted = await engram.create_document(
                content=content, url=url, filename=filename, container=target, user_id=user
            )
            return {"id": str(accepted.id), "status": accepted.status}
        done = await engram.create_document(
            content=content,
            url=url,
            filename=filename,
            container=target,
            user_id=user,
            wait=True,
            wait_timeout=120,
        )
        return {
            "id": str(done.id),
            "status": done.status,
            "chunks": done.chunk_count,
            "memories": done.memory_count,
        }

    @server.tool()
    @actionable
    async def get_entity(
        name: Annotated[
            str, Field(description="a person, place, organisation, ... by name or alias, or an id")
        ],
    ) -> dict[str, Any]:
        """Look up an entity of the knowledge graph: its type, aliases, what memories say about it and how
        it relates to other entities."""
        entity_id = name
        if not _looks_like_id(name):
            page = await engram.list_entities(q=name, limit=5)
            if not page.entities:
                raise ValueError(f"no entity named {name!r}; try recall instead")
            entity_id = str(page.entities[0].id)
        detail = await engram.get_entity(entity_id, limit=20, user_id=user)
        shown = detail.model_dump(mode="json", exclude_none=True)
        if pin.container is not None:  # what memories say about it: those of the pinned container only
            shown["observations"] = [o for o in shown.get("observations", []) if pin.covers(o["container"])]
            shown["relations"] = await pinned_relations(shown.get("relations", []))
        return shown

    @server.tool()
    @actionable
    async def explore_graph(
        entity: Annotated[str, Field(description="an entity's name or id")],
        depth: Annotated[int, Field(ge=1, le=3, description="how many hops")] = 1,
    ) -> dict[str, Any]:
        """The entities around one entity and the relations between them (who works where, lives where,
        ...), up to `depth` hops. A server pinned to a container shows the relations its container's
        memories state (and those no memory states), and the entities they reach."""
        subgraph = await engram.get_graph(entity=entity, depth=depth, limit=50, user_id=user)
        shown = subgraph.model_dump(mode="json", exclude_none=True)
        if pin.container is not None:  # relations its container's memories state, and the entities they reach
            shown["edges"] = await pinned_relations(shown["edges"])
            reached = {shown["root"]} | {e[end]["id"] for e in shown["edges"] for end in ("source", "target")}
            shown["nodes"] = [node for node in shown["nodes"] if node["id"] in reached]
        return shown

    return server


def _looks_like_id(text: str) -> bool:
    from uuid import UUID

    try:
        UUID(text)
    except ValueError:
        return False
    return True


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="engram-mcp", description="Engram's memory as MCP tools.")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="streamable-http: port to listen on")
    parser.add_argument("--url", default=None, help="the Engram API (default: ENGRAM_URL)")
    parser.add_argument("--api-key", default=None, help="an Engram API key (default: ENGRAM_API_KEY)")
    parser.add_argument("--user-id", default=os.environ.get("ENGRAM_MCP_USER_ID"), help="pin to this user")
    parser.add_argument(
        "--container", default=os.environ.get("ENGRAM_MCP_CONTAINER"), help="pin to this container"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        import mcp  # noqa: F401 - the extra must be installed
    except ImportError:
        print("engram-mcp needs the MCP SDK: pip install 'engram-client[mcp]'", file=sys.stderr)
        return 2
    try:
        engram = AsyncEngram(args.url, args.api_key)
    except EngramError as exc:
        print(f"engram-mcp: {exc.message}", file=sys.stderr)
        return 2
    server = build_server(engram, Pin(user_id=args.user_id, container=args.container))
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
