"""`engram local` under load and abuse: concurrent clients, a slow request, half-open connections,
malformed requests, a step over its time limit, a killed server, a large document beside small ones."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import pytest

from engram.limits import MAX_REQUEST_BYTES
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.e2e.conftest import LLM_TIMEOUT_SECONDS, HangingLLM, server_env, wait_for
from tests.e2e.local_server import LocalServer, call, postgres_processes, raw_exchange


def test_eight_clients_in_parallel_each_get_their_own_request_and_tenant(
    base_url: str, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    # Given: two tenants writing from 8 clients at once
    jobs = [(tenant.plaintext, f"alpha {i}") for i in range(40)] + [
        (other_tenant.plaintext, f"beta {i}") for i in range(40)
    ]

    def create(job: tuple[str, str]) -> tuple[str, int, Any]:
        key, text = job
        status, body = call(base_url, "POST", "/v1/memories", {"content": text, "extract": "light"}, key)
        return text, status, (body or {}).get("content")

    # When
    with ThreadPoolExecutor(8) as clients:
        results = list(clients.map(create, jobs))

    # Then: every request stored its own body, in its own tenant
    assert [r for r in results if r[1] != 201 or r[0] != r[2]] == []
    mine = call(base_url, "POST", "/v1/memories/list", {"limit": 100}, tenant.plaintext)[1]["memories"]
    theirs = call(base_url, "POST", "/v1/memories/list", {"limit": 100}, other_tenant.plaintext)[1][
        "memories"
    ]
    assert sorted(m["content"] for m in mine) == sorted(f"alpha {i}" for i in range(40))
    assert sorted(m["content"] for m in theirs) == sorted(f"beta {i}" for i in range(40))


def test_a_fast_request_does_not_wait_behind_a_slow_one(base_url: str, tenant: IssuedKey) -> None:
    # Given: a request held by an LLM that does not answer (until the provider timeout)
    key = tenant.plaintext
    session = call(base_url, "POST", "/v1/sessions", {"user_id": "ann"}, key)[1]
    with ThreadPoolExecutor(1) as background:
        slow = background.submit(
            call,
            base_url,
            "POST",
            f"/v1/sessions/{session['id']}/messages?user_id=ann",
            {"messages": [{"role": "user", "content": "I moved to Lisbon"}], "extract": "full"},
            key,
        )
        time.sleep(0.5)
        assert not slow.done()

        # When: fast requests arrive meanwhile
        timings = []
        for _ in range(10):
            started = time.monotonic()
            assert call(base_url, "POST", "/v1/search", {"query": "Lisbon"}, key)[0] == 200
            timings.append(time.monotonic() - started)

        # Then: they are served by another worker, not queued behind the slow one
        assert not slow.done() or slow.result()[0] == 201
        assert max(timings) < 1.0, timings
        assert slow.result(timeout=LLM_TIMEOUT_SECONDS + 30)[0] == 201


def test_half_open_connections_neither_block_others_nor_stay_open(server: LocalServer) -> None:
    # Given: 100 connections that send half a request line and then nothing
    flood = [socket.create_connection(("127.0.0.1", server.port), timeout=15) for _ in range(100)]
    for sock in flood:
        sock.sendall(b"POST /v1/search HTT")
    try:
        # When / Then: other clients are served at once
        started = time.monotonic()
        for _ in range(5):
            assert call(server.url, "GET", "/health")[0] == 200
        assert time.monotonic() - started < 2.0
        # ... and the server closes the half-open connections after its header timeout (5 s)
        closed = 0
        for sock in flood:
            try:
                closed += sock.recv(1) == b""
            except ConnectionResetError:
                closed += 1
        assert closed == len(flood)
    finally:
        for sock in flood:
            sock.close()


def request(head: str, body: bytes = b"") -> bytes:
    return head.replace("\n", "\r\n").encode("latin-1") + body


def test_malformed_framing_and_headers_are_refused(server: LocalServer, tenant: IssuedKey) -> None:
    key = tenant.plaintext
    post = f"POST /v1/memories HTTP/1.1\nHost: x\nx-api-key: {key}\nContent-Type: application/json\n"
    body = b'{"content": "smuggled"}'

    def refused(head: str, sent: bytes = b"") -> tuple[int, str]:
        """The status and error code of the answer, which is JSON in the API's error shape."""
        status, headers, answer = raw_exchange(server.port, request(head, sent), timeout=2)
        assert headers.get("content-type") == "application/json", (head, headers, answer)
        return status, json.loads(answer)["error"]["code"]

    # Content-Length: -1 (a body past the limit used to follow it)
    assert refused(post + "Content-Length: -1\n\n", body) == (400, "bad_request")
    # two Content-Lengths that disagree
    twice = post + f"Content-Length: {len(body)}\nContent-Length: 3\n\n"
    assert refused(twice, body) == (400, "bad_request")
    # a bare CR inside a header value (it used to start a new header)
    injected = post + f"X-Note: a\rx-api-key: other\nContent-Length: {len(body)}\n\n"
    assert refused(injected, body) == (400, "bad_request")
    # a transfer coding other than chunked: the client's error, not 501 Not Implemented
    chunked_body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    for coding in ("gzip, chunked", "chunked, identity", "xchunked"):
        assert refused(post + f"Transfer-Encoding: {coding}\n\n", chunked_body) == (400, "bad_request")
    # more than API Gateway's 10 KB of request line and headers (ours), or than h11 reads (16 KB)
    assert refused(post + f"X-Big: {'a' * 12_000}\n\n") == (431, "headers_too_large")
    assert refused(post + f"X-Big: {'a' * 20_000}\n\n") == (431, "headers_too_large")
    # a chunked body past the limit: refused on the bytes received, whatever the headers say
    chunk = b"x" * (1024 * 1024)
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(MAX_REQUEST_BYTES // len(chunk) + 1)
    )
    status, _, answer = raw_exchange(
        server.port, request(post + "Transfer-Encoding: chunked\n\n", chunked + b"0\r\n\r\n")
    )
    assert status == 413 and b"payload_too_large" in answer
    # Transfer-Encoding beside Content-Length, or in HTTP/1.0: framing that parsers read differently
    # (h11 reads the chunks); refused, and the connection closed at once, on a streamed route too
    framed = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    upload = post.replace("/v1/memories", "/v1/documents/upload")
    for head in (
        post + "Content-Length: 3\nTransfer-Encoding: chunked\n\n",
        post.replace("HTTP/1.1", "HTTP/1.0") + "Transfer-Encoding: chunked\n\n",
        upload + "Content-Length: 3\nTransfer-Encoding: chunked\n\n",
    ):
        status, headers, answer = raw_exchange(server.port, request(head, framed), timeout=2)
        assert (status, headers.get("connection")) == (400, "close"), (head, answer)
        assert b"Transfer-Encoding" in answer
    # and nothing of the above was stored
    listed = call(server.url, "POST", "/v1/memories/list", {"limit": 10}, key)[1]["memories"]
    assert [m["content"] for m in listed] == []


