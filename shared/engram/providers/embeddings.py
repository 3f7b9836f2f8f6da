"""Embedding providers behind one Protocol, chosen by settings.

Every vector Engram stores records the `model_id` that produced it; search only ever compares a query
vector with stored vectors of the same model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from engram.errors import InvalidInput, ProviderError
from engram.settings import Settings


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def check_dimensions(vector: Sequence[float], expected: int, *, field: str = "embedding") -> None:
    if len(vector) != expected:
        raise InvalidInput(
            f"{field} has {len(vector)} dimensions; this model produces {expected}",
            details={"field": field},
        )


def unknown_model(model: str, known: Sequence[str]) -> InvalidInput:
    """A query's embedding_model that no searched row has vectors of (its vector could match nothing),
    with the models this deployment has for the search: `known`."""
    return InvalidInput(
        f"embedding_model {model!r} has no vectors to search here; this deployment's models for it are "
        f"{', '.join(dict.fromkeys(known))}: send the embedding of one of them, or no embedding to have "
        "the query embedded",
        details={"field": "embedding_model"},
    )


class OpenAIEmbedder:
    """OpenAI (or any OpenAI-compatible server) embeddings, e.g. text-embedding-3-small."""

    max_batch = 2048  # the API's limit on inputs per request

    def __init__(
        self,
        *,
        model_id: str,
        dimensions: int,
        api_key: str | None,
        base_url: str | None = None,
        client: Any = None,
    ) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        if client is None:
            import openai

            if not api_key:
                raise ProviderError(
                    "OPENAI_API_KEY is required for the openai embedding provider", transient=False
                )
            client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=3)
        self._client = client

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.max_batch):
            batch = list(texts[start : start + self.max_batch])
            try:
                response = self._client.embeddings.create(
                    model=self.model_id, input=batch, dimensions=self.dimensions
                )
            except (openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError) as exc:
                raise ProviderError(f"openai embeddings unavailable: {exc}", transient=True) from exc
            except openai.APIError as exc:
                raise ProviderError(f"openai embeddings failed: {exc}", transient=False) from exc
            ordered = sorted(response.data, key=lambda item: item.index)
            vectors.extend(list(item.embedding) for item in ordered)
        for vector in vectors:
            check_dimensions(vector, self.dimensions)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class BedrockEmbedder:
    """Amazon Titan Text Embeddings v2 through the Bedrock runtime (one text per call)."""

    def __init__(self, *, model_id: str, dimensions: int, client: Any) -> None:
        if dimensions not in (256, 512, 1024):
            raise InvalidInput("Titan Text Embeddings v2 supports 256, 512 or 1024 dimensions")
        self.model_id = model_id
        self.dimensions = dimensions
        self._client = client

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        from botocore.exceptions import ClientError

        body = json.dumps({"inputText": text, "dimensions": self.dimensions, "normalize": True})
        try:
            response = self._client.invoke_model(
                modelId=self.model_id, body=body, contentType="application/json", accept="application/json"
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            transient = code in {
                "ThrottlingException",
                "ServiceUnavailableException",
                "ModelNotReadyException",
            }
            raise ProviderError(f"bedrock embeddings failed: {code}", transient=transient) from exc
        vector = json.loads(response["body"].read())["embedding"]
        check_dimensions(vector, self.dimensions)
        return [float(x) for x in vector]


def make_model_embedder(settings: Settings, model_id: str) -> Embedder:
    """The embedder of another model than the configured one (a tenant moved by `engram reembed`):
    a local model only; a remote provider has one model, the configured one."""
    if model_id == settings.resolved_embedding_model:
        return make_embedder(settings)
    from engram.providers.local_embeddings import LOCAL_MODELS, make_local_embedder

    if model_id not in LOCAL_MODELS:
        raise ProviderError(
            f"no embedder for model {model_id!r}: a tenant can be moved to a local model only "
            f"({', '.join(sorted(LOCAL_MODELS))})",
            transient=False,
        )
    return make_local_embedder(model_id, model_dir=settings.local_model_dir or settings.data_dir / "models")


def make_embedder(settings: Settings) -> Embedder:
    model_id = settings.resolved_embedding_model
    dimensions = settings.resolved_embedding_dimensions
    if settings.embedding_provider == "local":
        from engram.providers.local_embeddings import make_local_embedder

        return make_local_embedder(
            model_id, model_dir=settings.local_model_dir or settings.data_dir / "models"
        )
    if settings.embedding_provider == "openai":
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAIEmbedder(
            model_id=model_id, dimensions=dimensions, api_key=key, base_url=settings.openai_base_url
        )
    import boto3

    return BedrockEmbedder(
        model_id=model_id,
        dimensions=dimensions,
        client=boto3.client("bedrock-runtime", region_name=settings.aws_region),
    )
