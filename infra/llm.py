"""Which LLM the stack's functions call, decided at synth time from the stage config and the region.

The model (context `llm_model`, default Claude Haiku 4.5) is called through the inference profile that
serves the stack's region (engram.providers.bedrock_profiles): `us.` in us-east-1, `eu.` in eu-west-1,
`au.` in ap-southeast-2... A profile given by hand (`-c llm_model=global.anthropic...`) is used as given.
Where nothing serves the region, or the region is not known at synth (an environment-agnostic synth),
the pipeline falls back to the offline heuristic extractor and synth prints a warning: a stack never
deploys an LLM step that cannot be called.
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.providers import bedrock_profiles
from infra.config import ConfigError, StageConfig

DEFAULT_BEDROCK_LLM = bedrock_profiles.CLAUDE_HAIKU_4_5


@dataclass(frozen=True)
class LlmChoice:
    provider: str  # "bedrock" or "none" (the heuristic extractor only)
    model_id: str | None = None  # what the code calls: a profile ("eu.anthropic...") or a model id
    foundation_model: str | None = None  # the model behind it, for the IAM grant
    warning: str | None = None  # why the stack falls back, printed at synth

    @property
    def is_profile(self) -> bool:
        return self.model_id is not None and self.model_id != self.foundation_model


def choose_llm(config: StageConfig, region: str | None) -> LlmChoice:
    """region: the stack's region, or None for an environment-agnostic synth."""
    if config.llm_provider == "none":
        return LlmChoice("none")
    wanted = config.llm_model or DEFAULT_BEDROCK_LLM
    geo, bare = bedrock_profiles.split_profile(wanted)
    if region is None:
        return LlmChoice(
            "none",
            warning="the region is not known at synth (no CDK_DEFAULT_ACCOUNT/CDK_DEFAULT_REGION): the "
            "pipeline uses the offline heuristic extractor. `cdk deploy` with credentials, or `make synth` "
            "with CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION set, picks the LLM's inference profile for the "
            "region.",
        )
    if geo is not None:  # a profile chosen by hand
        if bedrock_profiles.serves(wanted, region) is False:
            raise ConfigError(
                f"llm_model {wanted}: the {geo}. inference profile takes no requests from {region}"
            )
        return LlmChoice("bedrock", wanted, bare)
    if not bedrock_profiles.regions_served(bare):  # a model the table does not know: called in-region
        return LlmChoice("bedrock", bare, bare)
    profile = bedrock_profiles.profile_for(bare, region)
    if profile is None:
        return LlmChoice(
            "none",
            warning=f"no inference profile of {bare} takes requests from {region}: the pipeline uses the "
            "offline heuristic extractor. Set -c llm_model=global.<model id> (any commercial region) or "
            "deploy in a region its us./eu./au./jp./apac. profiles serve.",
        )
    return LlmChoice("bedrock", profile, bare)
