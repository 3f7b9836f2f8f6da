"""A run of the ingestion pipeline for one revision of a document: the reference its states pass
between steps (ids only, never content: Step Functions payloads stop at 256 KB), the run's name, and
the port a run is started through (engram.pipeline.start implements it)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID


@dataclass(frozen=True)
class DocumentRef:
    tenant_id: UUID
    document_id: UUID
    revision: int

    def to_event(self) -> dict[str, Any]:
        return {
            "tenant_id": str(self.tenant_id),
            "document_id": str(self.document_id),
            "revision": self.revision,
        }

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> DocumentRef:
        try:
            return cls(UUID(str(event["tenant_id"])), UUID(str(event["document_id"])), int(event["revision"]))
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"not a document reference: {sorted(event)}") from exc


def execution_name(*parts: object) -> str:
    """A Step Functions execution name (<= 80 of [A-Za-z0-9_-]) made from what identifies one run,
    e.g. bucket, key, version or ETag, and revision: the same object twice gives the same name, so
    StartExecution refuses the second. Readable prefix, collision-proof hash."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:40]
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", str(parts[1] if len(parts) > 1 else parts[0]))[-38:].strip("-")
    return f"{readable}-{digest}" if readable else digest


class PipelineStarter(Protocol):
    def start(self, ref: DocumentRef, name: str) -> None:
        """Start the run named `name` for `ref`; starting a name twice starts it once."""
        ...
