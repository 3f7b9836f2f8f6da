"""link_memory, how the memory writer links a memory to its entities: deduplication (one person is
one entity, even across concurrent ingestions), observations, relations, idempotency, and
all-or-nothing inside a transaction. And the Paris/Berlin story, extracted through the openai provider
from a scripted server on loopback."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from engram import deps
from engram.errors import NotFound
from engram.graph import repo as graph_repo
from engram.graph.linking import link_memory
from engram.graph.models import LinkResult
from engram.graph.service import GraphService
from engram.local.stack import LocalDatabase
from engram.memories.models import MemoryCreate
from engram.memory_extraction import (
    ExtractedEntity,
    ExtractedRelation,
    ExtractionContext,
    LLMExtractor,
    chunk_text,
)
from engram.providers.llm_openai import OpenAILLM
from engram.settings import Settings
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.llm_fakes import scripted_openai_server

MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
TUESDAY = datetime(2025, 3, 4, 9, 0, tzinfo=UTC)
FRIDAY = datetime(2025, 3, 7, 9, 0, tzinfo=UTC)


@pytest.fixture
def graph() -> GraphService:
    return deps.graph_service()


def remember(tenant: IssuedKey, content: str, valid_from: datetime | None = None) -> UUID:
    return (
        deps.memory_service()
        .create(tenant.tenant_id, MemoryCreate(content=content, valid_from=valid_from, extract="none"))
        .id
    )


def link(
    tenant_id: UUID,
    memory_id: UUID,
    entities: list[ExtractedEntity],
    relations: list[ExtractedRelation],
    subject: str | None = None,
) -> LinkResult:
    """Link the memory to its entities in a transaction of its own (the writer does it in its caller's)."""
    with deps.database().tenant(tenant_id) as cur:
        return link_memory(cur, tenant_id, memory_id, entities, relations, subject)


def person(name: str, *aliases: str) -> ExtractedEntity:
    return ExtractedEntity(name=name, type="person", aliases=list(aliases))


def count(local_db: LocalDatabase, tenant: IssuedKey, table: str) -> int:
    with local_db.app.tenant(tenant.tenant_id) as cur:
        return int(cur.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"])  # noqa: S608


def test_spellings_of_one_person_are_one_entity_with_every_memory_as_observation(
    graph: GraphService, tenant: IssuedKey
) -> None:
    spellings = ["Dr. Alice Smith", "alice smith", "ALICE  SMITH"]
    memories = [remember(tenant, f"{name} called about the invoice") for name in spellings]

    results = [link(tenant.tenant_id, m, [person(n)], []) for m, n in zip(memories, spellings, strict=True)]

    assert len({r.entity_ids[0] for r in results}) == 1
    assert [r.created_entities for r in results] == [1, 0, 0]
    detail = graph.get_entity(tenant.tenant_id, results[0].entity_ids[0], limit=10)
    assert detail.entity.name == "Dr. Alice Smith"  # the first spelling seen names it
    assert {o.memory_id for o in detail.observations} == set(memories)
    assert graph.search_entities(tenant.tenant_id, "smith", None, 10, None).entities == [detail.entity]


def test_aliases_find_the_entity_and_an_untyped_name_joins_a_typed_one(
    graph: GraphService, tenant: IssuedKey
) -> None:
    first = link(
        tenant.tenant_id, remember(tenant, "Robert Jones joined."), [person("Robert Jones", "Bob")], []
    )
    by_alias = link(tenant.tenant_id, remember(tenant, "Bob called."), [person("bob")], [])
    untyped = link(
        tenant.tenant_id, remember(tenant, "Robert Jones left."), [ExtractedEntity(name="Robert Jones")], []
    )

    assert by_alias.entity_ids == untyped.entity_ids == first.entity_ids
    assert by_alias.created_entities == untyped.created_entities == 0


def test_a_heuristic_entity_gets_its_type_from_a_later_llm_extraction(
    graph: GraphService, tenant: IssuedKey
) -> None:
    guessed = link(tenant.tenant_id, remember(tenant, "Acme ships."), [ExtractedEntity(name="Acme")], [])
    typed = link(
        tenant.tenant_id,
        remember(tenant, "Acme hires."),
        [ExtractedEntity(name="ACME", type="organization")],
        [],
    )

    assert typed.entity_ids == guessed.entity_ids and typed.created_entities == 0
    assert graph.get_entity(tenant.tenant_id, typed.entity_ids[0], 1).entity.entity_type == "organization"


def test_same_name_different_type_are_different_entities(graph: GraphService, tenant: IssuedKey) -> None:
    memory = remember(tenant, "Paris Hilton visited Paris.")
    as_person = link(tenant.tenant_id, memory, [person("Paris")], [])
    as_place = link(tenant.tenant_id, memory, [ExtractedEntity(name="Paris", type="place")], [])

    assert as_person.entity_ids != as_place.entity_ids


def test_relations_take_their_time_and_confidence_from_the_memory_and_linking_is_idempotent(
    graph: GraphService, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    memory = deps.memory_service().create(
        tenant.tenant_id,
        MemoryCreate(content="Alice lives in Paris.", valid_from=MONDAY, confidence=0.7, extract="none"),
    )
    entities = [person("Alice"), ExtractedEntity(name="Paris", type="place")]
    relations = [ExtractedRelation(source="Alice", relation="lives_in", target="Paris")]

    first = link(tenant.tenant_id, memory.id, entities, relations, subject="Alice")
    again = link(tenant.tenant_id, memory.id, entities, relations, subject="Alice")

    assert (again.entity_ids, again.relation_ids, again.created_entities) == (
        first.entity_ids,
        first.relation_ids,
        0,
    )
    assert first.subject_entity_id == first.entity_ids[0]
    (relation,) = graph.get_entity(tenant.tenant_id, first.entity_ids[0], 10).relations
    assert relation.valid_from == MONDAY and relation.confidence == pytest.approx(0.7)
    assert relation.source_memory_id == memory.id and relation.current
    assert (count(local_db, tenant, "entity_mentions"), count(local_db, tenant, "entity_relations")) == (2, 1)
    with deps.database().tenant(tenant.tenant_id) as cur:
        assert graph_repo.subject_entities(cur, tenant.tenant_id, memory.id) == [first.entity_ids[0]]


def test_deleting_the_memory_removes_its_observations_relations_and_the_entities_only_it_named(
    graph: GraphService, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    memory = remember(tenant, "Alice knows Bob.")
    link(
        tenant.tenant_id,
        memory,
        [person("Alice"), person("Bob")],
        [ExtractedRelation(source="Alice", relation="knows", target="Bob")],
    )

    deps.memory_service().delete(tenant.tenant_id, memory)

    assert count(local_db, tenant, "entity_relations") == count(local_db, tenant, "entity_mentions") == 0
    assert count(local_db, tenant, "entities") == 0


def test_inside_the_callers_transaction_a_failure_leaves_no_partial_rows(
    graph: GraphService, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    memory = remember(tenant, "Carol works for Initech.")

    with pytest.raises(RuntimeError), local_db.app.tenant(tenant.tenant_id) as cur:
        link_memory(cur, tenant.tenant_id, memory, [person("Carol")], [], None)
        raise RuntimeError("the step failed after linking")

    assert count(local_db, tenant, "entities") == count(local_db, tenant, "entity_mentions") == 0


def test_an_unknown_or_foreign_memory_is_not_found_and_writes_nothing(
    graph: GraphService, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    theirs = remember(other_tenant, "Their secret.")

    for memory_id in (uuid4(), theirs):
        with pytest.raises(NotFound):
            link(tenant.tenant_id, memory_id, [person("Mallory")], [])

    assert count(local_db, tenant, "entities") == 0
    assert count(local_db, other_tenant, "entity_mentions") == 0


def test_concurrent_ingestions_of_a_new_name_create_one_entity(
    graph: GraphService, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    memories = [
        remember(tenant, "Dana Scully filed a report."),
        remember(tenant, "DANA SCULLY filed another."),
    ]
    first_linked, second_started = threading.Event(), threading.Event()
    results: dict[str, list[UUID]] = {}
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with local_db.app.tenant(tenant.tenant_id) as cur:
                results["first"] = link_memory(
                    cur, tenant.tenant_id, memories[0], [person("Dana Scully")], [], None
                ).entity_ids
                first_linked.set()
                second_started.wait(10)
                threading.Event().wait(0.3)  # let the second insert reach the unique index and wait there
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            first_linked.set()

    def second() -> None:
        try:
            first_linked.wait(10)
            second_started.set()
            results["second"] = link(tenant.tenant_id, memories[1], [person("dana scully")], []).entity_ids
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == []
    assert results["first"] == results["second"]
    assert count(local_db, tenant, "entities") == 1


# --- Alice moved: extraction through a loopback OpenAI-compatible server, linked, walked --------


def _answer(content: str, city: str, valid_from: str) -> str:
    return json.dumps(
        {
            "memories": [
                {
                    "content": content,
                    "memory_type": "fact",
                    "confidence": 0.9,
                    "entities": [{"name": "Alice", "type": "person"}, {"name": city, "type": "place"}],
                    "subject": "Alice",
                    "relations": [{"source": "Alice", "relation": "lives_in", "target": city}],
                    "valid_from": valid_from,
                    "expires_at": None,
                    "source_chunk": 0,
                }
            ]
        }
    )


def test_alice_moves_from_paris_to_berlin(
    graph: GraphService, tenant: IssuedKey, local_db: LocalDatabase, api: Api
) -> None:
    script = [
        _answer("Alice lives in Paris.", "Paris", "2025-03-03"),
        _answer("Alice moved to Berlin.", "Berlin", "2025-03-05"),
    ]
    linked = []
    with scripted_openai_server(list(script)) as server:
        extractor = LLMExtractor(
            OpenAILLM.from_settings(Settings(llm_provider="openai", llm_base_url=server.base_url))
        )
        for said, when in (("Alice lives in Paris", MONDAY), ("Alice moved to Berlin this week", FRIDAY)):
            text, chunks = chunk_text([(0, said)])
            (extracted,) = extractor.extract(
                text, ExtractionContext(reference_time=when, chunks=chunks)
            ).memories
            memory = deps.memory_service().create(
                tenant.tenant_id,
                MemoryCreate(content=extracted.content, valid_from=extracted.valid_from, extract="none"),
            )
            link(
                tenant.tenant_id,
                memory.id,
                extracted.entities,
                extracted.relations,
                extracted.subject,
            )
            linked.append(memory.id)
    paris_memory, _ = linked
    # The lead's supersession retires the Paris memory on Friday; here, as it will: is_latest, valid_to.
    with local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "UPDATE memories SET is_latest = false, valid_to = %s WHERE id = %s", (FRIDAY, paris_memory)
        )

    now = api.get("/v1/graph?entity=Alice&depth=1").json
    history = api.get("/v1/graph?entity=Alice&depth=1&include_history=true").json
    tuesday = api.get("/v1/graph?entity=Alice&depth=1&as_of=2025-03-04T09:00:00Z").json

    def edges(graph_json: dict) -> set[tuple[str, str, str, str | None]]:
        return {
            (e["source"]["name"], e["relation_type"], e["target"]["name"], e["valid_to"])
            for e in graph_json["edges"]
        }

    assert edges(now) == {("Alice", "lives_in", "Berlin", None)}
    assert edges(history) == {
        ("Alice", "lives_in", "Berlin", None),
        ("Alice", "lives_in", "Paris", "2025-03-07T09:00:00Z"),
    }
    assert edges(tuesday) == {("Alice", "lives_in", "Paris", "2025-03-07T09:00:00Z")}
    assert {n["name"] for n in now["nodes"]} == {"Alice", "Berlin"}
    alice = api.get(f"/v1/entities/{now['root']}").json
    assert len(alice["observations"]) == 2 and len(alice["relations"]) == 2
    assert [r.body["messages"][0]["role"] for r in server.requests] == ["system", "system"]


def test_hostile_names_from_an_llm_are_only_data_in_the_callers_tenant(
    graph: GraphService, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    memory = remember(tenant, "A document that tries to steer extraction.")
    hostile = [
        ExtractedEntity(name="'); DROP TABLE entities; --", type="person"),
        ExtractedEntity(name=f"tenant {other_tenant.tenant_id}", type="organization"),
    ]

    result = link(
        tenant.tenant_id,
        memory,
        hostile,
        [ExtractedRelation(source=hostile[0].name, relation="member_of", target=hostile[1].name)],
    )

    names = {e.name for e in graph.search_entities(tenant.tenant_id, None, None, 10, None).entities}
    assert names == {"'); DROP TABLE entities; --", f"tenant {other_tenant.tenant_id}"}
    assert len(result.relation_ids) == 1
    assert count(local_db, other_tenant, "entities") == count(local_db, other_tenant, "entity_relations") == 0
