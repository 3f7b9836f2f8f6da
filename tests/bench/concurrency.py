"""`engram local` under concurrent clients, beside the single-lane server it replaced (the anchor).

Both servers run as subprocesses on the same database (the bench's own, through DATABASE_URL), side
by side; the clients alternate between them in short slices, so the machine's noise falls on both alike:

- throughput: 8 clients, each a closed loop of a mixed workload (hybrid searches with server-side
  query embedding, writes, reads by id, list pages) on keep-alive connections; requests/s, p50, p95;
- head-of-line blocking: small requests sent one at a time while another client runs exports of a
  20K-memory tenant back to back; their wait = latency - the same request's p50 on an idle server;
- readiness: `engram local` restarted on an existing data directory, until /health answers.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from tests.bench import loader, synthetic
from tests.bench.report import Figure, Target, percentiles
from tests.bench.writes import drop_tenant

REPO = Path(__file__).resolve().parents[2]
CLIENTS = 8
SLICES = 8  # per server, alternating
SPEC = synthetic.Spec(per_tenant=20_000, tenants=2)
SECTION = "concurrency (engram local vs the single-lane server, same data, same run)"
QUERIES = ("quarterly planning notes", "who owns the alpha project", "customer renewal risk", "travel plans")


@dataclass
class Server:
    name: str
    command: list[str]
    env: dict[str, str]
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> float:
        """Start it; seconds until /health answers. Its output goes to `log`."""
        started = time.perf_counter()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command, env=self.env, cwd=REPO, stdout=log, stderr=log)
        while time.perf_counter() - started < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log}")
            try:
                if _request(self.port, "GET", "/health", None, None)[0] == 200:
                    return time.perf_counter() - started
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"{self.name} did not answer /health within {timeout}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Run:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # ms
    errors: int = 0

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


def concurrency(bench_dir: Path, seconds: float, log: Callable[[str], None]) -> list[Figure]:
    """`seconds`: how long each server is measured, in SLICES slices alternating with the other's."""
    settings = loader.bench_settings(bench_dir / "db-concurrency", bench_dir / "models")
    log(f"concurrency: {CLIENTS} clients, {seconds:.0f}s per server in {SLICES} alternating slices")
    with loader.bench_database(settings) as local:
        dataset = loader.ensure_dataset(local, SPEC, log)
        keys = [_key(local, name) for name in dataset.tenants]
        ids = _memory_ids(local, dataset)
        # Writes go to a tenant of their own, dropped afterwards: the data set stays as loaded.
        writer = f"bench-concurrency-{uuid.uuid4().hex[:8]}"
        keys.append(_key(local, writer))
        try:
            servers = {
                "engram local": _engram_local(local, bench_dir),
                "single lane": _single_lane(local, bench_dir),
            }
            runs = {name: Run() for name in servers}
            waits: dict[str, list[float]] = {name: [] for name in servers}
            try:
                for server in servers.values():
                    server.start()
                    _warm(server.port, keys, ids)
                # Both stay up; the clients alternate between them in short slices, so that the
                # machine's other load falls on both alike.
                for _ in range(SLICES):
                    for name, server in servers.items():
                        run = _throughput(server.port, keys, ids, seconds / SLICES)
                        runs[name].seconds += run.seconds
                        runs[name].latencies += run.latencies
                        runs[name].errors += run.errors
                log("  " + ", ".join(f"{n} {r.rate:.1f} req/s" for n, r in runs.items()))
                for _ in range(2):
                    for name, server in servers.items():
                        waits[name] += _blocked(server.port, keys, ids)
            finally:
                for server in servers.values():
                    server.stop()
            ready = _readiness(bench_dir, log)
        finally:
            drop_tenant(local, tenants.ensure_tenant(local.admin, writer))
    return _figures(runs, waits, ready)


