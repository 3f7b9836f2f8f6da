"""engram-mcp pinned to a container: writes go there (or below it), reads look there and below, and a
container outside it is refused with a message the model can act on."""

from __future__ import annotations

import pytest

from engram_client.mcp_server import Pin


def test_an_unpinned_server_uses_what_it_is_asked() -> None:
    assert Pin().container_for(None) is None and Pin().container_for("crm") == "crm"
    assert Pin().scope_for(None) is None and Pin().scope_for("crm.*") == "crm.*"


def test_a_pinned_server_writes_to_its_container_or_below() -> None:
    pin = Pin(user_id="alice", container="assistant")

    assert pin.container_for(None) == "assistant"
    assert pin.container_for("assistant.notes") == "assistant.notes"
    assert pin.scope_for(None) == "assistant.*"


def test_a_pinned_server_refuses_another_container() -> None:
    with pytest.raises(ValueError, match="pinned to container 'assistant'"):
        Pin(container="assistant").container_for("crm")
    with pytest.raises(ValueError, match="pinned"):
        Pin(container="assistant").container_for("assistant-2")
