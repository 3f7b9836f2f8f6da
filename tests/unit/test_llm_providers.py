"""The LLM providers against stubbed HTTP: openai through httpx.MockTransport and a scripted
OpenAI-compatible server on loopback, anthropic through its SDK's mock transport with recorded
response shapes, bedrock Converse through botocore's Stubber."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import boto3
import httpx
import httpx2
import openai
import pytest
from botocore.stub import Stubber

from engram.errors import ProviderError, TransientError
from engram.providers.llm import LLM, Message, TokenUsage
from engram.providers.llm_anthropic import AnthropicLLM
from engram.providers.llm_bedrock import BedrockLLM
from engram.providers.llm_factory import make_llm
from engram.providers.llm_openai import OpenAILLM
from engram.settings import Settings
from tests.llm_fakes import (
    Reply,
    anthropic_message,
    chat_completion,
    converse_response,
    scripted_openai_server,
)

ASK = [Message("user", "Alice lives in Paris.")]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _openai(handler: Any, sleeps: Sleeps | None = None, **kw: Any) -> OpenAILLM:
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    return OpenAILLM(
        client=client, model_id="gpt-4o-mini", sleep=Sleeps() if sleeps is None else sleeps, **kw
    )


# --- openai -----------------------------------------------------------------------------------


def test_openai_sends_system_prompt_json_mode_and_token_limit_and_reports_usage() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append({"path": request.url.path, **json.loads(request.content)})
        return httpx.Response(
            200, json=chat_completion('{"memories": []}', prompt_tokens=321, completion_tokens=9)
        )

    llm = _openai(handler, temperature=0.0, max_output_tokens=1000)

    completion = llm.complete("the system prompt", ASK)

    assert isinstance(llm, LLM)
    assert completion.text == '{"memories": []}'
    assert completion.usage == TokenUsage(321, 9)
    assert completion.stop_reason == "stop" and completion.attempts == 1
    (request,) = seen
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "gpt-4o-mini"
    assert request["messages"] == [
        {"role": "system", "content": "the system prompt"},
        {"role": "user", "content": "Alice lives in Paris."},
    ]
    assert request["response_format"] == {"type": "json_object"}
    assert request["max_completion_tokens"] == 1000 and "max_tokens" not in request
    assert request["temperature"] == 0.0


def test_openai_compatible_servers_get_max_tokens_and_no_json_mode_when_turned_off() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=chat_completion("{}", finish_reason="length"))

    completion = _openai(handler, legacy_max_tokens=True, json_mode=False).complete("s", ASK, max_tokens=300)

    assert seen[0]["max_tokens"] == 300 and "max_completion_tokens" not in seen[0]
    assert "response_format" not in seen[0] and "temperature" not in seen[0]
    assert completion.stop_reason == "length"


def test_openai_rate_limit_is_retried_honouring_retry_after_then_succeeds() -> None:
    answers = [
        httpx.Response(429, headers={"retry-after": "2"}, json={"error": {"message": "slow down"}}),
        httpx.Response(503, json={"error": {"message": "overloaded"}}),
        httpx.Response(200, json=chat_completion("{}")),
    ]
    sleeps = Sleeps()

    completion = _openai(lambda request: answers.pop(0), sleeps).complete("s", ASK)

    assert completion.attempts == 3
    assert sleeps[0] == 2.0  # the server's Retry-After
    assert 1.0 <= sleeps[1] <= 2.0  # our own backoff for the second retry: base 1 s doubled, with jitter
    assert answers == []


def test_openai_transient_failures_become_transient_error_after_the_last_attempt() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500, json={"error": {"message": "boom"}})

    sleeps = Sleeps()
    with pytest.raises(TransientError) as raised:
        _openai(handler, sleeps, max_attempts=3).complete("s", ASK)

    assert len(calls) == 3 and len(sleeps) == 2
    assert type(raised.value).__name__ == "TransientError"  # what Step Functions' retry rule matches
    assert "after 3 attempts" in raised.value.message and "boom" in raised.value.message


def test_openai_connection_errors_are_transient() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with pytest.raises(TransientError):
        _openai(handler, max_attempts=2).complete("s", ASK)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_openai_client_errors_are_permanent_and_not_retried(status: int) -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(status, json={"error": {"message": "model does not exist"}})

    with pytest.raises(ProviderError) as raised:
        _openai(handler).complete("s", ASK)

    assert raised.value.transient is False
    assert not isinstance(raised.value, TransientError)
    assert calls == [1]
    assert "model does not exist" in raised.value.message


def test_openai_compatible_server_on_loopback_through_settings() -> None:
    script: list[Reply | str] = [
        Reply(503, {"error": {"message": "loading model"}}),
        Reply(200, chat_completion('{"memories": []}', prompt_tokens=50, completion_tokens=5)),
    ]
    with scripted_openai_server(script) as server:
        settings = Settings(llm_provider="openai", llm_model="llama3.1:8b", llm_base_url=server.base_url)
        llm = make_llm(settings)
        assert isinstance(llm, OpenAILLM)
        llm._sleep = Sleeps()  # no real waiting between attempts

        completion = llm.complete("system", ASK)

    assert completion.text == '{"memories": []}' and completion.attempts == 2
    assert completion.usage == TokenUsage(50, 5)
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    body = server.requests[-1].body
    assert body["model"] == "llama3.1:8b"
    assert body["max_tokens"] == settings.llm_max_output_tokens  # a custom server gets max_tokens
    assert body["messages"][0] == {"role": "system", "content": "system"}
    assert server.requests[-1].headers["authorization"] == "Bearer not-needed"


def test_openai_base_url_environment_variable_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted_openai_server(["{}"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        monkeypatch.setenv("ENGRAM_LLM_PROVIDER", "openai")
        llm = make_llm(Settings())
        assert llm is not None

        llm.complete("s", ASK)

    assert server.requests[0].headers["authorization"] == "Bearer sk-local"
    assert server.requests[0].body["model"] == "gpt-4o-mini"


# --- anthropic --------------------------------------------------------------------------------


def _anthropic(handler: Any, sleeps: Sleeps | None = None, **kw: Any) -> AnthropicLLM:
    # The anthropic SDK runs on httpx2 (the same API as httpx), so its mock transport is httpx2's.
    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="https://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return AnthropicLLM(
        client=client, model_id="claude-haiku-4-5", sleep=Sleeps() if sleeps is None else sleeps, **kw
    )


def test_anthropic_sends_system_separately_and_counts_cached_input_tokens() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append({"path": request.url.path, **json.loads(request.content)})
        body = anthropic_message(
            '{"memories": []}',
            input_tokens=200,
            output_tokens=30,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=1000,
        )
        return httpx2.Response(200, json=body)

    completion = _anthropic(handler).complete("the system prompt", ASK, max_tokens=512)

    assert completion.text == '{"memories": []}'
    assert completion.usage == TokenUsage(1200, 30)
    assert completion.stop_reason == "stop"
    (request,) = seen
    assert request["path"] == "/v1/messages"
    assert request["system"] == "the system prompt"
    assert request["messages"] == [{"role": "user", "content": "Alice lives in Paris."}]
    assert request["max_tokens"] == 512 and request["model"] == "claude-haiku-4-5"


def test_anthropic_overloaded_and_rate_limited_are_retried() -> None:
    answers = [
        httpx2.Response(
            529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
        httpx2.Response(
            429,
            headers={"retry-after": "7"},
            json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
        ),
        httpx2.Response(200, json=anthropic_message("{}", stop_reason="max_tokens")),
    ]
    sleeps = Sleeps()

    completion = _anthropic(lambda request: answers.pop(0), sleeps).complete("s", ASK)

    assert completion.attempts == 3 and completion.stop_reason == "length"
    assert sleeps[1] == 7.0


def test_anthropic_keeps_failing_is_transient_error() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            529, json={"type": "error", "error": {"type": "overloaded_error", "message": "x"}}
        )

    with pytest.raises(TransientError):
        _anthropic(handler, max_attempts=2).complete("s", ASK)


def test_anthropic_authentication_error_is_permanent() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        return httpx2.Response(401, json=body)

    with pytest.raises(ProviderError) as raised:
        _anthropic(handler).complete("s", ASK)

    assert raised.value.transient is False and "invalid x-api-key" in raised.value.message


# --- bedrock ----------------------------------------------------------------------------------


def _bedrock(**kw: Any) -> tuple[BedrockLLM, Stubber, Sleeps]:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    sleeps = Sleeps()
    return (
        BedrockLLM(client=client, model_id="amazon.nova-lite-v1:0", sleep=sleeps, **kw),
        Stubber(client),
        sleeps,
    )


def test_bedrock_converse_request_shape_and_usage() -> None:
    llm, stubber, _ = _bedrock(temperature=0.0)
    stubber.add_response(
        "converse",
        converse_response('{"memories": []}', input_tokens=400, output_tokens=12),
        expected_params={
            "modelId": "amazon.nova-lite-v1:0",
            "system": [{"text": "the system prompt"}],
            "messages": [{"role": "user", "content": [{"text": "Alice lives in Paris."}]}],
            "inferenceConfig": {"maxTokens": 800, "temperature": 0.0},
        },
    )

    with stubber:
        completion = llm.complete("the system prompt", ASK, max_tokens=800)

    stubber.assert_no_pending_responses()
    assert completion.text == '{"memories": []}'
    assert completion.usage == TokenUsage(400, 12)
    assert completion.stop_reason == "stop"


def test_bedrock_throttling_is_retried_then_succeeds() -> None:
    llm, stubber, sleeps = _bedrock()
    stubber.add_client_error("converse", "ThrottlingException", "Too many requests", http_status_code=429)
    stubber.add_client_error("converse", "ServiceUnavailableException", "try later", http_status_code=503)
    stubber.add_response("converse", converse_response("{}", stop_reason="max_tokens"))

    with stubber:
        completion = llm.complete("s", ASK)

    assert completion.attempts == 3 and completion.stop_reason == "length" and len(sleeps) == 2


def test_bedrock_keeps_throttling_is_transient_error() -> None:
    llm, stubber, _ = _bedrock(max_attempts=2)
    for _ in range(2):
        stubber.add_client_error("converse", "ThrottlingException", "Too many requests", http_status_code=429)

    with stubber, pytest.raises(TransientError):
        llm.complete("s", ASK)
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "status"),
    [("ValidationException", 400), ("AccessDeniedException", 403), ("ResourceNotFoundException", 404)],
)
def test_bedrock_client_errors_are_permanent(code: str, status: int) -> None:
    llm, stubber, sleeps = _bedrock()
    stubber.add_client_error("converse", code, "nope", http_status_code=status)

    with stubber, pytest.raises(ProviderError) as raised:
        llm.complete("s", ASK)

    assert raised.value.transient is False and code in raised.value.message and sleeps == []


# --- the factory ------------------------------------------------------------------------------


def test_no_provider_means_no_llm() -> None:
    assert make_llm(Settings(llm_provider="none")) is None


def test_openai_without_key_or_server_is_a_clear_permanent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ENGRAM_OPENAI_API_KEY", "ENGRAM_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        make_llm(Settings(llm_provider="openai"))


def test_anthropic_without_key_is_a_clear_permanent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ENGRAM_ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        make_llm(Settings(llm_provider="anthropic"))


def test_providers_are_built_from_settings_with_their_default_models() -> None:
    anthropic_llm = make_llm(Settings(llm_provider="anthropic", anthropic_api_key="sk-ant"))
    bedrock_llm = make_llm(
        Settings(llm_provider="bedrock", aws_region="eu-west-1", llm_model="amazon.nova-pro-v1:0")
    )

    assert isinstance(anthropic_llm, AnthropicLLM) and anthropic_llm.model_id == "claude-haiku-4-5"
    assert isinstance(bedrock_llm, BedrockLLM) and bedrock_llm.model_id == "amazon.nova-pro-v1:0"
    assert bedrock_llm._client.meta.region_name == "eu-west-1"
