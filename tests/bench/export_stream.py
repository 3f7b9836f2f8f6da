"""How `POST /v1/export` of `engram local` behaves on a large tenant: time to the first byte, total time,
and the peak memory (VmHWM) of the API worker that served it.

    # once: a tenant of 20,000 memories (384-dim embeddings), into a data directory
    python -m tests.bench.export_stream seed --data-dir /tmp/exp-bench --memories 20000
    # then, for any checkout of the code (PYTHONPATH=<checkout>/shared runs that checkout's engram)
    python -m tests.bench.export_stream measure --data-dir /tmp/exp-bench

`engram local` is started with one API worker (so the worker that serves the export is known), on the
data directory's embedded PostgreSQL, and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psutil

from tests import export_records as records
from tests.e2e.local_server import MODEL_CACHE, free_port

KEY = "engram_bench-export-" + "k" * 24
DIMS = 384


def _start(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": str(data_dir),
        "ENGRAM_PORT": str(port),
        "ENGRAM_LOCAL_MODEL_DIR": str(MODEL_CACHE),
        "ENGRAM_WORKERS": "1",
        "ENGRAM_INGEST_WORKERS": "1",
        "ENGRAM_DEV_API_KEY": KEY,
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    log = (data_dir / "bench-local.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "engram.cli", "local"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("engram local did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    process.wait(60)


def _api_worker(process: subprocess.Popen[bytes]) -> psutil.Process:
    (worker,) = [
        p
        for p in psutil.Process(process.pid).children()
        if "api" in " ".join(p.cmdline()).split("worker")[-1]
    ]
    return worker


def _hwm_mb(worker: psutil.Process) -> float:
    for line in Path(f"/proc/{worker.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def seed(data_dir: Path, memories: int) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    file = data_dir / "seed.jsonl"
    with file.open("w") as out:
        out.write(records.jsonl([records.header(tenant="dev"), records.container("bench")]))
        for i in range(memories):
            vector = [round(rng.uniform(-0.2, 0.2), 6) for _ in range(DIMS)]
            record = records.memory(
                f"Bench fact {i}: the quarterly report covers revenue, churn and hiring.",
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                container="bench",
                tags=["bench"],
                metadata={"i": i},
                embedding=vector,
                embedding_model="sentence-transformers/all-MiniLM-L6-v2",
            )
            out.write(json.dumps(record) + "\n")
    # In-process, in one transaction (over HTTP, a 5 MB part of embedded memories can outlast the
    # API's 29 s on a busy machine).
    env = {**os.environ, "ENGRAM_DATA_DIR": str(data_dir), "ENGRAM_LOCAL_MODEL_DIR": str(MODEL_CACHE)}
    subprocess.run(
        [sys.executable, "-m", "engram.cli", "import", str(file), "--tenant", "dev"], check=True, env=env
    )


def measure(data_dir: Path, runs: int) -> None:
    process, url = _start(data_dir)
    try:
        worker = _api_worker(process)
        rss = worker.memory_info().rss / 2**20
        print(f"worker {worker.pid}: RSS before {rss:.0f} MB, VmHWM {_hwm_mb(worker):.0f} MB")
        for _ in range(runs):
            started = time.monotonic()
            first = None
            size = 0
            with httpx.stream(
                "POST", f"{url}/v1/export", json={}, headers={"x-api-key": KEY}, timeout=600
            ) as r:
                for piece in r.iter_raw():
                    if first is None:
                        first = time.monotonic() - started
                    size += len(piece)
            total = time.monotonic() - started
            print(
                f"status {r.status_code}: {size / 1e6:.1f} MB, first byte {first:.2f} s, "
                f"total {total:.2f} s, worker VmHWM {_hwm_mb(worker):.0f} MB, "
                f"RSS after {worker.memory_info().rss / 2**20:.0f} MB"
            )
    finally:
        _stop(process)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("seed", "measure"))
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if args.command == "seed":
        seed(args.data_dir, args.memories)
    else:
        measure(args.data_dir, args.runs)


if __name__ == "__main__":
    main()
