"""Times stated in text, as periods of days: "on 8 May 2023", "in June 2023", "last June", "yesterday",
"two weeks ago", "last weekend". Relative phrases are read against a reference day (a memory's own date,
or for a query the latest day its memories know).

The same reader dates memories when they are written (engram.memories.writer: which days a memory is
about) and reads the time a search query names (engram.memories.search.understanding). No SQL, no
clock: the caller passes the reference day.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "few": 3}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_AT = r"(?:(?:in|on|during|since|by|from|of)\s+)?"  # part of the phrase, so that it goes with it
# Later patterns never match text an earlier one took (spans are claimed in order).
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("iso", rf"\b{_AT}(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),
        ("day month year", rf"\b{_AT}{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),
        ("month day year", rf"\b{_AT}{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
        ("month year", rf"\b{_AT}{_MONTH},?\s+(?:of\s+)?{_YEAR}\b"),
        ("year", r"\b(?:in|during|of|since|by)\s+(?P<year>(?:19|20)\d\d)\b"),
        ("last month name", rf"\b(?:last|this past)\s+{_MONTH}\b"),
        ("in month", rf"\b(?:in|during|since)\s+(?:early\s+|late\s+|mid-?)?{_MONTH}\b"),
        ("yesterday", r"\byesterday\b"),
        ("today", r"\b(?:today|this morning|tonight|this afternoon|this evening)\b"),
        (
            "ago",
            r"\b(?P<count>\d+|a|an|one|two|three|four|five|six|few)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
        ),
        ("last unit", r"\b(?:last|past|previous)\s+(?P<unit>weekend|week|month|year)\b"),
        ("this unit", r"\bthis\s+(?P<unit>weekend|week|month|year)\b"),
        ("weekday", r"\b(?:on|last|this past)\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b"),
    )
)


@dataclass(frozen=True, order=True)
class Period:
    """Days from `start` up to, not including, `end`."""

    start: date
    end: date

    def overlaps(self, other: Period) -> bool:
        return self.start < other.end and other.start < self.end

    @classmethod
    def day(cls, day: date) -> Period:
        return cls(day, day + timedelta(days=1))

    @classmethod
    def month(cls, year: int, month: int) -> Period:
        return cls(date(year, month, 1), _add_months(date(year, month, 1), 1))


def periods_in(text: str, reference: date | None) -> list[Period]:
    """The periods a text states, in order of appearance; relative ones ("yesterday", "last June")
    only when there is a reference day."""
    return [period for _, period in _found(text, reference)]


def without_periods(text: str) -> str:
    """The text with the phrases that state times taken out ("what did she do in June 2023?" -> "what
    did she do?"), relative ones included."""
    spans = sorted(span for span, _ in _found(text, _ANY_DAY))
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return tidy("".join(out))


def tidy(text: str) -> str:
    """Spaces made right again after words were taken out."""
    return re.sub(r"\s+([?.!,;])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


_ANY_DAY = date(2000, 1, 1)


def _found(text: str, reference: date | None) -> list[tuple[tuple[int, int], Period]]:
    found: list[tuple[tuple[int, int], Period]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for (start, end), _ in found):
                continue
            period = _period(kind, match, reference)
            if period is not None:
                found.append((match.span(), period))
    return sorted(found)


def _period(kind: str, match: re.Match[str], reference: date | None) -> Period | None:
    groups = match.groupdict()
    try:
        if kind == "iso":
            return Period.day(date(int(groups["year"]), int(groups["month"]), int(groups["day"])))
        if kind in ("day month year", "month day year"):
            return Period.day(date(int(groups["year"]), MONTHS[groups["month"].lower()], int(groups["day"])))
        if kind == "month year":
            return Period.month(int(groups["year"]), MONTHS[groups["month"].lower()])
        if kind == "year":
            return Period(date(int(groups["year"]), 1, 1), date(int(groups["year"]) + 1, 1, 1))
    except ValueError:  # 31 February
        return None
    if reference is None:
        return None
    if kind in ("last month name", "in month"):
        month = MONTHS[groups["month"].lower()]
        # The latest such month that has begun: "in June" said in March means last June.
        year = reference.year if month <= reference.month else reference.year - 1
        if kind == "last month name" and month == reference.month:
            year -= 1
        return Period.month(year, month)
    if kind == "yesterday":
        return Period.day(reference - timedelta(days=1))
    if kind == "today":
        return Period.day(reference)
    if kind == "ago":
        count = NUMBERS.get(groups["count"].lower()) or int(groups["count"])
        return _ago(reference, groups["unit"].lower(), count)
    if kind in ("last unit", "this unit"):
        return _unit(reference, groups["unit"].lower(), last=kind == "last unit")
    if kind == "weekday":
        back = (reference.weekday() - WEEKDAYS.index(groups["weekday"].lower())) % 7 or 7
        return Period.day(reference - timedelta(days=back))
    return None


def _ago(reference: date, unit: str, count: int) -> Period:
    """Around the day that many units back: a day's exact, a week's +-3 days, a month's the month."""
    if unit == "day":
        return Period.day(reference - timedelta(days=count))
    if unit == "week":
        center = reference - timedelta(weeks=count)
        return Period(center - timedelta(days=3), center + timedelta(days=4))
    if unit == "month":
        first = _add_months(reference.replace(day=1), -count)
        return Period(first, _add_months(first, 1))
    return Period(date(reference.year - count, 1, 1), date(reference.year - count + 1, 1, 1))


def _unit(reference: date, unit: str, *, last: bool) -> Period:
    monday = reference - timedelta(days=reference.weekday())
    if unit == "weekend":
        # Last weekend: the one before this week's Monday; this weekend: this week's.
        saturday = monday - timedelta(days=2) if last else monday + timedelta(days=5)
        return Period(saturday, saturday + timedelta(days=2))
    if unit == "week":
        start = monday - timedelta(weeks=1) if last else monday
        return Period(start, start + timedelta(weeks=1))
    if unit == "month":
        first = _add_months(reference.replace(day=1), -1 if last else 0)
        return Period(first, _add_months(first, 1))
    year = reference.year - 1 if last else reference.year
    return Period(date(year, 1, 1), date(year + 1, 1, 1))


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


# --- a memory's own date ------------------------------------------------------------------------

# Metadata keys that hold when a memory was said or happened (LoCoMo: "session_date").
_DATE_KEYS = re.compile(r"(^|_)(date|time|timestamp|datetime|when|day|at)$", re.IGNORECASE)
_CLOCK = re.compile(r"\b\d{1,2}:\d\d\s*(?:[ap]\.?m\.?)?\s*(?:on\s+)?", re.IGNORECASE)


def stated_day(metadata: Mapping[str, Any]) -> date | None:
    """The day a memory's metadata says it is from ("session_date": "1:56 pm on 8 May, 2023",
    "date": "2023-05-08"), if exactly one top-level date-named key holds one date."""
    days = set()
    for key, value in metadata.items():
        if isinstance(value, str) and _DATE_KEYS.search(key):
            day = _one_day(value)
            if day is not None:
                days.add(day)
    return days.pop() if len(days) == 1 else None


def _one_day(value: str) -> date | None:
    text = value.strip()
    if len(text) > 80:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    periods = periods_in(_CLOCK.sub("", text), None)
    if len(periods) == 1 and periods[0].end - periods[0].start == timedelta(days=1):
        return periods[0].start
    return None


def memory_periods(
    content: str, metadata: Mapping[str, Any], valid_from: datetime
) -> list[tuple[Period, bool]]:
    """The periods a memory is about, each with whether its text states it: the day its metadata
    states (else the day of its `valid_from`), and the times its text states, read against that day."""
    own = Period.day(stated_day(metadata) or valid_from.date())
    stated = merge(periods_in(content, own.start))
    return [(own, False), *((period, True) for period in stated if period != own)]


def merge(periods: Iterable[Period]) -> list[Period]:
    out: list[Period] = []
    for period in sorted(set(periods)):
        if out and period.start <= out[-1].end:
            out[-1] = Period(out[-1].start, max(out[-1].end, period.end))
        else:
            out.append(period)
    return out
