"""LLM providers behind one Protocol, chosen by settings: `openai` (and any OpenAI-compatible server:
Ollama, vLLM, ...), `anthropic`, and `bedrock` (the Converse API).

Every call returns the text and the tokens it used. Failures are sorted once, here:
- transient (throttling, timeouts, connection errors, 408/409/425/429/5xx, Bedrock throttling): retried
  with exponential backoff and jitter (honouring Retry-After), then raised as `TransientError`, which
  the pipeline lets Step Functions retry;
- permanent (bad request, authentication, unknown model, ...): raised at once as
  `ProviderError(transient=False)`.
The SDKs' own retries are turned off, so there is exactly one retry policy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from engram.errors import ProviderError, TransientError
from engram.observability import logger

TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
# The longest wait between two attempts (a Retry-After beyond it is cut to it): a function's timeout
# budgets for it (infra/functions.py).
MAX_DELAY_S = 30.0
StopReason = Literal["stop", "length", "other"]


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class Image:
    """An image sent with a message, for models that see them (PNG, JPEG, GIF or WebP)."""

    data: bytes
    media_type: str

    @property
    def format(self) -> str:
        return self.media_type.split("/", 1)[1]


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str
    images: tuple[Image, ...] = ()  # shown before the text


@dataclass(frozen=True)
class Completion:
    text: str
    usage: TokenUsage
    model: str
    stop_reason: StopReason
    attempts: int = 1


@runtime_checkable
class LLM(Protocol):
    provider: str
    model_id: str

    def complete(
        self, system: str, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Completion:
        """One chat turn. Raises TransientError (after retries) or ProviderError (permanent)."""
        ...


class RetryableFailure(Exception):
    """Raised by a provider's single attempt when trying again may help."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def is_transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUS or status >= 500


def error_message(exc: object) -> str:
    """The API's own error message from an SDK status error, shortened for logs and errors."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def retry_after_seconds(headers: object) -> float | None:
    """Retry-After (seconds) or retry-after-ms from a response's headers, if present and sane."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except (TypeError, ValueError):
            continue  # an HTTP date: fall back to our own backoff
        if 0 <= value <= 3600:
            return value
    return None


class RetryingLLM:
    """The retry loop every provider shares; subclasses implement `_attempt`."""

    provider = "base"

    def __init__(
        self,
        *,
        model_id: str,
        max_output_tokens: int = 4096,
        temperature: float | None = None,
        max_attempts: int = 4,
        base_delay: float = 1.0,
        max_delay: float = MAX_DELAY_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model_id = model_id
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.max_attempts = max(1, max_attempts)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep

    def complete(
        self, system: str, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Completion:
        if not messages or messages[-1].role != "user":
            raise ValueError("a completion needs messages ending with the user's turn")
        limit = max_tokens or self.max_output_tokens
        for attempt in range(1, self.max_attempts + 1):
            try:
                completion = self._attempt(system, messages, limit)
            except RetryableFailure as failure:
                if attempt == self.max_attempts:
                    raise TransientError(
                        f"{self.provider} is unavailable after {attempt} attempts: {failure.reason}",
                        details={"provider": self.provider, "model": self.model_id},
                    ) from failure
                delay = self._delay(attempt, failure.retry_after)
                logger.warning(
                    "llm call failed, retrying",
                    extra={"provider": self.provider, "attempt": attempt, "delay": round(delay, 2)},
                )
                self._sleep(delay)
                continue
            except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
                # The SDK choked on what came back (an HTML page with a 200, bytes that are not
                # UTF-8, JSON of another shape): the provider's answer is unusable, not our failure.
                raise permanent(
                    self.provider, f"unreadable answer ({type(exc).__name__}: {str(exc)[:200]})"
                ) from exc
            logger.info(
                "llm call",
                extra={
                    "provider": self.provider,
                    "model": self.model_id,
                    "attempt": attempt,
                    **completion.usage.as_dict(),
                },
            )
            return Completion(
                completion.text, completion.usage, completion.model, completion.stop_reason, attempt
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.max_delay, retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # jitter, so retries from many workers spread out

    def _attempt(self, system: str, messages: Sequence[Message], max_tokens: int) -> Completion:
        raise NotImplementedError


def permanent(provider: str, message: str) -> ProviderError:
    return ProviderError(f"{provider}: {message}", transient=False, details={"provider": provider})