def _figures(runs: dict[str, Run], waits: dict[str, list[float]], ready: list[float]) -> list[Figure]:
    figures = []
    for name, run in runs.items():
        slug = name.replace(" ", "_")
        p = percentiles(run.latencies)
        figures += [
            Figure(
                f"concurrency.{slug}.rps",
                SECTION,
                f"{name}: requests/s, {CLIENTS} clients",
                run.rate,
                "req/s",
            ),
            Figure(f"concurrency.{slug}.p50", SECTION, f"{name}: p50", p[50], "ms"),
            Figure(f"concurrency.{slug}.p95", SECTION, f"{name}: p95", p[95], "ms"),
            Figure(f"concurrency.{slug}.errors", SECTION, f"{name}: failed requests", float(run.errors), ""),
            Figure(
                f"concurrency.{slug}.blocked_max",
                SECTION,
                f"{name}: a small request's longest wait during exports (n={len(waits[name])})",
                max(waits[name]),
                "ms",
                target=Target("<=", 100) if name == "engram local" else None,
            ),
            Figure(
                f"concurrency.{slug}.blocked_p50",
                SECTION,
                f"{name}: a small request's median wait during exports",
                percentiles(waits[name])[50],
                "ms",
            ),
        ]
    figures.append(
        Figure(
            "concurrency_ratio",
            SECTION,
            "throughput ratio, engram local / single lane",
            runs["engram local"].rate / runs["single lane"].rate,
            "x",
            target=Target(">=", 1.7),
            note=f"{_cores()} CPUs",
        )
    )
    figures.append(
        Figure(
            "local.ready.seconds",
            SECTION,
            f"engram local: start to /health answering, existing data dir (max of {len(ready)})",
            max(ready),
            "s",
            target=Target("<=", 3.0),
            note="runs: " + ", ".join(f"{r:.2f}" for r in ready),
        )
    )
    return figures


# --- servers -------------------------------------------------------------------------------------


def _base_env(bench_dir: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "ENGRAM_PORT": str(port),
        "ENGRAM_LOCAL_MODEL_DIR": str(bench_dir / "models"),
        "PYTHONPATH": str(REPO / "shared") + os.pathsep + str(REPO),
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }


def _engram_local(local: LocalDatabase, bench_dir: Path) -> Server:
    port = _free_port()
    env = {
        **_base_env(bench_dir, port),
        "DATABASE_URL": local.admin_conninfo,
        "ENGRAM_DATA_DIR": str(bench_dir / "local-concurrency"),
    }
    return Server(
        "engram local", [sys.executable, "-m", "engram.cli", "local"], env, port, _log(bench_dir, "local")
    )


def _single_lane(local: LocalDatabase, bench_dir: Path) -> Server:
    port = _free_port()
    env = {
        **_base_env(bench_dir, port),
        "DATABASE_URL": local.admin_conninfo,
        "ENGRAM_DATA_DIR": str(bench_dir / "local-concurrency"),
    }
    command = [sys.executable, "-m", "tests.bench.single_lane", str(port)]
    return Server("single lane", command, env, port, _log(bench_dir, "single-lane"))


def _readiness(bench_dir: Path, log: Callable[[str], None], starts: int = 3) -> list[float]:
    """`engram local` on its own embedded PostgreSQL: the first start makes the data directory (not
    counted), then each start is timed from the command to /health answering."""
    port = _free_port()
    env = {**_base_env(bench_dir, port), "ENGRAM_DATA_DIR": str(bench_dir / "local-ready")}
    env.pop("DATABASE_URL", None)
    command = [sys.executable, "-m", "engram.cli", "local"]
    server = Server("engram local", command, env, port, _log(bench_dir, "local-ready"))
    server.start()
    server.stop()
    seconds = []
    for _ in range(starts):
        seconds.append(server.start())
        server.stop()
    log("  ready in " + ", ".join(f"{s:.2f}s" for s in seconds))
    return seconds


# --- workload ------------------------------------------------------------------------------------


