"""The end-to-end tests drive the real `engram local` over HTTP: a subprocess on a free port, against
the test session's PostgreSQL (DATABASE_URL), so the `tenant` fixtures' keys work against it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engram.local.stack import LocalDatabase
from tests.e2e.local_server import LocalServer

LLM_TIMEOUT_SECONDS = 3


class HangingLLM:
    """An OpenAI-compatible address that never answers in time: what a stuck provider looks like."""

    def __init__(self) -> None:
        stop = self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stop.wait(60)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="session")
def hanging_llm() -> Iterator[HangingLLM]:
    llm = HangingLLM()
    yield llm
    llm.stop()


def server_env(local_db: LocalDatabase, llm: HangingLLM, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": local_db.admin_conninfo,
        "ENGRAM_LLM_PROVIDER": "openai",
        "ENGRAM_LLM_BASE_URL": llm.base_url,
        "ENGRAM_LLM_TIMEOUT_SECONDS": str(LLM_TIMEOUT_SECONDS),
        "ENGRAM_LLM_MAX_ATTEMPTS": "1",
        **extra,
    }


# The stack has an LLM (one that never answers), so a memory write defaults to `extract: full`: tests
# that are not about the LLM send `extract: light`. Stopped after the e2e tests: its relay, every half
# second, takes queued summaries and change events of the whole test database, so a later test that
# runs the relay itself (tests/integration/test_sample_events.py) would find its work already done.
@pytest.fixture(scope="package")
def server(
    local_db: LocalDatabase, hanging_llm: HangingLLM, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalServer]:
    started = LocalServer(tmp_path_factory.mktemp("local"), server_env(local_db, hanging_llm)).start()
    yield started
    assert started.stop() == 0, started.output()


@pytest.fixture
def base_url(server: LocalServer) -> str:
    return server.url


def wait_for(predicate: object, timeout: float, every: float = 0.1) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False
