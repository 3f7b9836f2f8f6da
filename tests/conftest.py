"""Shared fixtures: one throw-away embedded PostgreSQL per test session, the real local embedding
model, and a tenant (with its own API key) per test."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from engram import deps
from engram.local.asgi import GatewayApp, Invoke, server_config
from engram.local.channel import HttpCall
from engram.local.functions import invoke_pipeline_step
from engram.local.gateway import HttpResponse, LocalGateway
from engram.local.stack import LocalDatabase, open_database
from engram.providers.local_embeddings import LocalEmbedder
from engram.settings import Settings
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey

REPO = Path(__file__).resolve().parent.parent
MODEL_CACHE = REPO / ".engram" / "test-models"


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        data_dir=tmp_path_factory.mktemp("engram"),
        database_url=None,
        app_database_url=None,
        local_model_dir=MODEL_CACHE,
        exact_scan_threshold=20_000,
    )


@pytest.fixture(scope="session")
def local_db(settings: Settings) -> Iterator[LocalDatabase]:
    local = open_database(settings, cleanup_mode="delete")
    yield local
    local.close()
    if local.embedded is not None:
        local.embedded.stop()


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(model_dir=MODEL_CACHE)


@pytest.fixture(scope="session", autouse=True)
def installed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Handlers resolve their collaborators through engram.deps: point them at the test database.
    Pure unit tests (tests/unit) and the template tests (tests/infra) do not start the database."""
    no_db = ("tests/unit", "tests/infra")
    needs_db = any(not any(part in str(item.fspath) for part in no_db) for item in request.session.items)
    if not needs_db:
        yield
        return
    local_db = request.getfixturevalue("local_db")
    embedder = request.getfixturevalue("embedder")
    settings = request.getfixturevalue("settings")
    deps.install(
        deps.Deps(
            settings=settings, database=local_db.app, embedder=embedder, invoke_step=invoke_pipeline_step
        )
    )
    yield


@pytest.fixture
def tenant(local_db: LocalDatabase) -> IssuedKey:
    return tenants.issue_key(local_db.admin, f"t-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def other_tenant(local_db: LocalDatabase) -> IssuedKey:
    return tenants.issue_key(local_db.admin, f"o-{uuid.uuid4().hex[:12]}")


class _Borrowed:
    """The session's database, handed to a command, which closes it when done."""

    def __init__(self, local_db: LocalDatabase) -> None:
        self.app, self.admin, self.admin_conninfo = local_db.app, local_db.admin, local_db.admin_conninfo

    def close(self) -> None:
        pass


@pytest.fixture
def cli_on_test_db(local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """`engram` commands (engram.cli) run on the session's database instead of a data directory's."""
    from engram import cli

    monkeypatch.setattr(cli, "_local_database", lambda settings, command: _Borrowed(local_db))


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None


def assert_invalid(response: ApiResponse, field: str) -> None:
    """Bad input: a 422 `validation_error` that names the field (the API's promise for every route)."""
    assert response.status == 422, response.json
    error = response.json["error"]
    assert (error["code"], error.get("field")) == ("validation_error", field), error
    assert error["message"]


class Api:
    """Calls the API in-process through the local gateway: authorizer, proxy event, handler."""

    def __init__(self, gateway: LocalGateway, key: str | None) -> None:
        self.gateway, self.key = gateway, key

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        repeated: list[tuple[str, str]] | None = None,
    ) -> ApiResponse:
        """`repeated`: header lines sent in addition, even under a name already sent."""
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self.key is not None:
            sent["x-api-key"] = self.key
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        lines = [*sent.items(), *repeated] if repeated else sent
        response: HttpResponse = self.gateway.handle(method, path, lines, data)
        return ApiResponse(response.status, response.headers, response.body)

    def post(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.call("POST", path, body, **kw)

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.call("GET", path, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.call("PATCH", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.call("PUT", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.call("DELETE", path, **kw)


@pytest.fixture(scope="session")
def gateway() -> LocalGateway:
    return LocalGateway()


@pytest.fixture(scope="session")
def document(gateway: LocalGateway) -> dict[str, Any]:
    """The OpenAPI document GET /openapi.json serves."""
    return gateway.openapi()


@pytest.fixture
def api(gateway: LocalGateway, tenant: IssuedKey) -> Api:
    return Api(gateway, tenant.plaintext)


@pytest.fixture
def other_api(gateway: LocalGateway, other_tenant: IssuedKey) -> Api:
    return Api(gateway, other_tenant.plaintext)


@pytest.fixture
def anonymous_api(gateway: LocalGateway) -> Api:
    return Api(gateway, None)


@pytest.fixture(scope="session")
def live_url(gateway: LocalGateway) -> Iterator[str]:
    """The local stack over real HTTP on a free port: the front `engram local` serves (Hypercorn and
    its ASGI app), handing each request to the in-process gateway instead of a worker process."""
    import asyncio

    async def invoke(call: HttpCall, streamed: AsyncIterator[bytes] | None) -> HttpResponse:
        # The in-process gateway runs handlers as Lambda does: a streamed body is handed over whole.
        body = b"".join([piece async for piece in streamed]) if streamed is not None else call.body
        return await asyncio.to_thread(gateway.handle, call.method, call.raw_path, call.headers, body)

    with serving(invoke) as url:
        yield url


@contextmanager
def serving(invoke: Invoke) -> Iterator[str]:
    """The front `engram local` serves (Hypercorn and its ASGI app) on a free port, in a thread of its
    own, handing each request to `invoke`; its URL."""
    import asyncio
    import socket

    from hypercorn.asyncio import serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()

    async def main() -> None:
        ready.set()
        await serve(GatewayApp(invoke), server_config(f"127.0.0.1:{port}"), shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):  # until Hypercorn listens
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                break
        except OSError:
            threading.Event().wait(0.05)
    try:
        yield url
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(15)