def _throughput(port: int, keys: list[str], ids: list[list[str]], seconds: float) -> Run:
    stop = threading.Event()
    runs = [Run() for _ in range(CLIENTS)]

    def client(index: int) -> None:
        rng = random.Random(index)
        tenant = index % len(ids)
        with _connection(port) as conn:
            while not stop.is_set():
                method, path, body = _mixed(rng, ids[tenant])
                key = keys[-1] if path == "/v1/memories" else keys[tenant]
                t0 = time.perf_counter()
                try:
                    status = _request(port, method, path, body, key, conn)[0]
                except OSError:
                    status = 0
                runs[index].latencies.append((time.perf_counter() - t0) * 1000)
                runs[index].errors += status >= 400 or status == 0

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    total = Run(seconds=time.perf_counter() - started)
    for run in runs:
        total.latencies += run.latencies
        total.errors += run.errors
    return total


def _mixed(rng: random.Random, ids: list[str]) -> tuple[str, str, Any]:
    """60% hybrid search, 20% writes, 10% reads by id, 10% list pages."""
    draw = rng.random()
    if draw < 0.6:
        return "POST", "/v1/search", {"query": f"{rng.choice(QUERIES)} {rng.randrange(1000)}", "limit": 10}
    if draw < 0.8:
        return "POST", "/v1/memories", {"content": f"note {uuid.uuid4().hex[:8]}: {rng.choice(QUERIES)}"}
    if draw < 0.9:
        return "GET", f"/v1/memories/{rng.choice(ids)}", None
    return "POST", "/v1/memories/list", {"limit": 20, "container": "crm.notes"}


def _blocked(port: int, keys: list[str], ids: list[list[str]], probes: int = 20) -> list[float]:
    """How much longer a small request takes while exports run: ms over its idle p50."""
    small = ("GET", f"/v1/memories/{ids[1][0]}", None)

    def probe() -> float:
        with _connection(port) as conn:
            t0 = time.perf_counter()
            _request(port, *small, keys[1], conn)
            return (time.perf_counter() - t0) * 1000

    idle = percentiles([probe() for _ in range(probes)])[50]
    stop = threading.Event()

    def exports() -> None:
        with _connection(port, timeout=120) as conn:
            while not stop.is_set():
                _request(port, "POST", "/v1/export", {}, keys[0], conn)

    exporter = threading.Thread(target=exports)
    exporter.start()
    time.sleep(0.3)
    try:
        waits = []
        for _ in range(probes):
            waits.append(max(0.0, probe() - idle))
            time.sleep(0.05)
    finally:
        stop.set()
        exporter.join()
    return waits


def _warm(port: int, keys: list[str], ids: list[list[str]]) -> None:
    rng = random.Random(99)
    with _connection(port) as conn:
        for i in range(40):
            method, path, body = _mixed(rng, ids[i % len(ids)])
            _request(
                port, method, path, body, keys[-1] if path == "/v1/memories" else keys[i % len(ids)], conn
            )


# --- plumbing ------------------------------------------------------------------------------------


@contextmanager
def _connection(port: int, timeout: float = 60) -> Iterator[http.client.HTTPConnection]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        yield conn
    finally:
        conn.close()


def _request(
    port: int,
    method: str,
    path: str,
    body: Any,
    key: str | None,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, bytes]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["x-api-key"] = key
    try:
        for attempt in range(2):  # a keep-alive connection the server closed: once more, anew
            try:
                conn.request(
                    method, path, body=json.dumps(body) if body is not None else None, headers=headers
                )
                response = conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")
    finally:
        if own:
            conn.close()


def _key(local: LocalDatabase, tenant_name: str) -> str:
    return tenants.issue_key(local.admin, tenant_name, label="bench-concurrency").plaintext


def _memory_ids(local: LocalDatabase, dataset: loader.Dataset) -> list[list[str]]:
    ids = []
    for tenant_id in dataset.tenants.values():
        with local.admin.tenant(tenant_id) as cur:
            rows = cur.execute(
                "SELECT id FROM memories WHERE tenant_id = %s LIMIT 200", (tenant_id,)
            ).fetchall()
        ids.append([str(r["id"]) for r in rows])
    return ids


def _log(bench_dir: Path, name: str) -> Path:
    return bench_dir / "logs" / f"concurrency-{name}.log"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
