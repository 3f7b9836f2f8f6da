"""engram-mcp, listed and called with the official MCP client over stdio (the console script as a
subprocess, pinned to a user) against the local stack, and once over streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from engram.tenants.service import IssuedKey
from engram_client import Engram

pytestmark = pytest.mark.anyio
ENGRAM_MCP = str(Path(sys.executable).with_name("engram-mcp"))
# The console script runs this checkout's client, not the one installed in the environment (a shared
# virtualenv may have another checkout's installed).
CLIENT_PATH = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "shared" / "client")}
TOOLS = {
    "remember",
    "recall",
    "get_profile",
    "get_context",
    "forget",
    "supersede",
    "working_get",
    "working_set",
    "match_procedures",
    "ingest_document",
    "get_entity",
    "explore_graph",
}


@pytest.fixture
async def mcp(live_url: str, tenant: IssuedKey) -> AsyncIterator[Client]:
    server = StdioServerParameters(
        command=ENGRAM_MCP,
        args=["--user-id", "alice"],
        env={"ENGRAM_URL": live_url, "ENGRAM_API_KEY": tenant.plaintext, **CLIENT_PATH},
    )
    async with Client(server, read_timeout_seconds=120) as client:
        yield client


@pytest.fixture
async def mcp_in_assistant(live_url: str, tenant: IssuedKey) -> AsyncIterator[Client]:
    """The server pinned to alice and to the container `assistant`."""
    server = StdioServerParameters(
        command=ENGRAM_MCP,
        args=["--user-id", "alice", "--container", "assistant"],
        env={"ENGRAM_URL": live_url, "ENGRAM_API_KEY": tenant.plaintext, **CLIENT_PATH},
    )
    async with Client(server, read_timeout_seconds=120) as client:
        yield client


def _result(called: Any) -> dict[str, Any]:
    assert not called.is_error, called.content
    if called.structured_content is not None:
        return dict(called.structured_content)
    data: dict[str, Any] = json.loads(called.content[0].text)
    return data


async def test_the_tools_are_listed_with_descriptions_a_model_can_act_on(mcp: Client) -> None:
    listed = await mcp.list_tools()

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 60, tool.name
        properties = tool.input_schema["properties"]
        assert all("description" in p for name, p in properties.items() if name != "limit"), tool.name


async def test_remember_recall_supersede_and_forget_for_the_pinned_user(mcp: Client, engram: Engram) -> None:
    stored = _result(await mcp.call_tool("remember", {"content": "Alice lives in Lisbon", "tags": ["home"]}))
    recalled = _result(await mcp.call_tool("recall", {"query": "where does Alice live?"}))
    moved = _result(
        await mcp.call_tool("supersede", {"memory_id": stored["id"], "content": "Alice lives in Porto"})
    )
    context = _result(await mcp.call_tool("get_profile", {"query": "where does Alice live"}))
    forgotten = _result(await mcp.call_tool("forget", {"memory_id": moved["id"]}))

    assert recalled["results"][0]["id"] == stored["id"] and recalled["results"][0]["score"] > 0
    assert "Porto" in context["context"] and forgotten == {"deleted": moved["id"]}
    # pinned to alice: her memories are private to her
    assert engram.get_memory(stored["id"], user_id="alice").visibility == "private"
    assert engram.search(query="where does Alice live?").results == []


async def test_get_context_gives_the_pinned_user_s_turn_context_with_the_conversation(
    mcp: Client, engram: Engram
) -> None:
    # Given alice's allergy, bob's, and alice's conversation so far (clients call get_context by name)
    engram.create_memory(
        content="Alice is allergic to peanuts", user_id="alice", visibility="private", extract="none"
    )
    engram.create_memory(
        content="Bob is allergic to shellfish", user_id="bob", visibility="private", extract="none"
    )
    session = engram.create_session(user_id="alice")
    engram.add_messages(
        session.id, messages=[{"role": "user", "content": "Book us a Thai place tonight"}], user_id="alice"
    )

    # When alice's server gets the context of her turn, with the conversation
    found = _result(
        await mcp.call_tool(
            "get_context",
            {"query": "what should the restaurant know about allergies?", "session_id": str(session.id)},
        )
    )

    # Then it is POST /v1/context's answer for alice: her facts and the conversation, not bob's
    assert "peanuts" in found["context"] and "shellfish" not in found["context"]
    assert "## The conversation so far" in found["context"] and "Thai place" in found["context"]
    assert 0 < found["token_estimate"] <= 1000 and found["omitted"] >= 0


async def test_a_pinned_user_cannot_forget_a_shared_memory(mcp: Client, engram: Engram) -> None:
    # Given a memory shared with the tenant (no user_id), which the server pinned to alice can recall
    shared = engram.create_memory(content="The office opens at 9", extract="none")

    # When alice's server forgets it
    called = await mcp.call_tool("forget", {"memory_id": str(shared.id)})

    # Then it is a tool error saying why, and the memory stays
    assert called.is_error and "cannot change a shared memory" in called.content[0].text
    assert engram.get_memory(shared.id).is_latest is True


async def test_a_pinned_user_supersedes_their_memory_shared_with_the_tenant(
    mcp: Client, engram: Engram
) -> None:
    # Given alice's memory, visible to the whole tenant (as a document she uploads gives)
    hers = engram.create_memory(content="Alice's desk is by the window", user_id="alice", extract="none")

    # When the server pinned to alice supersedes it
    moved = _result(
        await mcp.call_tool(
            "supersede", {"memory_id": str(hers.id), "content": "Alice's desk is by the door"}
        )
    )

    # Then the replacement is hers with the same visibility, and the old one is history
    replacement = engram.get_memory(moved["id"], user_id="alice")
    assert (replacement.user_id, replacement.visibility) == ("alice", "tenant")
    assert engram.get_memory(hers.id).is_latest is False


async def test_errors_come_back_as_tool_errors_and_the_server_keeps_serving(mcp: Client) -> None:
    missing = await mcp.call_tool("forget", {"memory_id": "00000000-0000-4000-8000-000000000000"})
    bad = await mcp.call_tool("working_set", {"scope": "bad scope!", "key": "k", "value": 1})
    invalid = await mcp.call_tool("recall", {"query": "x", "limit": 500})

    assert missing.is_error and "not_found" in missing.content[0].text
    assert bad.is_error and "scope" in bad.content[0].text
    assert invalid.is_error
    assert set(t.name for t in (await mcp.list_tools()).tools) == TOOLS


async def test_working_memory_procedures_documents_and_the_graph(mcp: Client, engram: Engram) -> None:
    engram.create_procedure(trigger="a customer asks for a refund", content="check the order date first")
    engram.create_relation(
        source={"name": "Katherine Johnson", "entity_type": "person"},
        relation_type="works_for",
        target={"name": "NASA", "entity_type": "organization"},
    )

    written = _result(
        await mcp.call_tool("working_set", {"scope": "plan-9", "key": "step", "value": {"n": 1}})
    )
    stale = await mcp.call_tool(
        "working_set", {"scope": "plan-9", "key": "step", "value": {"n": 3}, "expected_version": 7}
    )
    read = _result(await mcp.call_tool("working_get", {"scope": "plan-9", "key": "step"}))
    matched = _result(await mcp.call_tool("match_procedures", {"situation": "the customer wants a refund"}))
    document = _result(
        await mcp.call_tool(
            "ingest_document", {"content": "# Policy\n\nRefunds within 30 days.", "filename": "p.md"}
        )
    )
    entity = _result(await mcp.call_tool("get_entity", {"name": "Katherine Johnson"}))
    graph = _result(await mcp.call_tool("explore_graph", {"entity": "Katherine Johnson"}))

    assert read == {"scope": "plan-9", "key": "step", "value": {"n": 1}, "version": written["version"]}
    assert stale.is_error and "version_conflict" in stale.content[0].text
    assert matched["matches"][0]["content"] == "check the order date first"
    assert document["status"] == "done" and document["chunks"] >= 1
    assert entity["entity"]["name"] == "Katherine Johnson"
    assert {node["name"] for node in graph["nodes"]} >= {"Katherine Johnson", "NASA"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(live_url: str, tenant: IssuedKey) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [ENGRAM_MCP, "--transport", "streamable-http", "--port", str(port), "--url", live_url],
        env={"ENGRAM_API_KEY": tenant.plaintext, "PATH": str(Path(sys.executable).parent), **CLIENT_PATH},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_the_same_tools_over_streamable_http(http_server: str) -> None:
    async with Client(http_server) as client:
        stored = _result(await client.call_tool("remember", {"content": "Bob takes his coffee black"}))
        recalled = _result(await client.call_tool("recall", {"query": "how does Bob take coffee"}))

    assert recalled["results"][0]["id"] == stored["id"]


async def test_a_server_pinned_to_a_container_changes_no_memory_outside_it(
    mcp_in_assistant: Client, engram: Engram
) -> None:
    # Given alice's memory in another container
    elsewhere = engram.create_memory(
        content="Alice's locker is 42", container="other", user_id="alice", extract="none"
    )

    # When her server pinned to `assistant` forgets it, or supersedes it
    forgot = await mcp_in_assistant.call_tool("forget", {"memory_id": str(elsewhere.id)})
    superseded = await mcp_in_assistant.call_tool(
        "supersede", {"memory_id": str(elsewhere.id), "content": "Alice's locker is 43"}
    )

    # Then both are tool errors naming the pin, and the memory stays current
    for called in (forgot, superseded):
        assert called.is_error and "pinned to container 'assistant'" in called.content[0].text
    assert engram.get_memory(elsewhere.id, user_id="alice").is_latest is True


async def test_a_server_pinned_to_a_container_reads_context_and_observations_from_it_only(
    mcp_in_assistant: Client, engram: Engram
) -> None:
    # Given what alice's memories say about Oslo, in her pinned container and in another one
    engram.create_memory(content="Alice flies to Oslo on Monday", container="assistant", user_id="alice")
    engram.create_memory(content="Alice keeps a flat in Oslo", container="notes", user_id="alice")

    # When her server pinned to `assistant` gets her context, and the entity Oslo
    context = _result(await mcp_in_assistant.call_tool("get_profile", {"query": "Oslo"}))["context"]
    turn = _result(await mcp_in_assistant.call_tool("get_context", {"query": "Oslo"}))["context"]
    entity = _result(await mcp_in_assistant.call_tool("get_entity", {"name": "Oslo"}))

    # Then only the pinned container's memories are in them
    assert "flies to Oslo" in context and "flat in Oslo" not in context
    assert "flies to Oslo" in turn and "flat in Oslo" not in turn
    assert {o["container"] for o in entity["observations"]} == {"assistant"}


async def test_a_server_pinned_to_a_user_neither_reads_nor_takes_another_users_working_key(
    mcp: Client, engram: Engram
) -> None:
    # Given bob's agent state in working memory
    engram.set_working("memory-store.state:planner:bob", "secrets", value={"pin": "4242"}, user_id="bob")

    # When alice's server reads it and writes over it
    read = await mcp.call_tool("working_get", {"scope": "memory-store.state:planner:bob", "key": "secrets"})
    written = await mcp.call_tool(
        "working_set", {"scope": "memory-store.state:planner:bob", "key": "secrets", "value": "tampered"}
    )

    # Then both are tool errors, and the key stays bob's, unchanged; the miss does not send the model to
    # working_set alone, which is refused: it says the key may be another user's
    assert read.is_error and "4242" not in read.content[0].text
    assert "for user 'alice'" in read.content[0].text and "another user's" in read.content[0].text
    assert written.is_error and "another user" in written.content[0].text
    kept = engram.get_working("memory-store.state:planner:bob", "secrets")
    assert kept.value == {"pin": "4242"} and kept.user_id == "bob"


async def test_a_document_ingested_by_a_server_pinned_to_a_user_is_theirs_and_erased_with_them(
    mcp: Client, engram: Engram
) -> None:
    # Given a document alice's server ingests
    ingested = _result(
        await mcp.call_tool(
            "ingest_document", {"content": "# Notes\n\nAlice's passport expires in May.", "filename": "a.md"}
        )
    )

    # When alice is erased
    uploaded_by = engram.get_document(ingested["id"]).user_id
    erased = engram.erase_user("alice", confirm=True)

    # Then the document was hers, and went with her
    assert uploaded_by == "alice"
    assert erased.documents == 1


async def test_a_server_pinned_to_a_container_shows_only_relations_its_container_states(
    mcp_in_assistant: Client, engram: Engram
) -> None:
    # Given Mallory's employer stated in another container, and her city in the pinned one
    engram.create_memory(content="Mallory Quinn works at Initech.", container="hr.private", extract="light")
    engram.create_memory(
        content="Mallory Quinn lives in Springfield.", container="assistant", extract="light"
    )

    # When the server pinned to `assistant` shows her entity and her graph
    entity = _result(await mcp_in_assistant.call_tool("get_entity", {"name": "Mallory Quinn"}))
    graph = _result(await mcp_in_assistant.call_tool("explore_graph", {"entity": "Mallory Quinn"}))

    # Then only the relation its container states is there, and Initech is not reached
    assert {r["target"]["name"] for r in entity["relations"]} == {"Springfield"}
    assert {e["target"]["name"] for e in graph["edges"]} == {"Springfield"}
    assert "Initech" not in {node["name"] for node in graph["nodes"]}


async def test_tool_errors_give_advice_the_model_can_follow(mcp: Client, engram: Engram) -> None:
    # Given a shared memory, which the server pinned to alice may not change
    shared = engram.create_memory(content="The office closes at 6", extract="none")

    # When alice's server reads a working key that does not exist, and forgets the shared memory
    missing = (await mcp.call_tool("working_get", {"scope": "plan-1", "key": "nothing"})).content[0].text
    refused = (await mcp.call_tool("forget", {"memory_id": str(shared.id)})).content[0].text

    # Then the miss speaks of keys, not ids; the refusal does not ask for a user_id the model cannot pass
    assert "not_found" in missing and "working_set" in missing and "recall and remember" not in missing
    assert "cannot change a shared memory" in refused and "without user_id" not in refused
    assert "acts for user 'alice' only" in refused
