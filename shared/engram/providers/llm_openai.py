"""The openai LLM provider: OpenAI's Chat Completions API, or any server that speaks it (Ollama, vLLM,
LM Studio, ...) through `OPENAI_BASE_URL` / `ENGRAM_LLM_BASE_URL`."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram.providers.llm import (
    Completion,
    Message,
    RetryableFailure,
    RetryingLLM,
    StopReason,
    TokenUsage,
    error_message,
    is_transient_status,
    permanent,
    retry_after_seconds,
)

if TYPE_CHECKING:
    from engram.settings import Settings

# A local server (Ollama, vLLM) ignores the key, but the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"


class OpenAILLM(RetryingLLM):
    provider = "openai"

    def __init__(
        self, *, client: Any, json_mode: bool = True, legacy_max_tokens: bool = False, **options: Any
    ):
        super().__init__(**options)
        self._client = client
        self.json_mode = json_mode
        # api.openai.com wants max_completion_tokens (its reasoning models reject max_tokens);
        # OpenAI-compatible servers have long understood max_tokens.
        self.legacy_max_tokens = legacy_max_tokens

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAILLM:
        import openai

        base_url = settings.llm_base_url or settings.openai_base_url
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        if not key and not base_url:
            raise permanent("openai", "OPENAI_API_KEY is required (or set OPENAI_BASE_URL to a local server)")
        client = openai.OpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url,
            timeout=settings.llm_timeout_seconds,
            max_retries=0,
        )
        return cls(
            client=client,
            json_mode=settings.llm_json_mode,
            legacy_max_tokens=base_url is not None,
            model_id=settings.resolved_llm_model or "",
            max_output_tokens=settings.llm_max_output_tokens,
            temperature=settings.llm_temperature,
            max_attempts=settings.llm_max_attempts,
        )

    def _attempt(self, system: str, messages: Sequence[Message], max_tokens: int) -> Completion:
        import openai

        request: dict[str, Any] = {
            "model": self.model_id,
            "messages": [
                {"role": "system", "content": system},
                *({"role": m.role, "content": _content(m)} for m in messages),
            ],
        }
        request["max_tokens" if self.legacy_max_tokens else "max_completion_tokens"] = max_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.json_mode:
            request["response_format"] = {"type": "json_object"}
        try:
            response = self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            reason = f"HTTP {exc.status_code}: {error_message(exc)}"
            if is_transient_status(exc.status_code):
                raise RetryableFailure(reason, retry_after_seconds(exc.response.headers)) from exc
            raise permanent(self.provider, reason) from exc
        except openai.APIConnectionError as exc:  # includes timeouts
            raise RetryableFailure(f"{type(exc).__name__}: {exc}") from exc
        except openai.OpenAIError as exc:  # e.g. a response body that is not what the API promises
            raise permanent(self.provider, f"{type(exc).__name__}: {exc}") from exc
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        usage = response.usage
        return Completion(
            text=text,
            usage=TokenUsage(
                int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
            ),
            model=str(response.model or self.model_id),
            stop_reason=_stop_reason(choice.finish_reason if choice is not None else None),
        )


def _content(message: Message) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.content
    images = [
        {
            "type": "image_url",
            "image_url": {"url": f"data:{i.media_type};base64,{base64.b64encode(i.data).decode('ascii')}"},
        }
        for i in message.images
    ]
    return [*images, {"type": "text", "text": message.content}]


def _stop_reason(finish_reason: str | None) -> StopReason:
    if finish_reason == "stop":
        return "stop"
    if finish_reason == "length":
        return "length"
    return "other"
