"""Starting the real `engram local` (a subprocess, on a free port) for the end-to-end tests, and a
few raw-HTTP helpers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[2]
MODEL_CACHE = REPO / ".engram" / "test-models"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalServer:
    """`engram local` with `env` on top of a quiet base environment; `start()` waits for /health."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.env = {
            **os.environ,
            "ENGRAM_DATA_DIR": str(data_dir),
            "ENGRAM_PORT": str(self.port),
            "ENGRAM_LOCAL_MODEL_DIR": str(MODEL_CACHE),
            "ENGRAM_WORKERS": "2",
            "ENGRAM_INGEST_WORKERS": "2",
            "ENGRAM_WATCH_INTERVAL_SECONDS": "0.2",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_TRACE_DISABLED": "true",
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir / f"engram-local-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LocalServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "engram.cli", "local"], env=self.env, stdout=log, stderr=log, cwd=REPO
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"engram local exited ({self.process.returncode}):\n{self.output()}")
            try:
                if call(self.url, "GET", "/health", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"engram local did not answer /health within {timeout}s:\n{self.output()}")

    def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C, and its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()  # SIGKILL: no cleanup at all
        self.process.wait()

    def worker_pids(self) -> list[int]:
        assert self.process is not None
        try:
            return [p.pid for p in psutil.Process(self.process.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def api_worker_pids(self) -> list[int]:
        """The live API workers among worker_pids (not the ingestion ones), in order. A worker just
        killed is left out: it may still be a zombie the supervisor has not reaped (CI on e27c3f4 failed
        reading such a one's command line)."""
        return sorted(pid for pid in self.worker_pids() if "api" in " ".join(_command_line(pid)))

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:] if self.log.exists() else ""


def _command_line(pid: int) -> list[str]:
    """The process's command line; empty for one that has exited (a zombie's cannot be read)."""
    try:
        return psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:  # ZombieProcess is one
        return []


def call(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = None,
    *,
    raw: bytes | None = None,
    content_type: str | None = "application/json",
    timeout: float = 30,
) -> tuple[int, Any]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(base_url + path, data=data, method=method)
    if content_type:
        request.add_header("Content-Type", content_type)
    if key:
        request.add_header("x-api-key", key)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = response.read()
            return response.status, json.loads(payload) if payload else None
    except urllib.error.HTTPError as error:
        payload = error.read()
        return error.code, json.loads(payload) if payload else None


def raw_exchange(port: int, request: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as is on a new connection; the status, headers and body of the answer (read
    until the server closes or the declared length is in)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body


def postgres_processes(pg_dir: Path) -> list[psutil.Process]:
    """The PostgreSQL server processes serving `pg_dir` (the postmaster)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if process.info["name"] == "postgres" and str(pg_dir.resolve()) in cmdline:
            found.append(process)
    return found


@contextmanager
def table_locked(admin_conninfo: str, table: str) -> Iterator[psycopg.Connection[Any]]:
    """An exclusive lock on `table`, held in an open transaction of the connection yielded: a reader of the
    table (an export) waits there until that transaction ends (ROLLBACK, then BEGIN to hold it no more)."""
    with psycopg.connect(admin_conninfo, autocommit=True) as admin:
        admin.execute("BEGIN")
        admin.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(table)))
        try:
            yield admin
        finally:
            admin.execute("ROLLBACK")


def blocked_backends(admin: psycopg.Connection[Any]) -> list[int]:
    """The PostgreSQL backends waiting on a lock `admin` holds."""
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
    ).fetchall()
    return [row[0] for row in rows]
