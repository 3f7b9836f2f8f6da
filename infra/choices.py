"""`make preflight`: the choices the stack makes for a region, as `engram preflight` arguments (the engine
version, the LLM's inference profile, the interface endpoints), from cdk.json's context and CDK_ARGS."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from infra.config import StageConfig
from infra.llm import choose_llm

REPO = Path(__file__).resolve().parent.parent


def arguments(region: str, context: dict[str, object]) -> list[str]:
    config = StageConfig.from_context(cdk.App(context=context).node)
    llm = choose_llm(config, region)
    return [
        "--engine-version",
        config.resolved_engine_version,
        "--llm-model",
        llm.model_id or "none",
        "--interface-endpoints",
        ",".join(config.interface_endpoints) or "none",
        "--max-azs",
        str(config.max_azs),
    ]


def main(argv: list[str]) -> int:
    """python -m infra.choices REGION [-c key=value ...]"""
    context: dict[str, object] = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    region, rest = argv[0], argv[1:]
    for flag, value in zip(rest[::2], rest[1::2], strict=False):
        if flag in ("-c", "--context") and "=" in value:
            key, _, raw = value.partition("=")
            context[key] = raw
    print(" ".join(arguments(region, context)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
