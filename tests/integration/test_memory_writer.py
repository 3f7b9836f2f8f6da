"""MemoryWriter: the one place memories are stored and linked. What it stores joins the caller's unit
of work, and the same text is stored once among the peers the caller names."""

from __future__ import annotations

import pytest

from engram import deps
from engram.db.database import EVERYONE, Party
from engram.local.stack import LocalDatabase
from engram.memories.new_memory import Mentions, NewMemory, Owner, Peers
from engram.memories.writer import MemoryWriter
from engram.memory_extraction import ExtractedEntity, ExtractedRelation
from engram.tenants.service import IssuedKey

CONVERSATION = Peers(same_owner=True)
DOCUMENT = Peers(same_owner=False)


@pytest.fixture
def writer() -> MemoryWriter:
    return deps.memory_writer()


def count(local_db: LocalDatabase, tenant: IssuedKey, table: str) -> int:
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        return int(cur.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"])  # noqa: S608


def test_a_memory_and_its_links_roll_back_with_the_callers_unit_of_work(
    writer: MemoryWriter, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given a memory that names two people and a relation between them
    memory = NewMemory(
        "Alice works for Initech.",
        "crm",
        mentions=Mentions(
            [ExtractedEntity(name="Alice", type="person"), ExtractedEntity(name="Initech", type="org")],
            [ExtractedRelation(source="Alice", relation="works_for", target="Initech")],
            subject="Alice",
        ),
    )

    # When the caller's unit of work fails after the writer stored it
    with pytest.raises(RuntimeError), local_db.app.unit_of_work(tenant.tenant_id) as uow:
        stored = writer.store(uow, [memory], DOCUMENT)
        assert stored[0].created
        assert count(local_db, tenant, "memories") == 0  # not visible outside the unit of work yet
        raise RuntimeError("the step failed after storing")

    # Then nothing of it is left: no memory, entity, mention or relation
    for table in ("memories", "entities", "entity_mentions", "entity_relations"):
        assert count(local_db, tenant, table) == 0, table


def test_the_same_text_is_one_memory_among_one_owners_peers_and_two_across_owners(
    writer: MemoryWriter, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    ann, bob = Owner("ann", "private"), Owner("bob", "private")
    said = "I live in Porto."

    with local_db.app.unit_of_work(tenant.tenant_id, EVERYONE) as uow:
        first = writer.store(uow, [NewMemory(said, "chat", owner=ann)], CONVERSATION)
    with local_db.app.unit_of_work(tenant.tenant_id, EVERYONE) as uow:
        again, other = writer.store(
            uow, [NewMemory(said, "chat", owner=ann), NewMemory(said, "chat", owner=bob)], CONVERSATION
        )

    assert first[0].created and not again.created and again.id == first[0].id
    assert other.created and other.id != first[0].id
    assert count(local_db, tenant, "memories") == 2


def test_a_documents_fact_reuses_a_shared_memory_with_the_same_text_of_any_owner(
    writer: MemoryWriter, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given a memory a user shared with the whole tenant
    with local_db.app.unit_of_work(tenant.tenant_id, Party(user_id="ann")) as uow:
        (shared,) = writer.store(
            uow, [NewMemory("Invoices are due in 30 days.", "kb", owner=Owner("ann"))], CONVERSATION
        )

    # When a document states the same, and another document states something new
    with local_db.app.unit_of_work(tenant.tenant_id) as uow:
        same, new = writer.store(
            uow,
            [NewMemory("Invoices are due in 30 days.", "kb"), NewMemory("Refunds take a week.", "kb")],
            DOCUMENT,
        )

    # Then the first stands for the document's fact, and only the second is new
    assert not same.created and same.id == shared.id
    assert new.created and new.row is not None and new.row["user_id"] is None
