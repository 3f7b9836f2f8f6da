"""`engram local`: database, dev key, model and HTTP front, until Ctrl-C."""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType

from engram import deps
from engram.db.database import Database
from engram.local.server import make_server
from engram.local.stack import install_app, open_database
from engram.settings import Settings
from engram.tenants import service

DEV_TENANT = "dev"


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
    started = time.monotonic()
    local = open_database(settings)
    install_app(local)
    key = ensure_dev_key(local.admin, settings)
    deps.embedder().embed_query("warm up")  # load the model now, not on the first request
    from engram.local.ingest import start_local_ingest

    ingest = start_local_ingest(settings, local.admin, DEV_TENANT)
    server = make_server(settings.host, settings.port)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    where = (settings.database_url and "DATABASE_URL") or str(settings.pg_data_dir.resolve())
    print(f"Engram local stack ready in {time.monotonic() - started:.1f}s", flush=True)
    print(f"  API:       http://{settings.host}:{settings.port}  (OpenAPI at /openapi.json)", flush=True)
    print(f"  database:  {where}", flush=True)
    print(
        f"  embedder:  {deps.embedder().model_id} (local)"
        if settings.embedding_provider == "local"
        else f"  embedder:  {deps.embedder().model_id}",
        flush=True,
    )
    print(f"  dev API key (tenant '{DEV_TENANT}'): {key}", flush=True)
    print(f"  drop folder: {settings.drop_dir.resolve()}/<container>/ (files become documents)", flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        ingest.stop()
        server.server_close()
        local.close()
        if local.embedded is not None:
            local.embedded.stop()
        print("Engram stopped.", flush=True)
    return 0
