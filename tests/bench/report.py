"""Figures, their targets, the printed table and the JSON that lets two runs be compared."""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Target:
    op: str  # "<=" or ">="
    value: float

    def met_by(self, value: float) -> bool:
        return _OPS[self.op](value, self.value)


@dataclass
class Figure:
    key: str  # stable across runs: "search.hybrid.p95@100k"
    section: str
    name: str
    value: float | None
    unit: str = ""
    target: Target | None = None
    note: str = ""

    @property
    def status(self) -> str:
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return "n/a"
        if self.target is None:
            return "info"
        return "PASS" if self.target.met_by(self.value) else "MISS"


@dataclass
class Report:
    profile: str
    meta: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def extend(self, figures: Iterable[Figure]) -> None:
        self.figures.extend(figures)

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "meta": self.meta,
            "figures": [
                {**asdict(f), "target": asdict(f.target) if f.target else None, "status": f.status}
                for f in self.figures
            ],
        }


def percentiles(samples: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[int, float]:
    """Percentiles by linear interpolation between closest ranks (numpy's default method)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    out: dict[int, float] = {}
    for p in points:
        rank = (len(ordered) - 1) * p / 100
        low, high = math.floor(rank), math.ceil(rank)
        out[p] = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return out


def format_value(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int):  # a count: "73 chunks", not "73.0 chunks"
        text = f"{value:,}"
    elif unit in ("", "ratio"):
        # A small setting (a score floor of 0.0017) keeps two significant digits, not "0.002".
        text = f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2g}"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return f"{text} {unit}".strip() if unit not in ("", "ratio") else text


def format_target(target: Target | None, unit: str) -> str:
    if target is None:
        return ""
    return f"{target.op} {format_value(float(target.value), unit)}"  # a limit, never a count


def render(report: Report, previous: dict[str, float] | None = None) -> str:
    """The table: one row per figure, each beside its target, PASS/MISS, and the previous run."""
    headers = ["figure", "value", "target", "status", "previous"]
    rows: list[list[str]] = []
    section = None
    lines: list[str] = []
    for f in report.figures:
        if f.section != section:
            section = f.section
            rows.append([f"[{section}]", "", "", "", ""])
        prev = (previous or {}).get(f.key)
        name = f.name + (f"  ({f.note})" if f.note else "")
        rows.append(
            [
                "  " + name,
                format_value(f.value, f.unit),
                format_target(f.target, f.unit),
                f.status,
                format_value(prev, f.unit) if prev is not None else "",
            ]
        )
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    widths[0] = min(widths[0], 100)
    sep = "-+-".join("-" * w for w in widths)
    lines.append(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    lines.append(sep)
    for r in rows:
        cells = [
            r[0].ljust(widths[0]),
            r[1].rjust(widths[1]),
            r[2].ljust(widths[2]),
            r[3].ljust(widths[3]),
            r[4].rjust(widths[4]),
        ]
        lines.append(" | ".join(cells).rstrip())
    misses = [f for f in report.figures if f.status == "MISS"]
    passes = [f for f in report.figures if f.status == "PASS"]
    lines.append(sep)
    lines.append(
        f"{len(passes)} PASS, {len(misses)} MISS, {len(report.figures) - len(passes) - len(misses)} info/n.a."
    )
    return "\n".join(lines)


def previous_figures(history_dir: Path, profile: str) -> tuple[dict[str, float], str | None]:
    """The figures of the newest earlier run of the same profile, by key."""
    if not history_dir.is_dir():
        return {}, None
    for path in sorted(history_dir.glob(f"*-{profile}.json"), reverse=True):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        values = {f["key"]: f["value"] for f in data.get("figures", []) if f.get("value") is not None}
        return values, path.name
    return {}, None


def save(report: Report, bench_dir: Path) -> tuple[Path, Path]:
    """Write `latest.json` and a copy in `history/`, named by time and profile."""
    history = bench_dir / "history"
    history.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    payload = json.dumps(report.to_json(), indent=2, default=str)
    latest = bench_dir / "latest.json"
    latest.write_text(payload)
    archived = history / f"{stamp}-{report.profile}.json"
    archived.write_text(payload)
    return latest, archived
