"""The hosted embedding providers, against stubbed HTTP (openai) and botocore's Stubber (bedrock)."""

from __future__ import annotations

import io
import json

import boto3
import httpx
import openai
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from engram.errors import InvalidInput, ProviderError
from engram.providers.embeddings import BedrockEmbedder, OpenAIEmbedder, make_embedder
from engram.settings import Settings


def _openai_client(handler) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    return openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def test_openai_sends_model_and_dimensions_and_keeps_input_order() -> None:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        # Answer out of order: the provider must put vectors back by index.
        data = [
            {"object": "embedding", "index": i, "embedding": [float(i)] * 8}
            for i in range(len(body["input"]))
        ]
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": list(reversed(data)),
                "model": body["model"],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            },
        )

    embedder = OpenAIEmbedder(
        model_id="text-embedding-3-small", dimensions=8, api_key=None, client=_openai_client(handler)
    )

    vectors = embedder.embed_documents(["a", "b", "c"])

    assert len(seen) == 1
    assert seen[0]["dimensions"] == 8
    assert seen[0]["model"] == "text-embedding-3-small"
    assert seen[0]["input"] == ["a", "b", "c"]
    assert vectors == [[0.0] * 8, [1.0] * 8, [2.0] * 8]


def test_openai_rate_limit_is_a_transient_provider_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down", "type": "rate_limit"}})

    embedder = OpenAIEmbedder(model_id="m", dimensions=4, api_key=None, client=_openai_client(handler))

    with pytest.raises(ProviderError) as raised:
        embedder.embed_query("x")
    assert raised.value.transient is True


def test_openai_bad_request_is_permanent() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "bad input", "type": "invalid_request_error"}})

    embedder = OpenAIEmbedder(model_id="m", dimensions=4, api_key=None, client=_openai_client(handler))

    with pytest.raises(ProviderError) as raised:
        embedder.embed_query("x")
    assert raised.value.transient is False


def test_openai_vectors_of_the_wrong_size_are_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "object": "list",
                "model": "m",
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
                "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
            },
        )

    embedder = OpenAIEmbedder(model_id="m", dimensions=4, api_key=None, client=_openai_client(handler))

    with pytest.raises(InvalidInput, match="dimensions"):
        embedder.embed_query("x")


def _bedrock_body(vector: list[float]) -> StreamingBody:
    raw = json.dumps({"embedding": vector, "inputTextTokenCount": 2}).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_bedrock_titan_v2_request_and_response() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_response(
        "invoke_model",
        {"body": _bedrock_body([0.5] * 256), "contentType": "application/json"},
        {
            "modelId": "amazon.titan-embed-text-v2:0",
            "contentType": "application/json",
            "accept": "application/json",
            "body": json.dumps({"inputText": "hello", "dimensions": 256, "normalize": True}),
        },
    )
    embedder = BedrockEmbedder(model_id="amazon.titan-embed-text-v2:0", dimensions=256, client=client)

    with stubber:
        vector = embedder.embed_query("hello")

    assert vector == [0.5] * 256
    stubber.assert_no_pending_responses()


def test_bedrock_throttling_is_transient() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    embedder = BedrockEmbedder(model_id="amazon.titan-embed-text-v2:0", dimensions=1024, client=client)

    with stubber, pytest.raises(ProviderError) as raised:
        embedder.embed_query("hello")
    assert raised.value.transient is True


def test_bedrock_rejects_dimensions_titan_does_not_offer() -> None:
    with pytest.raises(InvalidInput):
        BedrockEmbedder(model_id="amazon.titan-embed-text-v2:0", dimensions=384, client=object())


def test_settings_choose_the_provider() -> None:
    openai_embedder = make_embedder(
        Settings(embedding_provider="openai", openai_api_key="sk-test", embedding_dimensions=512)
    )
    bedrock_embedder = make_embedder(Settings(embedding_provider="bedrock", aws_region="eu-west-1"))
    local_embedder = make_embedder(Settings())

    assert (openai_embedder.model_id, openai_embedder.dimensions) == ("text-embedding-3-small", 512)
    assert (bedrock_embedder.model_id, bedrock_embedder.dimensions) == ("amazon.titan-embed-text-v2:0", 1024)
    assert (local_embedder.model_id, local_embedder.dimensions) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
    )


def test_openai_without_a_key_is_a_clear_error() -> None:
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        make_embedder(Settings(embedding_provider="openai", openai_api_key=None))
