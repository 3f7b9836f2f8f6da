"""The text leg's index (migrations/0014): postings and term statistics kept exact by the writing
transaction, whatever writes (insert, batch, update of content or container, delete, supersession),
and BM25 ranking over them, for memories and chunks alike."""

from __future__ import annotations

import math
import threading
import uuid
from typing import Any
from uuid import UUID

import pytest

from engram.db.database import EVERYONE
from engram.local.stack import LocalDatabase
from engram.memories.repo import ensure_container
from engram.memories.search import planner, text
from engram.memories.search.plan import candidates_for
from engram.memories.search.text import FIRST_CHECKED_PER_CANDIDATE, K1, B
from engram.settings import LOCAL_EMBEDDING_MODEL
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api


def _store(api: Api, content: str, **fields: object) -> str:
    response = api.post("/v1/memories", {"content": content, **fields})
    assert response.status == 201, response.json
    return str(response.json["id"])


def _stats(local_db: LocalDatabase, tenant_id: UUID) -> dict[str, tuple[int, int]]:
    """text_stats plus the pending deltas: what search reads, per term ('': the corpus)."""
    with local_db.app.tenant(tenant_id, EVERYONE) as cur:
        rows = cur.execute(
            "SELECT term, sum(docs)::bigint AS docs, sum(length)::bigint AS length FROM ("
            "  SELECT term, docs, length FROM text_stats WHERE corpus = 'm'"
            "  UNION ALL SELECT term, docs, length FROM text_stat_deltas WHERE corpus = 'm') x "
            "GROUP BY term HAVING sum(docs) <> 0 OR term = ''"
        ).fetchall()
    return {r["term"]: (int(r["docs"]), int(r["length"])) for r in rows}


def _recounted(local_db: LocalDatabase, tenant_id: UUID) -> dict[str, tuple[int, int]]:
    """The same statistics computed from scratch from the tenant's memories."""
    with local_db.app.tenant(tenant_id, EVERYONE) as cur:
        docs = cur.execute(
            "SELECT m.id, t.term, t.tf FROM memories m "
            "LEFT JOIN LATERAL engram_text_terms(m.content) t ON true"
        ).fetchall()
    per_term: dict[str, int] = {}
    lengths: dict[Any, int] = {}
    for row in docs:
        lengths[row["id"]] = lengths.get(row["id"], 0) + (row["tf"] or 0)
        if row["term"] is not None:
            per_term[row["term"]] = per_term.get(row["term"], 0) + 1
    return {term: (n, 0) for term, n in per_term.items()} | {"": (len(lengths), sum(lengths.values()))}


def _postings(local_db: LocalDatabase, tenant_id: UUID, memory_id: str) -> dict[str, tuple[str, int]]:
    with local_db.app.tenant(tenant_id, EVERYONE) as cur:
        rows = cur.execute(
            "SELECT term, container, tf FROM text_postings WHERE corpus = 'm' AND doc_id = %s", (memory_id,)
        ).fetchall()
    return {r["term"]: (r["container"], r["tf"]) for r in rows}


