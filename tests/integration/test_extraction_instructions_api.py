"""Custom extraction instructions: stored per tenant and per container, applied in order (tenant,
ancestors, container) to LLM extraction of documents, validated, and isolated per tenant."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, assert_invalid
from tests.integration.documents_helpers import ingest
from tests.integration.test_kg_pipeline import answer, llm_stack
from tests.llm_fakes import scripted_openai_server

PATH = "/v1/extraction-instructions"


def _put(api: Api, instructions: str, container: str | None = None, status: int = 201) -> dict[str, Any]:
    body: dict[str, Any] = {"instructions": instructions}
    if container is not None:
        body["container"] = container
    response = api.put(PATH, body)
    assert response.status == status, response.json
    return dict(response.json)


def test_instructions_apply_from_the_tenant_down_to_the_container(api: Api) -> None:
    _put(api, "Prefer short names.")
    _put(api, "Prefer full names.", status=200)  # the tenant's own, replaced: one per scope
    _put(api, "Record customers' home cities.", "crm")
    _put(api, "Only facts about contacts.", "crm.contacts")
    _put(api, "Unrelated.", "ops")
    updated = _put(api, "  Record customers' home cities and countries.  ", "crm", status=200)

    applying = api.get(f"{PATH}?container=crm.contacts.vip").json["instructions"]
    everything = api.get(PATH).json["instructions"]

    assert updated["instructions"] == "  Record customers' home cities and countries.  "  # as sent
    assert updated["updated_at"] > updated["created_at"]
    assert [(i["container"], i["instructions"]) for i in applying] == [
        (None, "Prefer full names."),
        ("crm", "  Record customers' home cities and countries.  "),
        ("crm.contacts", "Only facts about contacts."),
    ]
    assert [i["container"] for i in everything] == [None, "crm", "crm.contacts", "ops"]


def test_the_llm_extracting_a_document_gets_the_instructions(api: Api) -> None:
    _put(api, "Prefer full names.")
    _put(api, "Record where people live.", "people")
    with (
        scripted_openai_server([answer("Alice lives in Paris.", "Paris", None)]) as server,
        llm_stack(server),
    ):
        doc = ingest(api, {"content": "Alice lives in Paris", "container": "people", "extract": "full"})

    assert doc["status"] == "done", doc
    system = server.requests[0].body["messages"][0]["content"]
    assert system.index("- Prefer full names.") < system.index("- Record where people live.")


def test_instructions_are_removed_with_their_container_or_on_request(api: Api) -> None:
    _put(api, "Tenant-wide.")
    _put(api, "For notes.", "team.notes")

    assert api.delete("/v1/containers/team?confirm=true").status == 200
    assert [i["container"] for i in api.get(PATH).json["instructions"]] == [None]
    assert api.delete(PATH).status == 204
    missing = api.delete(PATH)
    assert missing.status == 404 and "no extraction instructions" in missing.json["error"]["message"]
    assert api.delete(f"{PATH}?container=team").status == 404


def test_bad_instructions_are_refused(api: Api) -> None:
    assert_invalid(api.put(PATH, {"instructions": "   "}), "instructions")
    too_long = api.put(PATH, {"instructions": "x" * 2001})
    assert too_long.status == 422 and too_long.json["error"]["field"] == "instructions"
    assert (
        api.put(PATH, {"instructions": "ok", "container": "bad name"}).json["error"]["field"] == "container"
    )
    tenant_id = "00000000-0000-0000-0000-000000000000"
    assert_invalid(api.put(PATH, {"instructions": "ok", "tenant_id": tenant_id}), "tenant_id")
    assert_invalid(api.get(f"{PATH}?container=bad%20name"), "container")
    assert api.get(PATH).json["instructions"] == []


def test_another_tenant_sees_and_changes_nothing(api: Api, other_api: Api) -> None:
    _put(api, "Mine.", "crm")

    assert other_api.get(PATH).json["instructions"] == []
    assert other_api.get(f"{PATH}?container=crm").json["instructions"] == []
    assert other_api.delete(f"{PATH}?container=crm").status == 404
    assert [i["instructions"] for i in api.get(PATH).json["instructions"]] == ["Mine."]