def test_methods_without_a_route_get_a_json_error(server: LocalServer) -> None:
    for method, path, status in (
        ("TRACE", "/v1/search", 405),
        ("QUERY", "/v1/search", 405),
        ("PROPFIND", "/v1/nothing-here", 404),
        ("DELETE", "/openapi.json", 404),
    ):
        answer = raw_exchange(
            server.port, request(f"{method} {path} HTTP/1.1\nHost: x\nContent-Length: 0\n\n")
        )
        assert answer[0] == status, (method, answer)
        assert answer[1]["content-type"] == "application/json" and b'"error"' in answer[2]


def test_path_parameters_are_percent_decoded_as_api_gateway_does(base_url: str, tenant: IssuedKey) -> None:
    key = tenant.plaintext
    status, stored = call(base_url, "PUT", "/v1/working/plan%3A7/step%2Done", {"value": {"n": 1}}, key)
    assert status == 201 and (stored["scope"], stored["key"]) == ("plan:7", "step-one")
    assert call(base_url, "GET", "/v1/working/plan:7/step-one", key=key)[1]["value"] == {"n": 1}
    # an encoded slash stays inside its segment: no other route is reached through it
    assert call(base_url, "GET", "/v1/working/plan%2F7/step-one", key=key)[0] in (404, 422)