def test_statistics_stay_exact_through_every_kind_of_write(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    first = _store(api, "Alice lives in Paris and loves Paris in spring", container="people")
    second = _store(api, "Bob lives in Berlin", container="people")
    assert _postings(local_db, tenant.tenant_id, first)["pari"] == ("people", 2)

    patched = api.patch(f"/v1/memories/{second}", {"content": "Bob moved to Lisbon last year"})
    assert patched.status == 200, patched.json
    lisbon = str(patched.json["id"])  # a new version: the old one keeps its text (history)
    _store(api, "Alice lives in Rome now", supersedes=first)
    batch = [_store(api, f"note {i} about the quarterly budget") for i in range(40)]  # past a fold
    api.delete(f"/v1/memories/{batch[0]}")
    with local_db.app.tenant(tenant.tenant_id) as cur:  # a container moved (engram.containers)
        ensure_container(cur, tenant.tenant_id, "archive")
        cur.execute("UPDATE memories SET container = 'archive' WHERE id = %s", (first,))
        # Content changed in place (no API route does so today; the trigger keeps up if one does).
        cur.execute(
            "UPDATE memories SET content = 'a budget about nothing in Oslo' WHERE id = %s", (batch[1],)
        )

    assert _stats(local_db, tenant.tenant_id) == _recounted(local_db, tenant.tenant_id)
    assert _postings(local_db, tenant.tenant_id, first)["pari"] == ("archive", 2)
    assert "berlin" in _postings(local_db, tenant.tenant_id, second)
    assert "lisbon" in _postings(local_db, tenant.tenant_id, lisbon)
    assert set(_postings(local_db, tenant.tenant_id, batch[1])) == {"budget", "noth", "oslo"}
    assert _postings(local_db, tenant.tenant_id, batch[0]) == {}
    with local_db.app.tenant(tenant.tenant_id) as cur:
        folded = cur.execute("SELECT count(*) AS n FROM text_stats WHERE corpus = 'm'").fetchone()
    assert folded is not None and folded["n"] > 0  # the deltas were folded in along the way


def test_statistics_stay_exact_with_eight_concurrent_writers_to_one_tenant(
    tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Writers share most of their words, so they add to the same terms' counts, and write well past
    # the fold threshold (32 pending statements): folds run while others write.
    with local_db.app.tenant(tenant.tenant_id) as cur:
        ensure_container(cur, tenant.tenant_id, "busy")
    failures: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(12):
                with local_db.app.tenant(tenant.tenant_id) as cur:
                    cur.execute(
                        "INSERT INTO memories (tenant_id, container, content) VALUES (%s, 'busy', %s)",
                        (
                            tenant.tenant_id,
                            f"shared budget review note {i} from writer{worker} " * (1 + i % 3),
                        ),
                    )
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    stats = _stats(local_db, tenant.tenant_id)
    assert stats == _recounted(local_db, tenant.tenant_id)
    assert stats["budget"] == (96, 0) and stats[""][0] == 96


def test_a_deleted_tenant_leaves_no_text_index_rows(local_db: LocalDatabase) -> None:
    tenant_id = tenants.ensure_tenant(local_db.admin, f"gone-{uuid.uuid4().hex[:8]}")
    with local_db.app.tenant(tenant_id) as cur:
        ensure_container(cur, tenant_id, "doomed")
        for i in range(40):  # past a fold: rows in text_stats and text_stat_deltas alike
            cur.execute(
                "INSERT INTO memories (tenant_id, container, content) VALUES (%s, 'doomed', %s)",
                (tenant_id, f"soon forgotten entry {i}"),
            )

    with local_db.admin.transaction() as cur:
        cur.execute("DELETE FROM tenants WHERE id = %s", (tenant_id,))
        left = cur.execute(
            "SELECT (SELECT count(*) FROM text_postings WHERE tenant_id = %(t)s) AS postings, "
            "(SELECT count(*) FROM text_stats WHERE tenant_id = %(t)s) AS stats, "
            "(SELECT count(*) FROM text_stat_deltas WHERE tenant_id = %(t)s) AS deltas",
            {"t": tenant_id},
        ).fetchone()

    assert left == {"postings": 0, "stats": 0, "deltas": 0}


def test_bm25_prefers_rare_terms_and_short_documents(api: Api) -> None:
    # "zeppelin" is rare, "report" is everywhere: a document with the rare word wins, and of two
    # documents with both words the shorter one does.
    for i in range(30):
        _store(api, f"weekly report number {i} for the finance team", container="bm25")
    long = _store(
        api,
        "zeppelin report " + " ".join(f"filler{i}" for i in range(60)),
        container="bm25",
    )
    short = _store(api, "zeppelin report", container="bm25")

    found = api.post(
        "/v1/search", {"query": "zeppelin report", "mode": "text", "container": "bm25", "limit": 5}
    ).json["results"]

    assert [r["id"] for r in found[:2]] == [short, long]
    assert 0 < found[2]["score"] < found[1]["score"] < found[0]["score"] <= 1


def test_a_text_score_is_bm25_over_the_best_the_query_allows(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    only = _store(api, "kestrel", container="solo")
    _store(api, "a sparrow and a finch", container="solo")

    found = api.post("/v1/search", {"query": "kestrel", "mode": "text", "container": "solo"}).json["results"]

    # One term, tf 1, in a corpus of this tenant's memories: idf * (k1+1) / (1 + k1*(1-b+b*len/avgdl)),
    # over the best the query allows, idf * (k1+1).
    stats = _stats(local_db, tenant.tenant_id)
    docs, length = stats[""]
    expected = 1 / (1 + K1 * (1 - B + B * 1 / (length / docs)))
    assert [r["id"] for r in found] == [only]
    assert found[0]["score"] == pytest.approx(expected, abs=1e-5)
    assert math.isclose(found[0]["scores"]["text"], found[0]["score"])


def test_text_scores_and_coverage_are_bm25_of_every_term_in_and_out_of_a_container(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    texts = {
        "both": "heron marsh heron",
        "heron": "a grey heron stood by the river bank today",
        "marsh": "the marsh",
        "elsewhere": "heron and marsh again",
    }
    ids = {
        name: _store(api, content, container="birds.a" if name != "elsewhere" else "birds.b")
        for name, content in texts.items()
    }
    _store(api, "nothing to see", container="birds.a")
    stats = _stats(local_db, tenant.tenant_id)
    docs, length = stats[""]
    avgdl = length / docs

    def idf(term: str) -> float:
        df = stats.get(term, (0, 0))[0]
        return math.log(1 + (docs - df + 0.5) / (df + 0.5))

    def expected(name: str, terms: dict[str, int]) -> tuple[float, float]:
        """(score, coverage) of a memory of `len` terms, by tf of each query term it holds."""
        size = sum(tf for _, (_, tf) in _postings(local_db, tenant.tenant_id, ids[name]).items())
        total = sum(idf(t) for t in ("heron", "marsh"))
        score = sum(
            idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * size / avgdl)) for t, tf in terms.items()
        )
        return score / (total * (K1 + 1)), sum(idf(t) for t in terms) / total

    holds = {"both": {"heron": 2, "marsh": 1}, "heron": {"heron": 1}, "marsh": {"marsh": 1}}
    scopes = (("birds.*", [*holds, "elsewhere"]), ("birds.a", list(holds)), (None, [*holds, "elsewhere"]))
    for scope, names in scopes:
        # hybrid shows coverage too; its text leg's candidates are those of text mode
        for mode in ("text", "hybrid"):
            body = {
                "query": "heron marsh",
                "mode": mode,
                "limit": 10,
                **({"container": scope} if scope else {}),
            }
            found = {r["id"]: r["scores"] for r in api.post("/v1/search", body).json["results"]}
            # text mode finds exactly the scope's memories holding a term; hybrid adds vector neighbours
            if mode == "text":
                assert set(found) == {ids[n] for n in names}, scope
            assert {ids[n] for n in names} <= set(found), (scope, mode)
            for name in names:
                score, coverage = expected(name, holds.get(name, {"heron": 1, "marsh": 1}))
                assert found[ids[name]]["text"] == pytest.approx(score, abs=1e-6), (scope, mode, name)
                if mode == "hybrid":
                    assert found[ids[name]]["coverage"] == pytest.approx(coverage, abs=1e-6), (scope, name)


def test_text_search_honours_every_filter_and_the_owner(api: Api) -> None:
    mine = _store(api, "the harbour crane schedule", user_id="ann", visibility="private", tags=["ops"])
    shared = _store(api, "the harbour crane schedule for everyone", tags=["ops"])
    _store(api, "the harbour crane schedule, archived", tags=["old"])

    def text(**body: object) -> list[str]:
        response = api.post("/v1/search", {"query": "harbour crane", "mode": "text", **body})
        assert response.status == 200, response.json
        return [r["id"] for r in response.json["results"]]

    assert mine not in text()
    assert set(text(user_id="ann", filters={"tags": ["ops"]})) == {mine, shared}
    assert text(filters={"tags": ["ops"]}) == [shared]


def test_a_filter_rejecting_the_first_checked_run_still_finds_the_matches_below_it(api: Api) -> None:
    # The text leg checks its best rows against the filters in two sorted runs (text.leg): the first
    # run is all short, high-scoring "noise"; the two "keep" documents are longer, so they score below
    # every one of them and only the second run reaches them, in score order.
    first_run = FIRST_CHECKED_PER_CANDIDATE * candidates_for(10)
    noise = [
        {"content": f"osprey tern {i}", "tags": ["noise"], "container": "runs"} for i in range(first_run + 5)
    ]
    for start in range(0, len(noise), 100):
        stored = api.post("/v1/memories/batch", {"memories": noise[start : start + 100]})
        assert stored.status == 201, stored.json
    nearer = _store(api, "osprey " + _filler(10), tags=["keep"], container="runs")
    farther = _store(api, "osprey " + _filler(30), tags=["keep"], container="runs")

    found = api.post(
        "/v1/search",
        {"query": "osprey", "mode": "text", "container": "runs", "filters": {"tags": ["keep"]}, "limit": 10},
    )

    assert found.status == 200, found.json
    assert [r["id"] for r in found.json["results"]] == [nearer, farther]


def _filler(words: int) -> str:
    return " ".join(f"filler{i}" for i in range(words))


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("東京の天気は晴れです", "東京"),
        ("東京の天気は晴れです", "天気"),
        ("我们明天在北京开会", "北京"),
        ("我们明天在北京开会", "北京开会"),
        ("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "กรุงเทพ"),
        ("서울에서 회의가 있습니다", "서울"),
        ("Tokyo 東京 weather report", "東京 weather"),
    ],
)
def test_scripts_without_spaces_are_found_in_text_and_hybrid_modes(
    api: Api, content: str, query: str
) -> None:
    wanted = _store(api, content, container="scripts")
    _store(api, "an unrelated note about the weather in Oslo", container="scripts")
    _store(api, "大阪の料理はおいしい", container="scripts")

    for mode in ("text", "hybrid"):
        found = api.post("/v1/search", {"query": query, "mode": mode, "container": "scripts"}).json["results"]
        assert found and found[0]["id"] == wanted, (mode, found)
        assert found[0]["scores"]["text"] > 0


def test_a_single_character_query_finds_its_character(api: Api) -> None:
    wanted = _store(api, "猫が好きです", container="kanji")
    _store(api, "犬が好きです", container="kanji")

    found = api.post("/v1/search", {"query": "猫", "mode": "text", "container": "kanji"}).json["results"]

    assert [r["id"] for r in found] == [wanted]


def _unit(near: float, axis: int) -> list[float]:
    """A vector at cosine `near` to the first axis (the query's), the rest of it along `axis`."""
    vector = [0.0] * 384
    vector[0], vector[axis] = near, math.sqrt(1 - near * near)
    return vector


# Filters that narrow a search beyond its container: each as the fields of the memories it keeps and
# of those it drops, and the search's filters.
NARROWING = {
    "tags": ({"tags": ["keep"]}, {"tags": ["noise"]}, {"tags": ["keep"]}),
    "metadata": ({"metadata": {"k": "keep"}}, {"metadata": {"k": "noise"}}, {"metadata": {"k": "keep"}}),
    "owner": ({"user_id": "ann"}, {"user_id": "bob"}, {"user_id": "ann"}),
    "agent": ({"agent_id": "a1"}, {"agent_id": "a2"}, {"agent_id": "a1"}),
    "conversation": ({"conversation_id": "c1"}, {"conversation_id": "c2"}, {"conversation_id": "c1"}),
}


def _a_filtered_text_match_past_the_checked_rows(api: Api, narrowing: str) -> tuple[str, dict[str, Any]]:
    """A container where the text leg's best-scoring rows all fail a filter, and the one text match
    that passes it is nearer the query than none of the vector leg's candidates: only the text leg can
    propose it, and only by looking past its MAX_CHECKED best rows (patched small by the tests)."""
    kept, dropped, filters = NARROWING[narrowing]
    for i in range(5):
        _store(api, f"osprey {i}", container="within", **dropped)
    keep = {"container": "within", "embedding_model": LOCAL_EMBEDDING_MODEL, **kept}
    for i in range(candidates_for(10) + 5):
        _store(api, f"tern {i}", embedding=_unit(0.5 + i / 1000, 2 + i), **keep)
    wanted = _store(api, "osprey " + _filler(10), embedding=_unit(0.45, 1), **keep)
    body = {
        "query": "osprey",
        "mode": "hybrid",
        "container": "within",
        "filters": filters,
        "embedding": _unit(1.0, 1),
        "embedding_model": LOCAL_EMBEDDING_MODEL,
        "limit": 10,
    }
    return wanted, body


@pytest.mark.parametrize("narrowing", sorted(NARROWING))
@pytest.mark.parametrize("mode", ["hybrid", "text"])
def test_a_few_filtered_memories_are_ranked_by_text_however_many_better_matches_fail_the_filter(
    api: Api, monkeypatch: pytest.MonkeyPatch, mode: str, narrowing: str
) -> None:
    monkeypatch.setattr(text, "MAX_CHECKED", 3)
    wanted, body = _a_filtered_text_match_past_the_checked_rows(api, narrowing)
    body["mode"] = mode

    # Twice: the first search counts the filtered rows in its statement, the second knows their number.
    for _ in range(2):
        found = api.post("/v1/search", body)
        assert found.status == 200, found.json
        assert found.json["results"][0]["id"] == wanted
        assert found.json["results"][0]["scores"]["text"] > 0


@pytest.mark.parametrize(
    ("mode", "cap"), [("hybrid", (text, "MAX_SCOPED")), ("text", (planner, "TEXT_SCOPE_CAP"))]
)
def test_a_scope_too_large_to_list_is_checked_one_by_one(
    api: Api, monkeypatch: pytest.MonkeyPatch, mode: str, cap: tuple[object, str]
) -> None:
    monkeypatch.setattr(text, "MAX_CHECKED", 3)
    monkeypatch.setattr(*cap, 10)
    wanted, body = _a_filtered_text_match_past_the_checked_rows(api, "tags")
    body["mode"] = mode

    for _ in range(2):
        found = api.post("/v1/search", body)
        assert found.status == 200, found.json
        assert wanted not in [r["id"] for r in found.json["results"]]
