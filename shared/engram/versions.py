"""Versions for compare-and-swap: what an If-Match header asks for, and the conflict when the item is
not at that version. Working memory, plans and task contexts share them."""

from __future__ import annotations

from engram.errors import Conflict, InvalidInput


class VersionConflict(Conflict):
    code = "version_conflict"


class Expected:
    """What If-Match asks for: any version (no header), the key to exist ('*'), the key to be
    absent ('0'), or exactly one version."""

    ANY: Expected
    EXISTS: Expected
    ABSENT: Expected

    def __init__(self, version: int | None, *, exists: bool | None) -> None:
        self.version = version
        self.exists = exists

    @classmethod
    def parse(cls, header: str | None) -> Expected:
        if header is None:
            return cls.ANY
        # An If-Match sent empty is not "no condition": refused like any value that is no version.
        raw = header.strip()
        if raw == "*":
            return cls.EXISTS
        raw = raw.removeprefix("W/").strip('"')
        if not raw.isdigit() or len(raw) > 18:
            raise InvalidInput(
                "If-Match must be a version number this API returned, '0' (the key must not exist) or '*'",
                details={"field": "If-Match"},
            )
        version = int(raw)
        return cls.ABSENT if version == 0 else cls(version, exists=True)


Expected.ANY = Expected(None, exists=None)
Expected.EXISTS = Expected(None, exists=True)
Expected.ABSENT = Expected(None, exists=False)
