"""What a search query says besides its words: the time it names and the people it is about. Hands the
planner hints (engram.memories.search.plan.SearchPlan: `period`, `people`); no SQL here.

- Time: "in June 2023", "on 8 May 2023" are periods as written; "last June", "two weeks ago",
  "yesterday" are read against a reference day, the latest day the searched memories know (a
  conversation from 2023 is asked about in its own time, not the server's). "before the move" and
  "after the move" name an event: the search finds it first (its day becomes the end or start of the
  period).
- People: words written as names (capitalised, not the query's first word, not a month or a weekday),
  "Caroline's" read as "Caroline". Search ranks memories that name them, and memories linked to the
  entities of those names or one relation away from them (the graph leg).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from engram.graph.names import normalize_name
from engram.memories.periods import MONTHS, WEEKDAYS, Period, periods_in, tidy, without_periods

_ANY_DAY = date(2000, 1, 1)

_EVENT = re.compile(
    r"\b(?P<side>before|after|since|until|prior to)\s+"
    r"(?P<event>(?:the|my|our|her|his|their)\s+[\w\s'-]{2,40}?)(?=[?.!,;]|$)",
    re.IGNORECASE,
)
_APOSTROPHES = "'\u2019"
# A word starts with a letter of any script: "Élodie" is a name as "Elodie" is (its case decides).
_WORD = re.compile(rf"[^\W\d_][\w{_APOSTROPHES}.-]*")
_NOT_NAMES = frozenset(
    {*MONTHS, *WEEKDAYS, "i", "i'm", "i've", "i'd", "i'll", "mr", "mrs", "ms", "dr", "english", "lgbtq"}
)


@dataclass(frozen=True)
class Understanding:
    period: Period | None = None  # the time the query names
    needs_reference: bool = False  # the time is relative: read it again against the memories' latest day
    event: tuple[str, str] | None = None  # ("before" | "after", "the move"): find the event, then its side
    people: tuple[str, ...] = ()  # name keys (engram.graph.names.normalize_name)
    rest: str = ""  # the query without its times and events: what its words and vector should match


def understand(query: str, reference: date | None = None) -> Understanding:
    """The hints of a query. Without `reference`, relative times are left for a second reading
    (`needs_reference`), once the caller knows the day to read them against."""
    periods = periods_in(query, reference)
    # Relative phrases are those whose reading depends on the day: any day shows whether there are.
    relative = reference is None and periods_in(query, _ANY_DAY) != periods
    event = _EVENT.search(query)
    return Understanding(
        period=_span(periods),
        needs_reference=relative,
        event=(_side(event.group("side")), event.group("event").strip()) if event else None,
        people=people_in(query),
        rest=tidy(_EVENT.sub("", without_periods(query))) or query,
    )


def people_in(query: str) -> tuple[str, ...]:
    """Keys of the words written as names, in order, each once: "What did Melanie's cat destroy?" ->
    ("melanie",). Runs of names are one ("Katherine Johnson")."""
    words = [(m.group(0), m.start()) for m in _WORD.finditer(query)]
    names: list[str] = []
    run: list[str] = []
    for index, (word, _) in enumerate([*words, ("", -1)]):
        bare = re.sub(rf"[{_APOSTROPHES}]s$", "", word).rstrip(".")
        if (
            index > 0
            and bare[:1].isupper()
            and bare.lower() not in _NOT_NAMES
            and not _after_stop(query, words, index)
        ):
            run.append(bare)
            continue
        if run:
            key = normalize_name(" ".join(run))
            if key and key not in names:
                names.append(key)
            run = []
    return tuple(names)


def _after_stop(query: str, words: list[tuple[str, int]], index: int) -> bool:
    """A capitalised word that starts a sentence is not a name by its case alone."""
    before = query[: words[index][1]].rstrip()
    return before.endswith((".", "?", "!", ":", '"'))


def event_period(side: str, day: date) -> Period:
    """The period before or after an event's day (ten years at most, so it stays a period)."""
    if side == "before":
        return Period(day - timedelta(days=3650), day)
    return Period(day + timedelta(days=1), day + timedelta(days=3650))


def _side(word: str) -> str:
    return "before" if word.lower() in ("before", "until", "prior to") else "after"


def _span(periods: list[Period]) -> Period | None:
    if not periods:
        return None
    return Period(min(p.start for p in periods), max(p.end for p in periods))
