"""POST /v1/memories/batch: 1 to 100 memories, each as POST /v1/memories takes it, stored all or none,
embedded in one call to the model, answered in the order sent."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest

from engram import deps
from engram.providers.embeddings import Embedder
from tests.conftest import Api, ApiResponse, assert_invalid


class CountingEmbedder:
    """The installed embedder, counting the calls that embed documents."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id, self.dimensions = inner.model_id, inner.dimensions
        self.calls: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingEmbedder]:
    counter = CountingEmbedder(deps.embedder())
    monkeypatch.setattr(deps.current(), "embedder", counter)
    yield counter


def test_a_batch_of_100_is_stored_whole_in_order_with_one_embedding_call(
    api: Api, counting: CountingEmbedder
) -> None:
    sent = [{"content": f"Fact number {i} about the fleet", "tags": [f"n{i}"]} for i in range(100)]

    response = api.post("/v1/memories/batch", {"memories": sent})

    assert response.status == 201, response.json
    stored = response.json["memories"]
    assert [m["content"] for m in stored] == [m["content"] for m in sent]
    assert [m["tags"] for m in stored] == [m["tags"] for m in sent]
    assert counting.calls == [100]
    assert api.get("/v1/stats").json["total"] == 100
    listed = api.post("/v1/memories/list", {"limit": 100}).json["memories"]
    assert {m["id"] for m in listed} == {m["id"] for m in stored}


def test_one_bad_item_stores_nothing(api: Api) -> None:
    kept = api.post("/v1/memories", {"content": "Already here"}).json
    sent: list[dict[str, Any]] = [{"content": "first"}, {"content": "second"}]

    unknown = api.post(
        "/v1/memories/batch",
        {"memories": [*sent, {"content": "third", "supersedes": "00000000-0000-4000-8000-000000000000"}]},
    )
    invalid = api.post("/v1/memories/batch", {"memories": [*sent, {"content": ""}]})

    assert_invalid(unknown, "memories[2].supersedes")
    assert_invalid(invalid, "memories[2].content")
    assert [m["id"] for m in api.post("/v1/memories/list", {}).json["memories"]] == [kept["id"]]
    assert api.get(f"/v1/memories/{kept['id']}").json["is_latest"] is True


def test_each_item_is_written_for_its_own_user(api: Api) -> None:
    response = api.post(
        "/v1/memories/batch",
        {
            "memories": [
                {"content": "Ann's locker code is 4411", "user_id": "ann", "visibility": "private"},
                {"content": "Ben's locker code is 9302", "user_id": "ben", "visibility": "private"},
                {"content": "Lockers are emptied on Fridays"},
            ]
        },
    )

    assert response.status == 201, response.json
    ann, ben, shared = (m["id"] for m in response.json["memories"])
    assert api.get(f"/v1/memories/{ann}?user_id=ann").status == 200
    assert api.get(f"/v1/memories/{ann}?user_id=ben").status == 404
    assert api.get(f"/v1/memories/{ben}?user_id=ben").json["user_id"] == "ben"
    assert api.get(f"/v1/memories/{shared}").json["user_id"] is None


def test_batch_sizes_outside_1_to_100_are_refused(api: Api) -> None:
    empty = api.post("/v1/memories/batch", {"memories": []})
    too_many = api.post("/v1/memories/batch", {"memories": [{"content": f"m{i}"} for i in range(101)]})

    assert_invalid(empty, "memories")
    assert_invalid(too_many, "memories")
    assert api.get("/v1/stats").json["total"] == 0


def test_a_batch_item_that_supersedes_another_owners_memory_stores_nothing(api: Api) -> None:
    # Given a shared fact
    shared = api.post("/v1/memories", {"content": "Lunch is at noon", "container": "r2b"}).json

    # When a batch's second item, private to a user, supersedes it
    response = api.post(
        "/v1/memories/batch",
        {
            "memories": [
                {"content": "The canteen opens at 11", "container": "r2b"},
                {
                    "content": "Lunch is at one",
                    "container": "r2b",
                    "user_id": "mallory",
                    "visibility": "private",
                    "supersedes": shared["id"],
                },
            ]
        },
    )

    # Then the batch is refused whole and the shared fact stays current
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "memories[1].supersedes"
    listed = api.post("/v1/memories/list", {"container": "r2b", "user_id": "mallory"}).json["memories"]
    assert [m["content"] for m in listed] == ["Lunch is at noon"]


