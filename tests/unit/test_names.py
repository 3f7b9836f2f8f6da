"""Entity name keys: one person is one key, however the name is written; different names stay apart."""

from __future__ import annotations

import pytest

from engram.graph.names import display_name, normalize_name, normalize_type, query_keys


@pytest.mark.parametrize(
    ("spellings", "key"),
    [
        (
            ["Dr. Alice Smith", "alice smith", "ALICE  SMITH", "Alice Smith, PhD", "Ms Alice Smith"],
            "alice smith",
        ),
        (["J.R.R. Tolkien", "J. R. R. Tolkien", "JRR Tolkien", "jrr tolkien"], "jrr tolkien"),
        (["Jean-Luc Picard", "Jean Luc Picard", "jean\u2013luc picard"], "jean luc picard"),
        (["O'Brien", "O\u2019Brien", "OBrien"], "obrien"),
        (["\uff21\uff2c\uff29\uff23\uff25", "Alice", "alice\u200b", " Alice\t"], "alice"),
        (["Straße", "STRASSE"], "strasse"),
        (["Prof. Dr. Zoë Müller", "zoë müller"], "zoë müller"),
        (["DGIA", "dgia", "D.G.I.A."], "dgia"),
    ],
)
def test_spellings_of_one_name_share_a_key(spellings: list[str], key: str) -> None:
    assert {normalize_name(s) for s in spellings} == {key}


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("C#", "C"),
        ("AT&T", "ATT"),
        ("John Smith Jr.", "John Smith"),
        ("Alice Smith", "Alice"),
        ("Zoë", "Zoe"),
    ],
)
def test_different_names_keep_different_keys(one: str, other: str) -> None:
    assert normalize_name(one) != normalize_name(other)


def test_a_lone_title_is_a_name_and_punctuation_alone_is_none() -> None:
    assert normalize_name("Dr.") == "dr"
    assert normalize_name("!!! ...") == ""


def test_display_names_are_tidied_but_keep_their_case() -> None:
    assert display_name("  Alice \n  Smith\x00 ") == "Alice Smith"


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("Person", "person"),
        ("Lives In", "lives_in"),
        ("works-for", "works_for"),
        ("Organisation", "organization"),
    ],
)
def test_types_are_lowercase_words_joined_by_underscores(raw: str, slug: str) -> None:
    assert normalize_type(raw) == slug


def test_query_keys_are_the_keys_of_every_run_of_up_to_four_words() -> None:
    keys, _ = query_keys("Where does Dr. Alice Smith live?")

    assert "alice smith" in keys and "alice" in keys and "live" in keys
    assert "does dr alice smith" in keys and "dr alice smith" not in keys  # a leading title is dropped
    assert keys.index("alice smith") < keys.index("alice")  # longer names first
    assert len(keys) == len(set(keys))
    assert query_keys("") == ((), ()) and query_keys("?? !!") == ((), ())
    assert len(query_keys(" ".join(f"w{i}" for i in range(100)))[0]) == 64


def test_only_runs_written_as_names_are_named_keys() -> None:
    _, named = query_keys("Where does Dr. Alice Smith live?")
    assert set(named) == {"alice smith", "alice", "smith", "dr"}  # not the query's first word alone
    assert query_keys("who helps new hires")[1] == ()
    assert query_keys("New hires get what?")[1] == ()
    assert query_keys("New York trips")[1] == ("new york", "york")


def test_a_possessive_in_a_query_names_its_owner() -> None:
    _, named = query_keys("What changed at Katherine Johnson's workplace?")
    assert "katherine johnson" in named and "katherine johnsons" not in named
    assert query_keys("Where is James\u2019 cat, and Alice\u2019s?")[1] == ("james", "alice")
