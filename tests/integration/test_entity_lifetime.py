"""Who an entity is kept for (migrations/0033): an entity extraction made goes with the last memory
that refers to it; one the API was asked for by name stays until it is deleted itself."""

from __future__ import annotations

from typing import Any

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

ZORANA = "Zorana Petrovic works at Acme."


def _remember(api: Api, content: str, **body: Any) -> str:
    """A memory written with the offline extractor: its capitalised names become entities."""
    created = api.post("/v1/memories", {"content": content, "extract": "light", **body})
    assert created.status == 201, created.json
    return str(created.json["id"])


def _curated(local_db: LocalDatabase, tenant: IssuedKey, name: str) -> bool | None:
    """The entity's curated flag, read as the administrator (None: there is no such entity)."""
    with local_db.admin.transaction() as cur:
        row = cur.execute(
            "SELECT curated FROM entities WHERE tenant_id = %s AND name = %s", (tenant.tenant_id, name)
        ).fetchone()
    return None if row is None else bool(row["curated"])


# --- who made it ----------------------------------------------------------------------------------


def test_an_entity_extraction_made_is_uncurated_until_the_api_names_it(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an entity the offline extractor made from a memory
    _remember(api, ZORANA)
    extracted = _curated(local_db, tenant, "Zorana Petrovic")

    # When the API is asked for it by name
    named = api.post("/v1/entities", {"name": "Zorana Petrovic"})

    # Then it was uncurated, and is the same entity, curated, from then on
    assert extracted is False
    assert named.status == 200, named.json
    assert _curated(local_db, tenant, "Zorana Petrovic") is True


def test_extraction_leaves_an_entity_the_api_made_curated(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    assert api.post("/v1/entities", {"name": "Zorana Petrovic"}).status == 201

    _remember(api, ZORANA)

    assert _curated(local_db, tenant, "Zorana Petrovic") is True
    assert _curated(local_db, tenant, "Acme") is False


def test_a_relation_end_given_by_name_and_an_observation_curate_their_entities(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given three entities extraction made
    _remember(api, "Zorana Petrovic met Ivo Andric and Mesa Selimovic.")
    assert {_curated(local_db, tenant, n) for n in ("Ivo Andric", "Mesa Selimovic", "Zorana Petrovic")} == {
        False
    }
    zorana = api.get("/v1/entities?q=zorana").json["entities"][0]["id"]

    # When a relation names two of them and a memory is observed of the third
    related = api.post(
        "/v1/relations",
        {
            "source": {"name": "Ivo Andric", "entity_type": "unknown"},
            "relation_type": "knows",
            "target": {"name": "Mesa Selimovic", "entity_type": "unknown"},
        },
    )
    observed = api.post(f"/v1/entities/{zorana}/observations", {"content": "Zorana Petrovic likes tea"})

    # Then all three are curated
    assert related.status == 201 and observed.status == 201, (related.json, observed.json)
    assert _curated(local_db, tenant, "Ivo Andric") is True
    assert _curated(local_db, tenant, "Mesa Selimovic") is True
    assert _curated(local_db, tenant, "Zorana Petrovic") is True


# --- deleting what named it -------------------------------------------------------------------------


def _listed(api: Api, q: str) -> list[str]:
    answer = api.get(f"/v1/entities?q={q}")
    assert answer.status == 200, answer.json
    return [e["name"] for e in answer.json["entities"]]


def test_deleting_the_only_memory_that_named_an_extracted_entity_deletes_the_entity(api: Api) -> None:
    # Given a memory whose names extraction made entities of
    memory_id = _remember(api, ZORANA)
    assert _listed(api, "zorana") == ["Zorana Petrovic"]

    # When the memory is deleted
    deleted = api.delete(f"/v1/memories/{memory_id}")

    # Then its entities are gone: from the list, and as a graph node
    assert deleted.status == 204
    assert _listed(api, "zorana") == [] and _listed(api, "acme") == []
    assert api.get("/v1/graph?entity=Zorana%20Petrovic").status == 404


def test_an_entity_still_named_by_another_memory_stays(api: Api) -> None:
    # Given two memories that name Zorana, one of which also names Acme
    memory_id = _remember(api, ZORANA)
    _remember(api, "Zorana Petrovic lives in Belgrade.")

    # When the one naming Acme is deleted
    assert api.delete(f"/v1/memories/{memory_id}").status == 204

    # Then Acme goes, and Zorana, whom the other memory names, stays
    assert _listed(api, "acme") == []
    assert _listed(api, "zorana") == ["Zorana Petrovic"]


def test_an_entity_made_with_the_api_stays_when_the_memory_naming_it_is_deleted(api: Api) -> None:
    # Given an entity made on purpose, which a memory then names (its only observation)
    made = api.post("/v1/entities", {"name": "Zorana Petrovic"})
    memory_id = _remember(api, ZORANA)
    observed = api.get(f"/v1/entities/{made.json['id']}").json["observations"]
    assert [o["memory_id"] for o in observed] == [memory_id]

    # When the memory is deleted
    assert api.delete(f"/v1/memories/{memory_id}").status == 204

    # Then the entity stays, without observations; Acme, which extraction made, goes
    assert _listed(api, "zorana") == ["Zorana Petrovic"]
    assert api.get(f"/v1/entities/{made.json['id']}").json["observations"] == []
    assert _listed(api, "acme") == []


def test_deleting_a_document_deletes_its_extracted_entities_that_nothing_else_names(api: Api) -> None:
    # Given a document naming Zorana and Acme, and a memory of its own naming Acme
    document = ingest(api, {"content": ZORANA, "extract": "light"})
    assert document["status"] == "done" and document["memory_count"] >= 1, document
    _remember(api, "Acme sells anvils.")
    assert _listed(api, "zorana") == ["Zorana Petrovic"]

    # When the document is deleted
    assert api.delete(f"/v1/documents/{document['id']}").status == 204

    # Then Zorana, whom only the document named, is gone; Acme stays
    assert _listed(api, "zorana") == []
    assert _listed(api, "acme") == ["Acme"]


def test_deleting_a_container_deletes_the_extracted_entities_only_its_contents_named(api: Api) -> None:
    # Given a container whose memory names Zelda and Montgomery City (made with the API beforehand), a
    # sub-container whose document names Ernest Hemingway and Scribner, and another container's memory
    # naming Scribner too
    assert api.post("/v1/entities", {"name": "Montgomery City"}).status == 201
    _remember(api, "Zelda Fitzgerald lives in Montgomery City.", container="cdel")
    document = ingest(
        api, {"content": "Ernest Hemingway writes for Scribner.", "container": "cdel.sub", "extract": "light"}
    )
    assert document["status"] == "done" and document["memory_count"] >= 1, document
    _remember(api, "Scribner publishes novels.", container="kept")
    assert _listed(api, "zelda") == ["Zelda Fitzgerald"] and _listed(api, "hemingway") == ["Ernest Hemingway"]

    # When the container is deleted, with its sub-container
    deleted = api.delete("/v1/containers/cdel?confirm=true")

    # Then the names only its memories and its document's gave are gone, also as graph nodes; Scribner,
    # which the other container's memory names, and Montgomery City, made with the API, stay
    assert deleted.status == 200, deleted.json
    assert _listed(api, "zelda") == [] and _listed(api, "hemingway") == []
    assert api.get("/v1/graph?entity=Zelda%20Fitzgerald").status == 404
    assert _listed(api, "scribner") == ["Scribner"]
    assert _listed(api, "montgomery") == ["Montgomery City"]
