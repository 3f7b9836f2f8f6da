"""The configured LLM provider, built from settings. Apart from engram.providers.llm, which the
providers themselves build on, so that no module imports the one that imports it."""

from __future__ import annotations

from engram.providers.llm import LLM
from engram.settings import Settings


def make_llm(settings: Settings) -> LLM | None:
    """The configured provider, or None when `ENGRAM_LLM_PROVIDER=none`. Each SDK is imported only
    when its provider is chosen."""
    if settings.llm_provider == "openai":
        from engram.providers.llm_openai import OpenAILLM

        return OpenAILLM.from_settings(settings)
    if settings.llm_provider == "anthropic":
        from engram.providers.llm_anthropic import AnthropicLLM

        return AnthropicLLM.from_settings(settings)
    if settings.llm_provider == "bedrock":
        from engram.providers.llm_bedrock import BedrockLLM

        return BedrockLLM.from_settings(settings)
    return None
