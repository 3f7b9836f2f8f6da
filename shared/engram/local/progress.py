"""Progress bars for `engram export` and `engram import`: one bar per record kind, with counts (and
totals when they are known), on stderr so that stdout can carry the export itself."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class Bars:
    def __init__(self, title: str, *, totals: Mapping[str, int] | None = None, stream: IO[str]) -> None:
        self.title = title
        self.totals = dict(totals or {})
        self.progress = Progress(
            TextColumn("{task.description:>14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        for kind, total in self.totals.items():
            self._task(kind, total)

    def __enter__(self) -> Bars:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def _task(self, kind: str, total: int | None = None) -> TaskID:
        if kind not in self.tasks:
            self.tasks[kind] = self.progress.add_task(kind, total=total)
        return self.tasks[kind]

    def add(self, step: Counter[str]) -> None:
        for kind, n in step.items():
            self.progress.advance(self._task(kind), n)

    def one(self, kind: str) -> None:
        self.progress.advance(self._task(kind), 1)
