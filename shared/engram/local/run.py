"""`engram local`: the database, the API and ingestion workers, the HTTP front, until Ctrl-C.

One supervising process (this one) runs PostgreSQL (embedded, started again if it dies; or
DATABASE_URL), the HTTP front (Hypercorn with engram.local.asgi), the ingestion coordinator and the
drop-folder watcher, and keeps two pools of worker processes: `ENGRAM_WORKERS` API workers (default:
one per core) and `ENGRAM_INGEST_WORKERS` ingestion workers. A worker that dies is replaced. Ctrl-C
or SIGTERM stops everything: the front drains its requests, the workers exit, the embedded
PostgreSQL stops. If this process is killed outright, the workers die with it and the next start
adopts the PostgreSQL it left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tenacity import wait_exponential, wait_random

from engram import deps
from engram.db.connect import while_unreachable
from engram.db.database import Database
from engram.db.embedded import apply_settings, tuned_settings
from engram.local.asgi import GatewayApp, StreamedResponse, server_config
from engram.local.channel import Boot, HttpCall
from engram.local.gateway import HttpResponse, error, unavailable
from engram.local.ingest import DropFolder, IngestCoordinator, start_drop_folder
from engram.local.stack import LocalDatabase, open_database
from engram.local.workers import (
    InvocationTimedOut,
    NoWorkerFree,
    PoolClosed,
    StreamedReply,
    WorkerFailed,
    WorkerPool,
)
from engram.observability import logger
from engram.settings import Settings
from engram.tenants import service
from engram.unavailable import NOT_HANDLED, STOPPING_SECONDS, WORKERS_BUSY_SECONDS

if TYPE_CHECKING:
    from engram.relay import Relay

DEV_TENANT = "dev"
# API Gateway ends an integration after 29 s; the worker is then killed, as Lambda would end it.
API_TIMEOUT_SECONDS = 29.0
GRACE_SECONDS = 10.0
POSTGRES_CHECK_SECONDS = 1.0
# How long a step of the start waits for a PostgreSQL that died meanwhile (the watch starts it again).
RESTART_WAIT_SECONDS = 30.0
T = TypeVar("T")


def ensure_dev_key(local_admin: Database, settings: Settings) -> str:
    """ENGRAM_DEV_API_KEY if set; otherwise one generated on first start and kept (0600) in the
    data directory, so the dev key stays the same across restarts."""
    if settings.dev_api_key:
        key = settings.dev_api_key.get_secret_value()
        service.issue_key(local_admin, DEV_TENANT, plaintext=key, label="dev (ENGRAM_DEV_API_KEY)")
        return key
    key_file = settings.data_dir / "dev-api-key"
    if key_file.is_file():
        key = key_file.read_text().strip()
        service.issue_key(local_admin, DEV_TENANT, plaintext=key, label="dev")
        return key
    issued = service.issue_key(local_admin, DEV_TENANT, label="dev")
    key_file.touch(mode=0o600)
    key_file.write_text(issued.plaintext + "\n")
    return issued.plaintext


def run_local(settings: Settings) -> int:
    return asyncio.run(LocalStack(settings).run())


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


class PostgresWatch:
    """Starts the embedded PostgreSQL again when it dies; the workers' pools reconnect on their own.

    The restart runs in a thread, which cancelling the watch does not stop: `close` waits for a
    restart under way, so that PostgreSQL is never stopped while another thread is starting it (the
    stop would miss the new server, or race its start)."""

    def __init__(self, embedded: Any, interval: float = POSTGRES_CHECK_SECONDS) -> None:
        self.embedded = embedded
        self.interval = interval
        self._restart: asyncio.Future[bool] | None = None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._restart = asyncio.ensure_future(asyncio.to_thread(self.embedded.ensure_running))
            try:
                if await asyncio.shield(self._restart):
                    logger.warning("PostgreSQL had stopped: started it again")
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("could not start PostgreSQL again; retrying")

    async def close(self, task: asyncio.Task[None]) -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if self._restart is not None:
            await asyncio.gather(self._restart, return_exceptions=True)


def through_restarts(action: Callable[[], T], wait_seconds: float = RESTART_WAIT_SECONDS) -> T:
    """`action`, tried again while the database cannot be reached (for up to `wait_seconds`): a
    PostgreSQL that dies during the start is started again by PostgresWatch, as at any other time."""
    return while_unreachable(
        action,
        wait_seconds=wait_seconds,
        wait=wait_exponential(multiplier=0.2, max=2) + wait_random(0, 0.2),
        retrying="the database is down during the start; retrying",
    )


def open_tuned_database(settings: Settings) -> LocalDatabase:
    """The database, with the embedded server's settings tuned (restarted once when they need it)."""
    local = open_database(settings)
    if local.embedded is not None and apply_settings(local.admin_conninfo, tuned_settings()):
        local.close()
        local.embedded.stop()
        local = open_database(settings)
    return local


