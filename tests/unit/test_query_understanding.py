"""What a search query says besides its words (engram.memories.search.understanding): the period it
names, whether that period is relative, an event it is before or after, and the people it names."""

from __future__ import annotations

from datetime import date

from engram.memories.periods import Period
from engram.memories.search.understanding import event_period, people_in, understand


def test_an_absolute_time_is_read_at_once_and_taken_out_of_the_words() -> None:
    hints = understand("What did Ana do in June 2023?")

    assert hints.period == Period.month(2023, 6)
    assert not hints.needs_reference
    assert hints.rest == "What did Ana do?"


def test_a_relative_time_waits_for_the_day_to_read_it_against() -> None:
    first = understand("What did Ana paint last June?")
    again = understand("What did Ana paint last June?", date(2024, 1, 2))

    assert first.period is None and first.needs_reference
    assert again.period == Period.month(2023, 6) and not again.needs_reference


def test_before_or_after_an_event_names_the_event() -> None:
    assert understand("Where did Ana live before the move?").event == ("before", "the move")
    assert understand("What has Ben done since his promotion?").event == ("after", "his promotion")
    assert understand("Where did Ana live before the move?").rest == "Where did Ana live?"
    assert understand("What did Ana eat before lunch?").event is None  # no "the", "her": not an event
    assert event_period("before", date(2023, 3, 1)).end == date(2023, 3, 1)
    assert event_period("after", date(2023, 3, 1)).start == date(2023, 3, 2)


def test_people_are_the_words_written_as_names() -> None:
    assert people_in("What did Melanie's cat destroy?") == ("melanie",)
    assert people_in("Did Katherine Johnson meet Ana?") == ("katherine johnson", "ana")
    assert people_in("Caroline went to Paris. Then what?") == ("paris",)  # a sentence's first word is not
    assert people_in("What did I do in June with Ben?") == ("ben",)  # months and "I" are not names
    assert people_in("what did they do") == ()


def test_a_name_that_starts_with_a_letter_outside_ascii_is_a_name() -> None:
    assert people_in("Where does Élodie live?") == ("élodie",)
    assert people_in("Did Øystein meet Åsa Ångström?") == ("øystein", "åsa ångström")
    assert people_in("What did Ærø's mayor say to Zoë?") == ("ærø", "zoë")
    assert people_in("Where is Élodie? Ärger, sagte sie.") == ("élodie",)  # still not a sentence's first word


def test_a_query_with_no_hints_is_left_as_it_is() -> None:
    hints = understand("how do tenants stay isolated")

    assert hints.period is None and hints.event is None and hints.people == ()
    assert hints.rest == "how do tenants stay isolated"