def test_a_step_over_its_time_limit_fails_the_document_with_timeout(
    local_db: LocalDatabase,
    hanging_llm: HangingLLM,
    tmp_path_factory: pytest.TempPathFactory,
    tenant: IssuedKey,
) -> None:
    # Given: steps limited to 2 s, and an LLM that does not answer within them
    env = server_env(local_db, hanging_llm, ENGRAM_STEP_TIMEOUT_SECONDS="2", ENGRAM_LLM_TIMEOUT_SECONDS="30")
    server = LocalServer(tmp_path_factory.mktemp("short-steps"), env).start()
    try:
        key = tenant.plaintext
        # When
        accepted = call(
            server.url, "POST", "/v1/documents", {"content": "Ann lives in Oslo.", "extract": "full"}, key
        )
        assert accepted[0] == 202

        # Then: the llm-extract step is killed at its limit, and the document fails with `timeout`
        def final() -> dict[str, Any] | None:
            document = call(server.url, "GET", f"/v1/documents/{accepted[1]['id']}", key=key)[1]
            return document if document["status"] in ("done", "failed") else None

        assert wait_for(final, timeout=60)
        document = final()
        assert document is not None and document["status"] == "failed"
        assert document["error"]["code"] == "timeout" and "llm-extract" in document["error"]["message"]
        assert call(server.url, "GET", "/health")[0] == 200  # a new worker took the killed one's place
    finally:
        assert server.stop() == 0, server.output()


