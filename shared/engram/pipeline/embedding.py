"""Embedding many texts: batched within the provider's limits, with backoff when it throttles."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from engram.documents.failures import PipelineFailure, TransientError
from engram.errors import InvalidInput, ProviderError
from engram.providers.embeddings import Embedder, check_dimensions


class ProviderRefused(PipelineFailure):
    code = "provider_error"


def embed_batched(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    batch_size: int,
    max_attempts: int = 5,
    base_delay: float = 1.0,
    max_delay: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[list[float]]:
    """Vectors for `texts`, in order. A throttled batch is retried with exponential backoff and full
    jitter; if it is still throttled after `max_attempts`, TransientError hands the retry to the state
    machine (which retries the whole step later). A refusal that retrying cannot fix fails the document."""
    size = max(1, min(batch_size, int(getattr(embedder, "max_batch", batch_size))))
    vectors: list[list[float]] = []
    for start in range(0, len(texts), size):
        batch = list(texts[start : start + size])
        for attempt in range(1, max_attempts + 1):
            try:
                result = embedder.embed_documents(batch)
                break
            except ProviderError as exc:
                if not exc.transient:
                    raise ProviderRefused(f"the embedding provider refused the text: {exc.message}") from exc
                if attempt == max_attempts:
                    raise TransientError(
                        f"embedding provider still throttling after {attempt} attempts"
                    ) from exc
                sleep(random.uniform(0, min(max_delay, base_delay * 2 ** (attempt - 1))))
        if len(result) != len(batch):
            raise TransientError(
                f"the embedding provider returned {len(result)} vectors for {len(batch)} texts"
            )
        for vector in result:
            try:
                check_dimensions(vector, embedder.dimensions)
            except InvalidInput as exc:
                raise ProviderRefused(exc.message) from exc
        vectors.extend(result)
    return vectors
