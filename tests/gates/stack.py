"""`engram local` on a free port with a throw-away data directory, and API keys for its tenants."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ENGRAM = str(Path(sys.executable).with_name("engram"))
START_TIMEOUT_S = 300


@dataclass
class LocalStack:
    base_url: str
    data_dir: Path
    env: dict[str, str]
    dev_key: str

    def create_key(self, tenant: str) -> str:
        """A key for another tenant, made as the README says: the CLI against the same data directory
        while the stack runs. The key is the last line it prints."""
        done = subprocess.run(
            [ENGRAM, "keys", "create", "--tenant", tenant],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1].strip()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def local_stack(*, keep: bool = False) -> Iterator[LocalStack]:
    """Start `engram local`, wait until /health answers, and stop it (SIGINT, as Ctrl-C) afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix="engram-gate-"))
    port = _free_port()
    dev_key = "engram_gate-" + secrets.token_urlsafe(24)
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": str(data_dir),
        "ENGRAM_PORT": str(port),
        "ENGRAM_DEV_API_KEY": dev_key,
        "ENGRAM_LLM_PROVIDER": "none",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    log = (data_dir / "engram-local.log").open("w")
    process = subprocess.Popen([ENGRAM, "local"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base_url, process, data_dir)
        yield LocalStack(base_url, data_dir, env, dev_key)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()
        if keep:
            print(f"data directory kept: {data_dir}", flush=True)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], data_dir: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"engram local exited ({process.returncode}):\n{(data_dir / 'engram-local.log').read_text()}"
            )
        try:
            if httpx.get(f"{base_url}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"engram local did not answer /health within {START_TIMEOUT_S}s")