def test_kill_9_then_restarts_leave_no_stray_postgres_or_worker(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    data_dir = tmp_path_factory.mktemp("killed")
    pg_dir = data_dir / "pg"
    workers: list[int] = []
    for _ in range(2):
        # Given: `engram local` on its own embedded PostgreSQL, killed outright
        server = LocalServer(data_dir, {"ENGRAM_INGEST_WORKERS": "1"}).start()
        assert wait_for(lambda server=server: len(server.worker_pids()) == 3, timeout=30)
        workers += server.worker_pids()
        server.kill()
        # the workers die with it; its PostgreSQL is left running
        assert wait_for(lambda pids=tuple(workers): not any(map(psutil.pid_exists, pids)), timeout=10)
        assert len(postgres_processes(pg_dir)) == 1

    # When: it is started again and stopped with Ctrl-C
    server = LocalServer(data_dir, {"ENGRAM_INGEST_WORKERS": "1"}).start()
    assert len(postgres_processes(pg_dir)) == 1  # the one left behind, adopted
    workers += server.worker_pids()
    assert server.stop() == 0, server.output()

    # Then: nothing is left running
    assert postgres_processes(pg_dir) == []
    assert [pid for pid in workers if psutil.pid_exists(pid)] == []


def test_small_documents_of_another_tenant_pass_two_large_ones(
    base_url: str, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    # Given: one tenant's two large documents (over 1 MB each: minutes of embedding here)
    sentence = "The quarterly report covers revenue, churn and hiring plans across every region. "
    large = [
        call(
            base_url,
            "POST",
            "/v1/documents",
            {"content": f"{i} {sentence * 15_000}", "extract": "none"},
            tenant.plaintext,
        )
        for i in range(2)
    ]
    assert [status for status, _ in large] == [202, 202]

    # When: another tenant sends a small one
    status, small = call(
        base_url,
        "POST",
        "/v1/documents",
        {"content": "Bob prefers tea.", "extract": "light"},
        other_tenant.plaintext,
    )
    assert status == 202

    # Then: it is done while the large ones are still going
    def state(key: str, document_id: str) -> str:
        return str(call(base_url, "GET", f"/v1/documents/{document_id}", key=key)[1]["status"])

    assert wait_for(lambda: state(other_tenant.plaintext, small["id"]) == "done", timeout=60)
    assert all(state(tenant.plaintext, body["id"]) not in ("done", "failed") for _, body in large)
    for _, body in large:  # stop them: the run finds its document gone at its next write
        assert call(base_url, "DELETE", f"/v1/documents/{body['id']}", key=tenant.plaintext)[0] == 204


def test_a_crashed_api_worker_is_replaced(server: LocalServer, tenant: IssuedKey) -> None:
    # Given: one API worker (of 2, beside 2 ingestion workers) killed outright
    assert wait_for(lambda: len(server.worker_pids()) == 4, 30)
    workers = server.worker_pids()
    api = [pid for pid in workers if "api" in " ".join(psutil.Process(pid).cmdline())]
    os.kill(api[0], signal.SIGKILL)
    assert wait_for(lambda: not psutil.pid_exists(api[0]), 10)

    # When / Then: requests keep being served (one that raced the crash would get a 502, as an
    # invocation on a Lambda container that dies fails), and a new worker takes its place
    for _ in range(6):
        assert call(server.url, "POST", "/v1/search", {"query": "anything"}, tenant.plaintext)[0] == 200
    assert wait_for(lambda: len(server.worker_pids()) == 4 and api[0] not in server.worker_pids(), 30)


def test_a_crashed_postgresql_is_started_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Given: `engram local` on its own embedded PostgreSQL, whose server is killed outright
    data_dir = tmp_path_factory.mktemp("pg-crash")
    server = LocalServer(data_dir, {"ENGRAM_INGEST_WORKERS": "1"}).start()
    try:
        (postmaster,) = postgres_processes(data_dir / "pg")
        postmaster.kill()

        # When / Then: a new server is started, and the API answers with the database up
        def restarted() -> bool:
            return any(p.pid != postmaster.pid for p in postgres_processes(data_dir / "pg"))

        assert wait_for(restarted, 30), server.output()
        assert wait_for(
            lambda: call(server.url, "GET", "/health")[1] == {"status": "ok", "database": "ok"}, 30
        )
    finally:
        assert server.stop() == 0, server.output()
    assert postgres_processes(data_dir / "pg") == []


def _documents(url: str, key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        status, page = call(url, "POST", "/v1/documents/list", {"limit": 100, "cursor": cursor}, key)
        assert status == 200, page
        found += page["documents"]
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def test_kill_9_during_ingestion_then_restart_ends_every_document_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    data_dir = tmp_path_factory.mktemp("killed-ingesting")
    key = "engram_kill9-" + "k" * 24
    env = {"ENGRAM_INGEST_WORKERS": "1", "ENGRAM_DEV_API_KEY": key}
    texts = [
        f"Note {i}: Alice met Bob {i} times in Paris. The budget for project {i} is {i * 1000} euros.\n\n"
        * 40
        for i in range(8)
    ]
    server = LocalServer(data_dir, env).start()
    try:
        # Given: eight documents sent, and ingestion under way
        for text in texts:
            status, accepted = call(
                server.url, "POST", "/v1/documents", {"content": text, "container": "k"}, key
            )
            assert status == 202, accepted
        busy = ("extracting", "chunking", "embedding", "indexing")
        assert wait_for(
            lambda: any(d["status"] in busy for d in _documents(server.url, key)), timeout=60, every=0.05
        ), server.output()
        # When: the whole stack is killed outright, mid-step
        server.kill()
    except BaseException:
        server.kill()
        raise

    server = LocalServer(data_dir, env).start()  # and started again
    try:
        # Then: every document ends done or failed, once, as a clean ingestion of the same text ends
        def finished() -> bool:
            return all(d["status"] in ("done", "failed") for d in _documents(server.url, key))

        assert wait_for(finished, timeout=240, every=0.5), server.output()
        resumed = _documents(server.url, key)
        assert len(resumed) == len(texts)
        for text in texts:
            status, again = call(
                server.url, "POST", "/v1/documents", {"content": text, "container": "k"}, key
            )
            assert (status, again["duplicate"]) == (
                202,
                True,
            )  # exactly once: the same bytes are the same document
            status, clean = call(
                server.url, "POST", "/v1/documents", {"content": text, "container": "clean"}, key
            )
            assert status == 202 and not clean["duplicate"]
        assert wait_for(finished, timeout=240, every=0.5), server.output()
        by_container: dict[str, dict[str, tuple[str, int, int]]] = {"k": {}, "clean": {}}
        for d in _documents(server.url, key):
            by_container[d["container"]][d["checksum"]] = (d["status"], d["chunk_count"], d["memory_count"])
        assert by_container["k"] == by_container["clean"]
        status, listed = call(server.url, "POST", "/v1/memories/list", {"container": "k", "limit": 100}, key)
        contents = [m["content"] for m in listed["memories"]]
        assert status == 200 and len(contents) == len(set(contents))  # no memory stored twice
    finally:
        assert server.stop() == 0, server.output()


def test_workers_start_with_the_environment_of_a_lambda(server: LocalServer) -> None:
    # engram.runtime.FUNCTION_ENVIRONMENT, which infra/functions.py sets on every Lambda (no pydantic
    # plugin scan in each worker that starts or restarts)
    workers = server.worker_pids()

    assert workers
    for pid in workers:
        assert psutil.Process(pid).environ().get("PYDANTIC_DISABLE_PLUGINS") == "__all__", pid
