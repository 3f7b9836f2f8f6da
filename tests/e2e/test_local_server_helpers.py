"""The e2e helpers' own behaviour where a race made a test fail (tests/e2e/local_server.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from tests.e2e.conftest import wait_for
from tests.e2e.local_server import LocalServer

# A stand-in supervisor: one child that lives (named like an API worker) and one that exits at once
# and is never reaped, so it stays a zombie, as a killed worker is until `engram local` waits for it.
SUPERVISOR = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "api"])
subprocess.Popen([sys.executable, "-c", "pass", "api"])
time.sleep(60)
"""


def test_api_worker_pids_leaves_out_a_killed_worker_not_yet_reaped(tmp_path: Path) -> None:
    # Given: a supervisor with a live API worker and a dead, unreaped one
    server = LocalServer(tmp_path, {})
    server.process = subprocess.Popen([sys.executable, "-c", SUPERVISOR])
    try:
        assert wait_for(lambda: _zombies(server) == 1 and len(server.worker_pids()) == 2, 30)

        # When: the API workers are listed
        pids = server.api_worker_pids()

        # Then: only the live one, with no error for the zombie
        [live] = [pid for pid in server.worker_pids() if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        assert pids == [live]
    finally:
        for child in psutil.Process(server.process.pid).children():
            child.kill()
        server.process.kill()
        server.process.wait()


def _zombies(server: LocalServer) -> int:
    return sum(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE for pid in server.worker_pids())
