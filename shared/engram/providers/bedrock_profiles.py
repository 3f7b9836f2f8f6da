"""Which Bedrock cross-region inference profile serves a model in a region.

Newer Claude models on Bedrock are called through an inference profile (`<geo>.<model id>`), never by
the bare model id, and a geographic profile accepts requests only from its source regions. This table
says, per model, which geographies exist and which regions each accepts, as AWS lists them; the narrowest
geography wins (Sydney gets `au.`, which keeps requests in Australia, before `apac.`). Where no profile
serves a region, `profile_for` answers None and the stack falls back to the offline heuristic extractor.

The CDK app (infra/) reads it at synth time and `engram preflight` checks, with the account's
credentials, that the profile it picks exists in the region (GetInferenceProfile).
"""

from __future__ import annotations

from collections.abc import Mapping

CLAUDE_HAIKU_4_5 = "anthropic.claude-haiku-4-5-20251001-v1:0"

# model id -> geography -> source regions (the regions a request may be sent from).
SOURCE_REGIONS: Mapping[str, Mapping[str, frozenset[str]]] = {
    CLAUDE_HAIKU_4_5: {
        "us": frozenset({"us-east-1", "us-east-2", "us-west-1", "us-west-2"}),
        "eu": frozenset({"eu-central-1", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-3"}),
        "au": frozenset({"ap-southeast-2", "ap-southeast-4"}),
        "jp": frozenset({"ap-northeast-1", "ap-northeast-3"}),
        "apac": frozenset(
            {
                "ap-northeast-1",
                "ap-northeast-2",
                "ap-northeast-3",
                "ap-south-1",
                "ap-south-2",
                "ap-southeast-1",
                "ap-southeast-2",
            }
        ),
    },
}
# Geographies from the narrowest to the widest: the first that serves a region is chosen.
GEOGRAPHIES = ("us", "eu", "au", "jp", "ca", "apac", "us-gov", "global")


def split_profile(model_or_profile: str) -> tuple[str | None, str]:
    """("eu", "anthropic.claude-...") for "eu.anthropic.claude-..."; (None, id) for a bare model id."""
    geo, dot, rest = model_or_profile.partition(".")
    return (geo, rest) if dot and geo in GEOGRAPHIES else (None, model_or_profile)


def profile_for(model: str, region: str) -> str | None:
    """The inference profile id to call `model` with from `region`, or None when none serves it."""
    _, bare = split_profile(model)
    geographies = SOURCE_REGIONS.get(bare, {})
    for geo in GEOGRAPHIES:
        if region in geographies.get(geo, frozenset()):
            return f"{geo}.{bare}"
    return None


def serves(profile: str, region: str) -> bool | None:
    """Whether `profile` accepts requests from `region`: None when the table does not know the model
    or the geography (a profile set by hand; `engram preflight` is then the check)."""
    geo, bare = split_profile(profile)
    if geo is None:
        return None
    regions = SOURCE_REGIONS.get(bare, {}).get(geo)
    return None if regions is None else region in regions


def regions_served(model: str) -> frozenset[str]:
    _, bare = split_profile(model)
    return frozenset(r for regions in SOURCE_REGIONS.get(bare, {}).values() for r in regions)
