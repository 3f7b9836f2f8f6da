"""Typed settings, read from the environment once and validated.

Only this module and the process entry points (CLI, Lambda handlers via `engram.deps`) look at the
environment; everything else receives a `Settings` or the collaborators built from it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

EmbeddingProviderName = Literal["local", "openai", "bedrock"]

LOCAL_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
BEDROCK_EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"

DEFAULT_MODELS: dict[str, tuple[str, int]] = {
    "local": (LOCAL_EMBEDDING_MODEL, 384),
    "openai": (OPENAI_EMBEDDING_MODEL, 1536),
    "bedrock": (BEDROCK_EMBEDDING_MODEL, 1024),
}


def _repo_root() -> Path:
    # shared/engram/settings.py -> repository root; in a Lambda bundle migrations sit beside engram/.
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent, here.parent):
        if (candidate / "migrations").is_dir():
            return candidate
    return here.parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ENGRAM_", extra="ignore", populate_by_name=True)

    stage: str = "local"
    data_dir: Path = Path(".engram")
    port: int = Field(default=8080, ge=1, le=65535)
    host: str = "127.0.0.1"
    dev_api_key: SecretStr | None = None
    migrations_dir: Path = Field(default_factory=lambda: _repo_root() / "migrations")

    # Database. `database_url` is the owner/migration connection; the app connects as `app_role`.
    database_url: str | None = Field(default=None, validation_alias=AliasChoices("DATABASE_URL", "ENGRAM_DATABASE_URL"))
    app_database_url: str | None = None
    app_role: str = "engram_app"
    # AWS: RDS Proxy endpoint with IAM authentication (no passwords in the environment).
    db_host: str | None = None
    db_port: int = 5432
    db_name: str = "engram"
    db_iam_auth: bool = False
    aws_region: str | None = Field(default=None, validation_alias=AliasChoices("AWS_REGION", "ENGRAM_AWS_REGION"))

    # Embeddings.
    embedding_provider: EmbeddingProviderName = "local"
    embedding_model: str | None = None
    embedding_dimensions: int | None = Field(default=None, ge=1, le=16000)
    local_model_dir: Path | None = None
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "ENGRAM_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "ENGRAM_OPENAI_BASE_URL")
    )

    # Search.
    exact_scan_threshold: int = Field(default=5_000, ge=0)
    hnsw_ef_search: int = Field(default=100, ge=10, le=1000)
    hnsw_max_scan_tuples: int = Field(default=40_000, ge=1000)

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or DEFAULT_MODELS[self.embedding_provider][0]

    @property
    def resolved_embedding_dimensions(self) -> int:
        return self.embedding_dimensions or DEFAULT_MODELS[self.embedding_provider][1]

    @property
    def pg_data_dir(self) -> Path:
        return self.data_dir / "pg"


@cache
def get_settings() -> Settings:
    return Settings()
