"""The anthropic LLM provider: Anthropic's Messages API."""

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


class AnthropicLLM(RetryingLLM):
    provider = "anthropic"

    def __init__(self, *, client: Any, **options: Any) -> None:
        super().__init__(**options)
        self._client = client

    @classmethod
    def from_settings(cls, settings: Settings) -> AnthropicLLM:
        import anthropic

        if settings.anthropic_api_key is None:
            raise permanent("anthropic", "ANTHROPIC_API_KEY is required for the anthropic provider")
        client = anthropic.Anthropic(
            api_key=settings.anthropic_api_key.get_secret_value(),
            base_url=settings.anthropic_base_url,
            timeout=settings.llm_timeout_seconds,
            max_retries=0,
        )
        return cls(
            client=client,
            model_id=settings.resolved_llm_model or "",
            max_output_tokens=settings.llm_max_output_tokens,
            temperature=settings.llm_temperature,
            max_attempts=settings.llm_max_attempts,
        )

    def _attempt(self, system: str, messages: Sequence[Message], max_tokens: int) -> Completion:
        import anthropic

        request: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": m.role, "content": _content(m)} for m in messages],
        }
        # No temperature: the current Messages API (and SDK) no longer take one for its models.
        try:
            response = self._client.messages.create(**request)
        except anthropic.APIStatusError as exc:
            reason = f"HTTP {exc.status_code}: {error_message(exc)}"
            if is_transient_status(exc.status_code):  # 429, 500, 529 overloaded, ...
                raise RetryableFailure(reason, retry_after_seconds(exc.response.headers)) from exc
            raise permanent(self.provider, reason) from exc
        except anthropic.APIConnectionError as exc:  # includes timeouts
            raise RetryableFailure(f"{type(exc).__name__}: {exc}") from exc
        except anthropic.AnthropicError as exc:
            raise permanent(self.provider, f"{type(exc).__name__}: {exc}") from exc
        text = "".join(
            getattr(block, "text", "") for block in response.content if getattr(block, "type", "") == "text"
        )
        usage = response.usage
        # Cached prompt tokens are billed too (at other rates): count them as input.
        input_tokens = sum(
            int(getattr(usage, name, 0) or 0)
            for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return Completion(
            text=text,
            usage=TokenUsage(input_tokens, int(getattr(usage, "output_tokens", 0) or 0)),
            model=str(response.model or self.model_id),
            stop_reason=_stop_reason(response.stop_reason),
        )


def _content(message: Message) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.content
    images = [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": i.media_type,
                "data": base64.b64encode(i.data).decode("ascii"),
            },
        }
        for i in message.images
    ]
    return [*images, {"type": "text", "text": message.content}]


def _stop_reason(stop_reason: str | None) -> StopReason:
    if stop_reason in ("end_turn", "stop_sequence"):
        return "stop"
    if stop_reason == "max_tokens":
        return "length"
    return "other"