class LocalStack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stop_requested = asyncio.Event()
        self._database: asyncio.Future[LocalDatabase] | None = None

    async def run(self) -> int:
        started = time.monotonic()
        settings = self.settings
        loop = asyncio.get_running_loop()
        sock = listening_socket(settings.host, settings.port)  # a port in use fails here, at once
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal)

        # The API workers import their handlers while the database starts.
        self._database = loop.run_in_executor(None, open_tuned_database, settings)
        # The runs a request asks for start even if its client has gone (the coordinator is made below,
        # before the first request).
        api = WorkerPool(
            "api",
            settings.workers,
            lambda: self._boot("api"),
            on_start=lambda ref, name: coordinator.start(ref, name),
        )
        api.start()
        try:
            local = await self._database
        except BaseException:
            await api.close(grace=0)
            raise
        drop: DropFolder | None = None
        # Summaries and change events (webhooks), after each commit: engram.relay.
        relay_stop = threading.Event()
        relay: threading.Thread | None = None
        server: asyncio.Task[None] | None = None
        watcher: asyncio.Task[None] | None = None
        watch: PostgresWatch | None = None
        made_relay: asyncio.Future[Relay] | None = None
        ingest = WorkerPool("ingest", settings.ingest_workers, lambda: self._boot("ingest"), fair=True)
        coordinator = IngestCoordinator(
            ingest,
            loop,
            documents_running=4 * settings.ingest_workers,
            step_timeout_seconds=settings.step_timeout_seconds,
        )
        try:
            if local.embedded is not None:  # from here on: a PostgreSQL that dies is started again
                watch = PostgresWatch(local.embedded)
                watcher = loop.create_task(watch.run())
            deps.install(deps.Deps(settings=settings, database=local.app, starter=coordinator))
            # Made while the API workers boot: its imports (httpx and what httpx loads) would otherwise
            # hold the GIL from the event loop just as the first requests come in.
            made_relay = asyncio.ensure_future(asyncio.to_thread(deps.relay))
            key = await asyncio.to_thread(through_restarts, lambda: ensure_dev_key(local.admin, settings))
            app = GatewayApp(lambda call, body: self._http(api, call, body))
            config = server_config(f"fd://{sock.detach()}")  # the server owns (and closes) it now
            server = loop.create_task(self._serve(app, config))
            await self._until(api.wait_ready(), server)
            ready_seconds = time.monotonic() - started
            ingest.start()
            drop = await asyncio.to_thread(
                through_restarts, lambda: start_drop_folder(settings, local.admin, DEV_TENANT)
            )
            relay = threading.Thread(
                target=(await made_relay).run_until,
                args=(relay_stop, settings.relay_interval_seconds),
                name="relay",
                daemon=True,
            )
            relay.start()
            self._banner(local, key, ready_seconds, drop)
            await self._until(self.stop_requested.wait(), server)
        finally:
            print("Stopping Engram...", flush=True)
            if watch is not None and watcher is not None:
                await watch.close(watcher)
            if drop is not None:
                drop.stop()
            relay_stop.set()
            if made_relay is not None:  # not awaited if the start failed before
                await asyncio.gather(made_relay, return_exceptions=True)
            if relay is not None:
                await asyncio.to_thread(relay.join, GRACE_SECONDS)
            coordinator.stop()
            self.stop_requested.set()  # ends the server, which drains its requests first
            if server is not None:
                await asyncio.gather(server, return_exceptions=True)
            # A step cut short is resumed at the next start: ingestion is not waited for long.
            await asyncio.gather(api.close(), ingest.close(grace=2.0), return_exceptions=True)
            await asyncio.to_thread(coordinator.join, GRACE_SECONDS)
            local.close()
            if local.embedded is not None:
                try:
                    local.embedded.stop()
                except Exception:  # it died meanwhile: the next start adopts or replaces it
                    logger.exception("could not stop PostgreSQL")
            print("Engram stopped.", flush=True)
        return 0

    def _on_signal(self) -> None:
        if self.stop_requested.is_set():
            # A second Ctrl-C: leave at once. The workers die with this process; PostgreSQL is
            # adopted and stopped by the next start.
            os._exit(130)
        self.stop_requested.set()

    async def _until(self, awaitable: Awaitable[Any], server: asyncio.Task[None]) -> None:
        """Await `awaitable`, unless the server ends first (it failed: raise its error)."""
        waiting = asyncio.ensure_future(awaitable)
        await asyncio.wait({waiting, server}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            server.result()
            raise RuntimeError("the HTTP server stopped")

    async def _serve(self, app: GatewayApp, config: Any) -> None:
        from hypercorn.asyncio import serve

        await serve(app, config, shutdown_trigger=self.stop_requested.wait)  # type: ignore[arg-type]

    async def _boot(self, role: str) -> Boot:
        assert self._database is not None
        local = await asyncio.shield(self._database)
        settings = self.settings
        if local.embedded is not None:
            return Boot(role, settings, local.embedded.app_conninfo(settings.app_role), None)
        if settings.app_database_url:
            return Boot(role, settings, settings.app_database_url, None)
        return Boot(role, settings, local.admin_conninfo, settings.app_role)

    @staticmethod
    async def _http(
        api: WorkerPool, call: HttpCall, body: AsyncIterator[bytes] | None
    ) -> HttpResponse | StreamedResponse:
        try:
            reply = await api.invoke(call, timeout=API_TIMEOUT_SECONDS, wait=API_TIMEOUT_SECONDS, body=body)
        except NoWorkerFree:  # the call went to no worker (WorkerPool._give_up): nothing was handled
            busy = "every API worker stayed busy; retry later"
            return unavailable(NOT_HANDLED, busy, WORKERS_BUSY_SECONDS)
        except InvocationTimedOut:
            return error(504, "timeout", f"the request took longer than {API_TIMEOUT_SECONDS:.0f} s")
        except WorkerFailed:
            return error(502, "upstream_error", "the handler's process exited; it has been restarted")
        except PoolClosed:  # raised before the call went to a worker: nothing was handled
            return unavailable(NOT_HANDLED, "the server is stopping", STOPPING_SECONDS)
        head = reply.reply if isinstance(reply, StreamedReply) else reply
        response: HttpResponse = head.value
        if isinstance(reply, StreamedReply):
            return StreamedResponse(response, reply.body)
        return response

    def _banner(self, local: LocalDatabase, key: str, ready_seconds: float, drop: DropFolder) -> None:
        settings = self.settings
        where = (settings.database_url and "DATABASE_URL") or str(settings.pg_data_dir.resolve())
        embedder = deps.embedder().model_id if settings.embedding_provider != "local" else None
        lines = [
            f"Engram local stack ready in {ready_seconds:.1f}s",
            f"  API:       http://{settings.host}:{settings.port}  (OpenAPI at /openapi.json)",
            f"  workers:   {settings.workers} API, {settings.ingest_workers} ingestion",
            f"  database:  {where}",
            f"  embedder:  {embedder or settings.resolved_embedding_model + ' (local)'}",
            f"  dev API key (tenant '{DEV_TENANT}'): {key}",
            f"  drop folder: {settings.drop_dir.resolve()}/<container>/ (files become documents)",
        ]
        if drop.resumed:
            lines.append(f"  resumed {drop.resumed} unfinished document(s)")
        lines.append("Press Ctrl-C to stop.")
        print("\n".join(lines), flush=True)
        logger.debug("started", extra={"ready_seconds": ready_seconds})
