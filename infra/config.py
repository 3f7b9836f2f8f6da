"""Stage settings, from CDK context (`cdk.json` defaults, overridden with `-c key=value`).

Nothing here names an account or a region: the stack deploys wherever the CLI's credentials point
(`CDK_DEFAULT_ACCOUNT` / `CDK_DEFAULT_REGION`), or stays environment-agnostic when there are none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Node

from engram.preflight import DEFAULT_INTERFACE_ENDPOINTS  # one home: `engram preflight` checks them

# Interface endpoints the functions need instead of a NAT gateway (S3 is a free gateway endpoint).
# (The functions call no other AWS API; the deploy gate checks each one's path from the template.)
# textract (a default): OCR of scanned PDF pages and images; transcribe: audio, without a NAT gateway.
KNOWN_INTERFACE_ENDPOINTS = frozenset(
    {*DEFAULT_INTERFACE_ENDPOINTS, "sts", "bedrock", "logs", "kms", "lambda", "textract", "transcribe"}
)
LLM_PROVIDERS = ("bedrock", "none")
ENGINE_MAJORS = ("16", "17")
ENGINE_MAJOR = "16"
_STAGE = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


class ConfigError(ValueError):
    """A context value that cannot be used; synth stops with this message."""


@dataclass(frozen=True)
class StageConfig:
    stage: str = "dev"
    # Network.
    max_azs: int = 2
    nat_gateways: int = 0
    interface_endpoints: tuple[str, ...] = DEFAULT_INTERFACE_ENDPOINTS
    # Database. engine_version None: the newest minor of engine_major this aws-cdk-lib knows (AWS retires
    # old minors, so a pinned one can fail at cluster creation); `-c engine_version=16.9` pins one.
    engine_major: str = ENGINE_MAJOR
    engine_version: str | None = None
    min_acu: float = 0.5
    max_acu: float = 4.0
    backup_retention_days: int = 7
    # None: on for every stage but dev (dev is meant to be thrown away).
    deletion_protection: bool | None = None
    secret_rotation_days: int = 30
    # API.
    throttle_rate: float = 50.0
    throttle_burst: int = 100
    quota_per_day: int = 100_000
    authorizer_cache_seconds: int = 300
    # Functions and observability.
    log_retention_days: int = 30
    embedding_provider: str = "bedrock"
    # The pipeline's llm-extract step: bedrock or none (the offline heuristic extractor only). llm_model: a
    # Bedrock model id (its inference profile for the region is chosen, infra/llm.py) or a profile id.
    llm_provider: str = "bedrock"
    llm_model: str | None = None
    # Images are also described by the LLM (it must see images: Claude Haiku 4.5 does), stored as
    # generated text beside their OCR text (ENGRAM_VISION on the media extract function).
    vision: bool = False
    # Creates API Gateway's region-wide CloudWatch role setting (AWS::ApiGateway::Account), kept on destroy;
    # only for an account that has none yet (`engram preflight` tells).
    api_cloudwatch_role: bool = False
    cleanup_schedule: str = "cron(15 3 * * ? *)"  # daily, 03:15 UTC
    tenant_index_schedule: str = "cron(45 3 * * ? *)"  # daily, 03:45 UTC: after cleanup
    export_retention_days: int = 7  # export files are deleted from the bucket after this many days
    alarm_email: str | None = None
    latency_p95_ms: int = 2_000
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def is_dev(self) -> bool:
        return self.stage == "dev"

    @property
    def protect_data(self) -> bool:
        return (not self.is_dev) if self.deletion_protection is None else self.deletion_protection

    @property
    def resolved_engine_version(self) -> str:
        return self.engine_version or newest_engine_version(self.engine_major)

    @property
    def stack_name(self) -> str:
        return f"Engram-{self.stage}"

    def __post_init__(self) -> None:
        if not _STAGE.match(self.stage):
            raise ConfigError(f"stage {self.stage!r}: lower-case letters, digits and '-', at most 20")
        if not 0 <= self.min_acu <= self.max_acu <= 256:
            raise ConfigError(
                f"ACU range must satisfy 0 <= min_acu <= max_acu <= 256, got {self.min_acu}..{self.max_acu}"
            )
        if self.engine_major not in ENGINE_MAJORS:
            raise ConfigError(
                f"engine_major {self.engine_major!r}: Aurora PostgreSQL {' or '.join(ENGINE_MAJORS)}"
            )
        if self.engine_version is not None and not re.fullmatch(
            rf"{self.engine_major}\.\d+", self.engine_version
        ):
            raise ConfigError(
                f"engine_version {self.engine_version!r}: a {self.engine_major}.x version (engine_major)"
            )
        log_retention(self.log_retention_days)
        if self.max_azs < 2:
            raise ConfigError("max_azs must be at least 2: Aurora needs subnets in two availability zones")
        unknown = set(self.interface_endpoints) - KNOWN_INTERFACE_ENDPOINTS
        if unknown:
            raise ConfigError(
                f"unknown interface endpoints {sorted(unknown)}; known: {sorted(KNOWN_INTERFACE_ENDPOINTS)}"
            )
        if self.nat_gateways == 0 and "secretsmanager" not in self.interface_endpoints:
            raise ConfigError(
                "without a NAT gateway the secretsmanager endpoint is required (migrations read the secret)"
            )
        if self.embedding_provider != "bedrock":
            raise ConfigError("on AWS the embedding provider is bedrock (Titan Text Embeddings v2)")
        if self.llm_provider not in LLM_PROVIDERS:
            raise ConfigError(f"llm_provider {self.llm_provider!r}: one of {', '.join(LLM_PROVIDERS)}")
        if self.vision and self.llm_provider == "none":
            raise ConfigError("vision describes images with the LLM: it needs llm_provider=bedrock")
        for name in ("cleanup_schedule", "tenant_index_schedule"):
            if not re.fullmatch(r"(cron|rate)\(.+\)", getattr(self, name)):
                raise ConfigError(f"{name} {getattr(self, name)!r}: an EventBridge cron(...) or rate(...)")
        if self.export_retention_days < 1:
            raise ConfigError("export_retention_days must be at least 1")
        if self.nat_gateways == 0 and "bedrock-runtime" not in self.interface_endpoints:
            raise ConfigError("without a NAT gateway the bedrock-runtime endpoint is required for embeddings")

    @classmethod
    def from_context(cls, node: Node) -> StageConfig:
        """Read every setting from context; values given with -c arrive as strings."""
        defaults = cls()
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            raw = node.try_get_context(name)
            if raw is None:
                continue
            values[name] = _coerce(name, raw, getattr(defaults, name) if name != "stage" else "")
        return cls(**values)


def _coerce(name: str, raw: Any, default: Any) -> Any:
    try:
        if isinstance(default, bool) or name == "deletion_protection":
            return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, tuple):
            items = raw if isinstance(raw, list) else [s for s in str(raw).split(",") if s and s != "none"]
            return tuple(str(item).strip() for item in items)
        if isinstance(default, dict):
            return {str(k): str(v) for k, v in dict(raw).items()}
        return (
            None
            if raw in ("", "none") and name in ("alarm_email", "llm_model", "engine_version")
            else str(raw)
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"context {name}={raw!r}: {exc}") from None


def known_engine_versions(major: str) -> list[str]:
    """The Aurora PostgreSQL versions of `major` this aws-cdk-lib knows, oldest first."""
    from aws_cdk import aws_rds as rds

    found = []
    for name in dir(rds.AuroraPostgresEngineVersion):
        match = re.fullmatch(rf"VER_{major}_(\d+)", name)
        if match:
            found.append((int(match.group(1)), f"{major}.{match.group(1)}"))
    return [version for _, version in sorted(found)]


def newest_engine_version(major: str) -> str:
    versions = known_engine_versions(major)
    if not versions:
        raise ConfigError(f"this aws-cdk-lib knows no Aurora PostgreSQL {major}.x version")
    return versions[-1]


_RETENTION_DAYS = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
    1096: "THREE_YEARS",
    1827: "FIVE_YEARS",
    3653: "TEN_YEARS",
}


def log_retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION_DAYS:
        raise ConfigError(
            f"log_retention_days={days} is not a CloudWatch retention; use one of {sorted(_RETENTION_DAYS)}"
        )
    return getattr(logs.RetentionDays, _RETENTION_DAYS[days])
