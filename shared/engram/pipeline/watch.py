"""`engram local`'s drop folder: files under $ENGRAM_DATA_DIR/drop/<container>/ become documents of
the dev tenant and go through the same steps as S3 drops.

Polling, no extra dependency: a file is taken once its size and modification time have stayed the
same for one interval (so a file still being copied in is not read half-written). Files stay where
they are; the same content again is a no-op (by checksum), a changed file is a new document.

What was taken (each file's size and modification time) is kept in `state_file`, so that a restart
takes only what was added or changed meanwhile, as S3 notifies a drop once: it does not read every file
of the folder again, nor run again a file that failed (content that failed is run again when it is sent
again; touching the file sends it again). The state names the tenant the files went to: against a new
database (a new tenant id) it is ignored, and every file is taken again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from pathlib import Path
from uuid import UUID

from engram.documents.blobs import sha256_hex
from engram.documents.service import DocumentService, Registration, StoredObject
from engram.limits import file_too_large
from engram.memories.models import CONTAINER_PATTERN
from engram.observability import logger

_CONTAINER = re.compile(CONTAINER_PATTERN)
_SKIP_SUFFIXES = (".tmp", ".part", ".crdownload", ".swp", ".partial", "~")
DEFAULT_CONTAINER = "default"


class DropWatcher:
    def __init__(
        self,
        root: Path,
        tenant_id: UUID,
        service: DocumentService,
        *,
        max_file_bytes: int,
        interval: float = 1.0,
        state_file: Path | None = None,
    ) -> None:
        self.root = root
        self.tenant_id = tenant_id
        self.service = service
        self.max_file_bytes = max_file_bytes
        self.interval = interval
        self.state_file = state_file
        self._seen: dict[Path, tuple[int, int]] = {}  # what the previous scan saw
        self._taken: dict[Path, tuple[int, int]] = self._load()  # what was registered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def scan_once(self, *, settle: bool = True) -> list[Registration]:
        """One pass over the folder. With settle=False, files are taken at once (tests)."""
        self.root.mkdir(parents=True, exist_ok=True)
        registrations: list[Registration] = []
        current: dict[Path, tuple[int, int]] = {}
        taken = False
        for path in sorted(self.root.rglob("*")):
            if not path.is_file() or self._skipped(path):
                continue
            try:
                stat = path.stat()
            except OSError:
                continue
            state = (stat.st_size, stat.st_mtime_ns)
            current[path] = state
            if self._taken.get(path) == state or (settle and self._seen.get(path) != state):
                continue
            registration = self._take(path, state)
            if registration is not None:
                registrations.append(registration)
            taken = True
        self._seen = current
        gone = [path for path in self._taken if path not in current]
        for path in gone:  # deleted: dropped again later, it is taken again
            del self._taken[path]
        if taken or gone:
            self._save()
        return registrations

    def _skipped(self, path: Path) -> bool:
        relative = path.relative_to(self.root)
        return any(part.startswith((".", "~")) for part in relative.parts) or path.name.endswith(
            _SKIP_SUFFIXES
        )

    def _take(self, path: Path, state: tuple[int, int]) -> Registration | None:
        relative = path.relative_to(self.root)
        container = relative.parts[0] if len(relative.parts) > 1 else DEFAULT_CONTAINER
        if not _CONTAINER.match(container):
            logger.warning(
                "drop folder name is not a valid container; skipped", extra={"path": str(relative)}
            )
            self._taken[path] = state
            return None
        stored = StoredObject(
            container=container,
            source_kind="drop",
            source=relative.as_posix(),
            filename=path.name,
            blob_key="",
            blob_version=str(state[1]),
            checksum="",
            size_bytes=state[0],
            identity=("drop", relative.as_posix(), str(state[1])),
        )
        try:
            if refusal := file_too_large(state[0], self.max_file_bytes):
                registration = self.service.register_rejected(self.tenant_id, stored, "too_large", refusal)
            else:
                data = path.read_bytes()
                stored = dataclasses.replace(
                    stored, checksum=sha256_hex(data), size_bytes=len(data), blob_version=None
                )
                registration = self.service.register_stored(self.tenant_id, stored, data)
        except OSError as exc:
            logger.warning("could not read a dropped file", extra={"path": str(relative), "reason": str(exc)})
            return None
        self._taken[path] = state
        logger.info(
            "dropped file registered",
            extra={
                "path": str(relative),
                "document_id": str(registration.document["id"]),
                "duplicate": registration.duplicate,
            },
        )
        return registration

    def _load(self) -> dict[Path, tuple[int, int]]:
        """What an earlier run took for this tenant (state_file), by path; nothing if there is none."""
        if self.state_file is None or not self.state_file.is_file():
            return {}
        try:
            saved = json.loads(self.state_file.read_text())
            if saved.get("tenant_id") != str(self.tenant_id):
                return {}
            return {
                self.root / name: (int(size), int(mtime)) for name, (size, mtime) in saved["files"].items()
            }
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            logger.warning(
                "drop folder state unreadable: every file is taken again",
                extra={"file": str(self.state_file)},
            )
            return {}

    def _save(self) -> None:
        """Write what was taken to state_file, whole or not at all (a crash leaves the earlier one)."""
        if self.state_file is None:
            return
        files = {path.relative_to(self.root).as_posix(): state for path, state in self._taken.items()}
        partial = self.state_file.with_name(self.state_file.name + ".partial")
        try:
            partial.write_text(json.dumps({"tenant_id": str(self.tenant_id), "files": files}))
            os.replace(partial, self.state_file)
        except OSError as exc:
            logger.warning("could not save the drop folder's state", extra={"reason": str(exc)})

    # --- background ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="engram-drop-watcher", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan_once()
            except Exception:
                logger.exception("drop folder scan failed")
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
