"""`engram reembed`: a tenant's vectors moved to another model, resumably, and switched at once.

The other model here is the local model with its dimensions permuted: its vectors match each other
as well as the local model's do, and match none of the local model's, so a search that compared a
query of one model with rows of the other would find nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from engram import cli, deps
from engram.db.party import EVERYONE
from engram.local.stack import LocalDatabase
from engram.providers import local_embeddings
from engram.providers.local_embeddings import LOCAL_MODELS, LocalEmbedder
from engram.providers.tenant_models import TenantEmbedders, embedder_for
from engram.reembed.service import Reembedder
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OTHER = "test/minilm-permuted"


class Permuted:
    model_id = OTHER
    dimensions = 384

    def __init__(self, base: LocalEmbedder) -> None:
        self.base = base
        self.order = np.random.default_rng(7).permutation(384)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(x) for x in np.asarray(v)[self.order]] for v in self.base.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class Stop(Exception):
    pass


@pytest.fixture
def other_model(embedder: LocalEmbedder) -> Iterator[Permuted]:
    """The service embeds with TenantEmbedders that know the permuted model, as deps makes it."""
    permuted = Permuted(embedder)
    installed = deps.current()
    before = installed.embedder
    installed.embedder = TenantEmbedders(embedder, lambda model: permuted)
    try:
        yield permuted
    finally:
        installed.embedder = before


def _store(api: Api, content: str) -> str:
    response = api.post("/v1/memories", {"content": content, "container": "re"})
    assert response.status == 201, response.json
    return str(response.json["id"])


def _found(api: Api, query: str) -> list[str]:
    body = api.post("/v1/search", {"query": query, "mode": "vector", "container": "re", "limit": 3}).json
    return [r["content"] for r in body["results"]]


def _models(local_db: LocalDatabase, tenant: IssuedKey) -> dict[str, Any]:
    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute(
            "SELECT embedding_model AS model, count(*) AS n FROM memories GROUP BY 1 ORDER BY 1"
        ).fetchall()
    return {r["model"]: r["n"] for r in rows}


def _count(cur: Any, query: str) -> int:
    row = cur.execute(query).fetchone()
    assert row is not None
    return int(row["n"])


FACTS = [
    "The launch is planned for the third week of March",
    "Alice prefers tea over coffee in the morning",
    "The staging database runs PostgreSQL 17",
    "Bob's team owns the billing service",
    "The office moves to Lisbon next year",
]


def test_an_interrupted_run_resumes_and_search_keeps_the_old_vectors_until_the_switch(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    for fact in FACTS:
        _store(api, fact)
    reembedder = Reembedder(local_db.app, other_model, [MODEL], page=2)

    def stop_after_first_page(table: str, n: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        reembedder.run(tenant.tenant_id, progress=stop_after_first_page)

    assert reembedder.totals(tenant.tenant_id)["memories"] == (5, 2)
    assert _models(local_db, tenant) == {MODEL: 5}
    assert _found(api, "which database version does staging use")[0] == FACTS[2]

    report = reembedder.run(tenant.tenant_id)

    assert report.done
    assert report.embedded["memories"] == 3  # the first run's page is not embedded again
    assert report.switched["memories"] == 5
    assert _models(local_db, tenant) == {OTHER: 5}
    assert _found(api, "which database version does staging use")[0] == FACTS[2]


def test_after_the_switch_new_memories_are_embedded_with_the_tenants_model(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    _store(api, FACTS[0])
    assert Reembedder(local_db.app, other_model, [MODEL]).run(tenant.tenant_id).done

    _store(api, FACTS[3])

    assert _models(local_db, tenant) == {OTHER: 2}
    assert _found(api, "who is responsible for billing")[0] == FACTS[3]


def test_every_users_private_memories_move_with_the_tenant(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    _store(api, FACTS[0])
    private = {"content": FACTS[1], "container": "re", "user_id": "alice", "visibility": "private"}
    assert api.post("/v1/memories", private).status == 201

    assert Reembedder(local_db.app, other_model, [MODEL]).run(tenant.tenant_id).done

    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        models = cur.execute(
            "SELECT embedding_model AS model, count(*) AS n FROM memories GROUP BY 1"
        ).fetchall()
    assert [(r["model"], r["n"]) for r in models] == [(OTHER, 2)]
    search = {"query": "what does Alice drink", "mode": "vector", "container": "re", "user_id": "alice"}
    assert api.post("/v1/search", search).json["results"][0]["content"] == FACTS[1]


def test_a_memory_edited_during_the_run_is_embedded_again_before_the_switch(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    memory_id = _store(api, FACTS[4])
    reembedder = Reembedder(local_db.app, other_model, [MODEL])
    with pytest.raises(Stop):
        reembedder.run(tenant.tenant_id, progress=lambda table, n: (_ for _ in ()).throw(Stop()))
    with local_db.app.tenant(tenant.tenant_id) as cur:  # an edit the staged vector did not see
        cur.execute("UPDATE memories SET content = %s WHERE id = %s", (FACTS[1], memory_id))

    report = reembedder.run(tenant.tenant_id)

    assert report.embedded["memories"] == 1 and report.switched["memories"] == 1
    assert _found(api, "what does Alice drink in the morning")[0] == FACTS[1]


def test_document_chunks_move_with_the_memories(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    doc = ingest(
        api, {"content": "The warehouse in Leeds closes at six.", "container": "re", "extract": "none"}
    )
    assert doc["status"] == "done"

    report = Reembedder(local_db.app, other_model, [MODEL]).run(tenant.tenant_id)

    assert report.switched["chunks"] >= 1
    with local_db.app.tenant(tenant.tenant_id) as cur:
        models = {r["embedding_model"] for r in cur.execute("SELECT embedding_model FROM chunks").fetchall()}
    assert models == {OTHER}
    body = api.post("/v1/search", {"query": "when does the Leeds warehouse close", "mode": "vector"}).json
    assert any("Leeds" in r["content"] for r in body["results"])


def test_moving_one_tenant_leaves_the_other_as_it_was(
    api: Api,
    other_api: Api,
    tenant: IssuedKey,
    other_tenant: IssuedKey,
    local_db: LocalDatabase,
    other_model: Permuted,
) -> None:
    _store(api, FACTS[2])
    _store(other_api, FACTS[2])
    reembedder = Reembedder(local_db.app, other_model, [MODEL])
    with pytest.raises(Stop):
        reembedder.run(tenant.tenant_id, progress=lambda table, n: (_ for _ in ()).throw(Stop()))

    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        staged = _count(cur, "SELECT count(*) AS n FROM embedding_staging")
        written = cur.execute(
            "INSERT INTO embedding_staging (tenant_id, model, memory_id, embedding, content_md5) "
            "SELECT %s, 'x', id, embedding, 'x' FROM memories WHERE tenant_id = %s",
            (other_tenant.tenant_id, tenant.tenant_id),
        ).rowcount
    assert staged == 0 and written == 0  # the first tenant's rows are out of sight

    assert reembedder.run(tenant.tenant_id).done

    assert _models(local_db, other_tenant) == {MODEL: 1}
    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        assert _count(cur, "SELECT count(*) AS n FROM tenant_embedding_models") == 0
    assert _found(other_api, "which database version does staging use") == [FACTS[2]]
    assert _found(api, "which database version does staging use") == [FACTS[2]]


def test_the_reembed_command_moves_the_tenant_and_says_so(
    api: Api,
    tenant: IssuedKey,
    local_db: LocalDatabase,
    other_model: Permuted,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_on_test_db: None,
) -> None:
    _store(api, FACTS[1])
    monkeypatch.setitem(LOCAL_MODELS, OTHER, replace(LOCAL_MODELS[MODEL], name=OTHER))
    monkeypatch.setattr(local_embeddings, "make_local_embedder", lambda model, **kw: other_model)

    code = cli.main(["reembed", "--model", OTHER, "--tenant", tenant.tenant_name])

    assert code == 0
    assert (
        f"tenant {tenant.tenant_name} now searches with {OTHER} (1 memories, 0 chunks)"
        in capsys.readouterr().err
    )
    assert _models(local_db, tenant) == {OTHER: 1}
    assert _found(api, "what does Alice drink in the morning")[0] == FACTS[1]


def test_the_reembed_command_refuses_an_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["reembed", "--model", "nope/model"]) == 2
    assert "unknown local embedding model 'nope/model'" in capsys.readouterr().err


def test_a_switch_waits_for_a_memory_write_in_flight(
    tenant: IssuedKey, local_db: LocalDatabase, other_model: Permuted
) -> None:
    with local_db.app.tenant(tenant.tenant_id) as writing:
        embedder_for(deps.embedder(), writing, tenant.tenant_id, writing=True)  # as MemoryWriter does
        with local_db.app.tenant(tenant.tenant_id) as switching:
            free = switching.execute(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('engram.reembed:' || %s::text, 0)) AS ok",
                (tenant.tenant_id,),
            ).fetchone()

    assert free == {"ok": False}
