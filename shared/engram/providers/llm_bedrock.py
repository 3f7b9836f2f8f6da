"""The bedrock LLM provider: Amazon Bedrock's Converse API, one request shape for every model on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram.providers.llm import (
    Completion,
    Message,
    RetryableFailure,
    RetryingLLM,
    StopReason,
    TokenUsage,
    permanent,
)

if TYPE_CHECKING:
    from engram.settings import Settings

TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "ServiceQuotaExceededException",  # on-demand throughput, per minute: it passes
        "RequestTimeout",
        "RequestTimeoutException",
    }
)


class BedrockLLM(RetryingLLM):
    provider = "bedrock"

    def __init__(self, *, client: Any, **options: Any) -> None:
        super().__init__(**options)
        self._client = client

    @classmethod
    def from_settings(cls, settings: Settings) -> BedrockLLM:
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"max_attempts": 1, "mode": "standard"},  # one retry policy: ours
            read_timeout=int(settings.llm_timeout_seconds),
            connect_timeout=10,
        )
        client = boto3.client("bedrock-runtime", region_name=settings.aws_region, config=config)
        return cls(
            client=client,
            model_id=settings.resolved_llm_model or "",
            max_output_tokens=settings.llm_max_output_tokens,
            temperature=settings.llm_temperature,
            max_attempts=settings.llm_max_attempts,
        )

    def _attempt(self, system: str, messages: Sequence[Message], max_tokens: int) -> Completion:
        from botocore.exceptions import BotoCoreError, ClientError

        inference: dict[str, Any] = {"maxTokens": max_tokens}
        if self.temperature is not None:
            inference["temperature"] = min(self.temperature, 1.0)
        try:
            response = self._client.converse(
                modelId=self.model_id,
                system=[{"text": system}],
                messages=[
                    {
                        "role": m.role,
                        "content": [
                            *({"image": {"format": i.format, "source": {"bytes": i.data}}} for i in m.images),
                            {"text": m.content},
                        ],
                    }
                    for m in messages
                ],
                inferenceConfig=inference,
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            reason = f"{code}: {str(error.get('Message', ''))[:300]}"
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            if code in TRANSIENT_CODES or status in (429, 503):
                raise RetryableFailure(reason) from exc
            raise permanent(self.provider, reason) from exc
        except BotoCoreError as exc:  # connection errors and read timeouts
            raise RetryableFailure(f"{type(exc).__name__}: {exc}") from exc
        content = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in content if isinstance(block, dict))
        usage = response.get("usage", {})
        return Completion(
            text=text,
            usage=TokenUsage(int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))),
            model=self.model_id,
            stop_reason=_stop_reason(response.get("stopReason")),
        )


def _stop_reason(stop_reason: str | None) -> StopReason:
    if stop_reason in ("end_turn", "stop_sequence"):
        return "stop"
    if stop_reason == "max_tokens":
        return "length"
    return "other"
