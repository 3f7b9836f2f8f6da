"""Every path parameter reaches the server as that one segment: "." and ".." (which HTTP clients
collapse as dot segments) are sent encoded and mean a key, a scope or an id, never a route above."""

from __future__ import annotations

import pytest

from engram_client import Engram, InvalidInputError, NotFoundError


def test_a_working_key_of_a_dot_is_set_read_and_deleted_alone(engram: Engram) -> None:
    for key in ("a", "b"):
        engram.set_working("team-notes", key, value=key)

    engram.set_working("team-notes", ".", value="dot")
    read = engram.get_working("team-notes", ".")
    engram.delete_working("team-notes", ".")

    assert (read.key, read.value) == (".", "dot")
    assert sorted(item.key for item in engram.iter_working("team-notes")) == ["a", "b"]
    with pytest.raises(NotFoundError):
        engram.get_working("team-notes", ".")


def test_a_scope_of_a_dot_does_not_reach_another_scope(engram: Engram) -> None:
    engram.set_working("planA", "x", value=1)

    with pytest.raises(NotFoundError):
        engram.delete_working(".", "planA")

    assert [item.key for item in engram.iter_working("planA")] == ["x"]


def test_two_dots_as_an_observation_id_do_not_reach_the_entity(engram: Engram) -> None:
    entity = engram.create_entity(name="Globex Corporation", entity_type="organization")

    with pytest.raises((NotFoundError, InvalidInputError)):
        engram.delete_observation(entity.id, "..")

    assert engram.get_entity(entity.id).entity.name == "Globex Corporation"


def test_an_empty_path_parameter_is_refused_before_anything_is_sent(engram: Engram) -> None:
    engram.set_working("team-notes", "a", value=1)

    with pytest.raises(InvalidInputError) as raised:
        engram.delete_working("team-notes", "")

    assert raised.value.field == "key" and raised.value.status is None
    assert [item.key for item in engram.iter_working("team-notes")] == ["a"]
