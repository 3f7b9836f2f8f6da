"""Times stated in text become periods of days (engram.memories.periods), read against a reference day
when they are relative; a memory's own day comes from its metadata, else its valid_from."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from engram.memories.periods import Period, memory_periods, periods_in, stated_day, without_periods

MAY_8 = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We met on 8 May 2023.", Period.day(date(2023, 5, 8))),
        ("We met on May 8th, 2023.", Period.day(date(2023, 5, 8))),
        ("It was 2023-05-08 exactly", Period.day(date(2023, 5, 8))),
        ("back in June 2022 it rained", Period.month(2022, 6)),
        ("in 2021 we moved", Period(date(2021, 1, 1), date(2022, 1, 1))),
        ("I went there yesterday", Period.day(date(2023, 5, 7))),
        ("three days ago", Period.day(date(2023, 5, 5))),
        ("two weeks ago", Period(date(2023, 4, 21), date(2023, 4, 28))),
        ("a month ago", Period.month(2023, 4)),
        ("last June", Period.month(2022, 6)),  # the latest June that has begun
        ("in April", Period.month(2023, 4)),
        ("last May", Period.month(2022, 5)),  # said in May: the one before
        ("last weekend", Period(date(2023, 5, 6), date(2023, 5, 8))),
        ("last week", Period(date(2023, 5, 1), date(2023, 5, 8))),
        ("this month", Period.month(2023, 5)),
        ("on Friday", Period.day(date(2023, 5, 5))),
        ("last Monday", Period.day(date(2023, 5, 1))),  # not today
    ],
)
def test_a_stated_time_is_a_period(text: str, expected: Period) -> None:
    assert periods_in(text, MAY_8) == [expected]


def test_relative_times_need_a_reference_day_and_absolute_ones_do_not() -> None:
    text = "Yesterday I said that in June 2022 we moved."

    assert periods_in(text, None) == [Period.month(2022, 6)]
    assert periods_in(text, MAY_8) == [Period.day(date(2023, 5, 7)), Period.month(2022, 6)]


def test_impossible_days_and_plain_numbers_are_not_days() -> None:
    assert periods_in("on 31 February 2023", MAY_8) == [Period.month(2023, 2)]  # the month it names
    assert periods_in("I ran 2023 metres in May", None) == []
    assert periods_in("the may pole and a march", MAY_8) == []  # "may" and "march" without "in"


def test_the_phrases_that_state_times_can_be_taken_out() -> None:
    assert without_periods("What did Ana do in June 2023?") == "What did Ana do?"
    assert without_periods("Who called yesterday, and who two weeks ago?") == "Who called, and who?"
    assert without_periods("no time here") == "no time here"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"session_date": "1:56 pm on 8 May, 2023"}, MAY_8),
        ({"date": "2023-05-08"}, MAY_8),
        ({"timestamp": "2023-05-08T10:00:00Z"}, MAY_8),
        ({"session_date": "8 May 2023", "date": "2023-05-08"}, MAY_8),  # the same day twice
        ({"session_date": "8 May 2023", "date": "2023-05-09"}, None),  # two days: none is the day
        ({"date": "May 2023"}, None),  # a month is not a day
        ({"note": "8 May 2023"}, None),  # not a key that holds a date
        ({"date": 20230508}, None),
    ],
)
def test_a_memorys_day_is_the_one_its_metadata_states(
    metadata: dict[str, object], expected: date | None
) -> None:
    assert stated_day(metadata) == expected


def test_a_memory_is_about_its_own_day_and_the_times_its_text_states() -> None:
    written = datetime(2026, 1, 1, 12, tzinfo=UTC)

    from_metadata = memory_periods(
        "Caroline: I adopted a cat yesterday, and in 2022 I lived in Oslo.",
        {"session_date": "8 May 2023"},
        written,
    )
    plain = memory_periods("Nothing dated here.", {}, written)
    same_day = memory_periods("Today is 8 May 2023.", {"date": "2023-05-08"}, written)

    assert from_metadata == [
        (Period.day(MAY_8), False),
        (Period(date(2022, 1, 1), date(2023, 1, 1)), True),
        (Period.day(date(2023, 5, 7)), True),
    ]
    assert plain == [(Period.day(date(2026, 1, 1)), False)]
    assert same_day == [(Period.day(MAY_8), False)]  # its own day is not stated twice