def test_a_refused_supersedes_names_the_batch_item_that_sent_it(api: Api) -> None:
    # Given a memory valid from January, and one already superseded
    current = api.post(
        "/v1/memories",
        {"content": "The office is in Riga", "container": "r5b", "valid_from": "2026-01-05T09:00:00Z"},
    ).json
    retired = api.post("/v1/memories", {"content": "The desk is in room 4", "container": "r5b"}).json
    api.post(
        "/v1/memories", {"content": "The desk is in room 5", "container": "r5b", "supersedes": retired["id"]}
    )
    unknown = "00000000-0000-4000-8000-000000000000"

    # When the second item of a batch supersedes a memory that does not exist, one already superseded, and one
    # with a valid_from before that memory's
    def second(**item: Any) -> ApiResponse:
        first = {"content": "The canteen opens at 11", "container": "r5b"}
        return api.post("/v1/memories/batch", {"memories": [first, {"container": "r5b", **item}]})

    missing = second(content="The office is in Oslo", supersedes=unknown)
    superseded = second(content="The desk is in room 6", supersedes=retired["id"])
    earlier = second(
        content="The office is in Oslo", supersedes=current["id"], valid_from="2026-01-01T00:00:00Z"
    )
    single = api.post("/v1/memories", {"content": "The office is in Oslo", "supersedes": unknown})
    model = deps.embedder().model_id
    short = second(content="The office is in Oslo", embedding=[0.1, 0.2, 0.3], embedding_model=model)

    # Then each refusal names the item's field, as a batch's validation errors do, and nothing is stored
    assert_invalid(missing, "memories[1].supersedes")
    assert missing.json["error"]["message"] == f"memories[1].supersedes: memory {unknown} not found"
    assert (superseded.status, superseded.json["error"]["field"]) == (409, "memories[1].supersedes")
    assert_invalid(earlier, "memories[1].valid_from")
    assert earlier.json["error"]["message"].startswith(
        "memories[1].valid_from: a replacement cannot start before"
    )
    assert_invalid(short, "memories[1].embedding")
    # (a single write names the field alone)
    assert_invalid(single, "supersedes")
    assert api.get("/v1/stats").json["total"] == 3


def test_a_retired_memory_was_updated_when_it_was_retired(api: Api) -> None:
    # Given a memory
    old = api.post("/v1/memories", {"content": "The office is in Riga", "container": "r4b"}).json

    # When a later write supersedes it
    new = api.post(
        "/v1/memories", {"content": "The office is in Tallinn", "container": "r4b", "supersedes": old["id"]}
    ).json

    # Then its updated_at is when it was retired: not before its end, nor before the new memory
    retired = api.get(f"/v1/memories/{old['id']}").json
    updated_at = datetime.fromisoformat(retired["updated_at"])
    assert retired["valid_to"] == new["valid_from"]
    assert updated_at >= datetime.fromisoformat(retired["valid_to"])
    assert updated_at >= datetime.fromisoformat(new["created_at"])


def test_a_batch_answers_an_item_a_later_one_retired_as_committed(api: Api) -> None:
    # Given / When a batch whose second memory retires its first (graph-link)
    response = api.post(
        "/v1/memories/batch",
        {
            "memories": [
                {"content": "Olga Petrova lives in Riga", "container": "r4"},
                {"content": "Olga Petrova moved to Tallinn", "container": "r4"},
            ]
        },
    )

    # Then the answer shows the first as it is stored: retired, as GET reads it
    assert response.status == 201, response.json
    first, second = response.json["memories"]
    assert second["superseded"] == [first["id"]]
    stored = api.get(f"/v1/memories/{first['id']}").json
    assert first["is_latest"] is False and first["valid_to"] == second["valid_from"]
    assert {k: v for k, v in first.items() if k != "superseded"} == stored
