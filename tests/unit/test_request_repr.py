"""A request's repr (which Powertools formats on every call) leaves its vector out and keeps the rest."""

from __future__ import annotations

from engram.memories.models import MemoryBatch, MemoryCreate, SearchRequest

VECTOR = [0.123456] * 384


def test_a_search_request_repr_leaves_the_vector_out() -> None:
    body = {"query": "who owns alpha", "embedding": VECTOR, "embedding_model": "m"}

    request = SearchRequest.model_validate(body)

    assert "0.123456" not in repr(request)
    assert "who owns alpha" in repr(request) and "embedding_model='m'" in repr(request)
    assert request.embedding == VECTOR


def test_a_new_memory_repr_leaves_the_vector_out_alone_and_in_a_batch() -> None:
    memory = {"content": "Alice lives in Paris", "embedding": VECTOR, "embedding_model": "m"}

    single = MemoryCreate.model_validate(memory)
    batch = MemoryBatch.model_validate({"memories": [memory, memory]})

    assert "0.123456" not in repr(single) and "Alice lives in Paris" in repr(single)
    assert "0.123456" not in repr(batch) and repr(batch).count("Alice lives in Paris") == 2
    assert single.embedding == VECTOR
