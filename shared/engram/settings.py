"""Typed settings, read from the environment once and validated.

Only this module and the process entry points (CLI, Lambda handlers via `engram.deps`) look at the
environment; everything else receives a `Settings` or the collaborators built from it.

A plain pydantic model that fills itself from the environment, rather than pydantic-settings: the
fields are all scalars, so the environment needs no parsing of its own, and pydantic-settings (with
the argparse, dotenv and asyncio it imports) cost every Lambda ~60-120 ms of cold start.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, model_validator

EmbeddingProviderName = Literal["local", "openai", "bedrock"]
OcrProviderName = Literal["auto", "textract", "tesseract", "none"]
TranscriptionProviderName = Literal["none", "transcribe", "openai"]
LLMProviderName = Literal["none", "openai", "anthropic", "bedrock"]

LOCAL_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
BEDROCK_EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"

DEFAULT_MODELS: dict[str, tuple[str, int]] = {
    "local": (LOCAL_EMBEDDING_MODEL, 384),
    "openai": (OPENAI_EMBEDDING_MODEL, 1536),
    "bedrock": (BEDROCK_EMBEDDING_MODEL, 1024),
}
LOCAL_MAX_CHUNKS = 1_500  # about 4 MB of prose
REMOTE_MAX_CHUNKS = 40_000  # about 80 MB of prose; ENGRAM_MAX_EXTRACTED_CHARS (20 M) comes first

# Defaults only; set ENGRAM_LLM_MODEL to the model you mean to pay for (for bedrock, the model or
# inference-profile id your account has access to in its region).
DEFAULT_LLM_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5",
    "bedrock": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
}


def _repo_root() -> Path:
    # shared/engram/settings.py -> repository root; in a Lambda bundle migrations sit beside engram/.
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent, here.parent):
        if (candidate / "migrations").is_dir():
            return candidate
    return here.parent.parent


def default_data_dir() -> Path:
    """Where the local stack keeps its database, model and dev key when ENGRAM_DATA_DIR is not set:
    the project's `.engram` (the checkout this package runs from, as `make local` uses it), wherever
    the command is run from; outside a checkout, the nearest `.engram` above the working directory,
    else `./.engram`. Every `engram` command finds it the same way."""
    root = _repo_root()
    if (root / "pyproject.toml").is_file() and (root / "shared" / "engram").is_dir():
        return root / ".engram"
    cwd = Path.cwd()
    for directory in (cwd, *cwd.parents):
        if (directory / ".engram").is_dir():
            return directory / ".engram"
    return cwd / ".engram"


ENV_PREFIX = "ENGRAM_"
# Work files (stored sources, extracted text, transcripts) live under this prefix of the documents
# bucket; the S3 trigger ignores it, so the pipeline never triggers itself.
WORK_PREFIX = "_engram/"


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Settings(BaseModel):
    """`Settings(**values)`: `values`, and for every field not given, its environment variable: the
    names its AliasChoices list, then ENGRAM_<FIELD>; the first one set wins, names are matched
    case-insensitively. Values from the environment are validated like any other input."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _with_environment(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        given = {_FIELD_OF_NAME.get(key, key): value for key, value in data.items()}
        return {**_from_environment(), **given}

    stage: str = "local"
    data_dir: Path = Field(default_factory=lambda: default_data_dir())
    port: int = Field(default=8080, ge=1, le=65535)
    host: str = "127.0.0.1"
    # `engram local`: API worker processes (each runs one request at a time, as a Lambda container
    # does) and ingestion worker processes (each runs one pipeline step at a time).
    workers: int = Field(default_factory=_cores, ge=1, le=64)
    ingest_workers: int = Field(default=2, ge=1, le=64)
    # `engram local`: one time limit for every pipeline step instead of each step's own (for a
    # machine much slower than Lambda, or tests); unset: engram.pipeline.steps decides.
    step_timeout_seconds: float | None = Field(default=None, gt=0)
    dev_api_key: SecretStr | None = None
    migrations_dir: Path = Field(default_factory=lambda: _repo_root() / "migrations")

    # Database. `database_url` is the owner/migration connection; the app connects as `app_role`.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "ENGRAM_DATABASE_URL")
    )
    app_database_url: str | None = None
    app_role: str = "engram_app"
    # AWS: RDS Proxy endpoint with IAM authentication (no passwords in the environment).
    db_host: str | None = None
    db_port: int = 5432
    db_name: str = "engram"
    db_iam_auth: bool = False
    # AWS: the master user's secret (RDS-generated JSON), for the migration and admin functions only.
    db_secret_arn: str | None = None
    db_sslmode: Literal["disable", "prefer", "require", "verify-ca", "verify-full"] = "require"
    # The CA bundle verify-ca/verify-full check the server against (AWS: the RDS bundle in the layer).
    db_sslrootcert: str | None = None
    # How long a new connection may take to come up, retries included: an Aurora Serverless v2 cluster
    # paused at 0 ACU takes about 15 s (sometimes more) to resume.
    db_connect_wait_seconds: float = Field(default=60.0, gt=0, le=900)
    aws_region: str | None = Field(
        default=None, validation_alias=AliasChoices("AWS_REGION", "ENGRAM_AWS_REGION")
    )

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

    # LLM (memory extraction). `none`: only the offline heuristic extractor is available.
    llm_provider: LLMProviderName = "none"
    llm_model: str | None = None
    # For the openai provider: a server of its own (Ollama, vLLM, ...) for the LLM only; otherwise
    # OPENAI_BASE_URL (shared with embeddings) or api.openai.com.
    llm_base_url: str | None = None
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "ENGRAM_ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "ENGRAM_ANTHROPIC_BASE_URL")
    )
    llm_timeout_seconds: float = Field(default=120.0, gt=0, le=900)
    llm_max_attempts: int = Field(default=4, ge=1, le=10)
    llm_max_output_tokens: int = Field(default=4096, ge=256, le=64_000)
    llm_temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    # response_format={"type": "json_object"} for the openai provider; turn off for servers without it.
    llm_json_mode: bool = True

    # Search.
    exact_scan_threshold: int = Field(default=2_000, ge=0)
    # The HNSW walk's candidate list (hnsw.ef_search); unset: sized to the index walked, from 64 for an
    # index of up to 12K vectors to 160 above 60K (engram.memories.search.planner.walk_ef).
    hnsw_ef_search: int | None = Field(default=None, ge=10, le=1000)
    hnsw_max_scan_tuples: int = Field(default=40_000, ge=1000)
    # A tenant with this many vectors of the model gets its own HNSW index (engram.db.tenant_indexes);
    # 0: never.
    tenant_index_min_rows: int = Field(default=10_000, ge=0)
    # Those tenants are left out of the model's shared index by rebuilding it, unless it would then hold
    # more vectors than this: the rebuild runs in the migrate function, within its timeout.
    shared_index_max_rows: int = Field(default=250_000, ge=0)
    # In those tenants, a container (or a name with its children, 'a.*') with this many vectors of the
    # model, and at most a fifth of the tenant's, gets its own HNSW index too (engram.db.container_indexes);
    # 0: never.
    container_index_min_rows: int = Field(default=2_000, ge=0)

    # Documents and the ingestion pipeline. Without a bucket, raw bytes live under data_dir/blobs and
    # the pipeline runs in-process (the local runner); without a state machine ARN, likewise.
    documents_bucket: str | None = None
    state_machine_arn: str | None = None
    work_prefix: str = WORK_PREFIX
    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    max_pdf_pages: int = Field(default=2000, ge=1)
    max_extracted_chars: int = Field(default=20_000_000, ge=1000)
    max_records: int = Field(default=200_000, ge=1)
    max_image_pixels: int = Field(default=100_000_000, ge=1)
    chunk_tokens: int = Field(default=500, ge=50, le=8000)
    chunk_overlap_tokens: int = Field(default=60, ge=0, le=2000)
    max_memories_per_document: int = Field(default=500, ge=0)
    # Chunks per document; unset: LOCAL_MAX_CHUNKS with the local model (one CPU core embeds 3 to 10
    # 500-token chunks a second, by how busy the machine is, and the embed step has 600 s),
    # REMOTE_MAX_CHUNKS otherwise.
    max_chunks_per_document: int | None = Field(default=None, ge=1)
    link_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
    embed_batch_size: int = Field(default=64, ge=1, le=2048)
    ocr_provider: OcrProviderName = "auto"
    # Scanned PDF pages read by OCR per document (each is a Textract call, or seconds of tesseract).
    max_ocr_pages: int = Field(default=200, ge=1)
    # Images: also have the configured LLM (it must see images) describe them; the description is
    # stored as generated text. ENGRAM_VISION_MODEL: another model of the same provider for it.
    vision: bool = False
    vision_model: str | None = None
    transcription_provider: TranscriptionProviderName = "none"
    # Whether the pipeline can fetch a document's URL: false in AWS when the functions have no route to
    # the internet (no NAT gateway), so a URL is refused when it is sent rather than time out later.
    fetch_urls: bool = True
    transcription_model: str = "whisper-1"
    url_fetch_timeout_seconds: float = Field(default=20.0, gt=0)
    allow_private_urls: bool = False
    stale_document_minutes: int = Field(default=120, ge=1)
    watch_interval_seconds: float = Field(default=1.0, gt=0)

    @property
    def drop_dir(self) -> Path:
        return self.data_dir / "drop"

    @property
    def blob_dir(self) -> Path:
        return self.data_dir / "blobs"

    # Cleanup: superseded memory versions are deleted this many days after they stopped being
    # current (None keeps them forever). Expired rows are always deleted.
    superseded_retention_days: int | None = Field(default=90, ge=0)

    # POST /v1/export: with a bucket, the export goes to S3 and the API returns a presigned URL;
    # without one (locally), the response body is the JSON Lines file itself.
    export_bucket: str | None = None
    export_url_ttl_seconds: int = Field(default=3600, ge=60, le=7 * 24 * 3600)

    # Change events: to this EventBridge bus (AWS; the stack sets it), else to the tenants' webhooks.
    event_bus_name: str | None = None
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    # `engram local`: how often the relay looks for summaries to write and events to deliver.
    relay_interval_seconds: float = Field(default=0.5, gt=0, le=60)

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or DEFAULT_MODELS[self.embedding_provider][0]

    @property
    def resolved_embedding_dimensions(self) -> int:
        return self.embedding_dimensions or DEFAULT_MODELS[self.embedding_provider][1]

    @property
    def resolved_max_chunks_per_document(self) -> int:
        if self.max_chunks_per_document is not None:
            return self.max_chunks_per_document
        return LOCAL_MAX_CHUNKS if self.embedding_provider == "local" else REMOTE_MAX_CHUNKS

    @property
    def resolved_llm_model(self) -> str | None:
        if self.llm_provider == "none":
            return None
        return self.llm_model or DEFAULT_LLM_MODELS[self.llm_provider]

    @property
    def pg_data_dir(self) -> Path:
        return self.data_dir / "pg"


def _env_names(name: str, alias: object) -> list[str]:
    """The environment variables a field is read from, in order of preference."""
    names = [c for c in alias.choices if isinstance(c, str)] if isinstance(alias, AliasChoices) else []
    return [*names, ENV_PREFIX + name.upper()]


# field name -> the environment variables (upper case) it is read from; alias or name -> field name.
_ENV_NAMES = {name: _env_names(name, field.validation_alias) for name, field in Settings.model_fields.items()}
_FIELD_OF_NAME = {alias: name for name, env in _ENV_NAMES.items() for alias in env[:-1]}


def _from_environment() -> dict[str, str]:
    environ = {key.upper(): value for key, value in os.environ.items()}
    found: dict[str, str] = {}
    for name, env_names in _ENV_NAMES.items():
        for env_name in env_names:
            if env_name.upper() in environ:
                found[name] = environ[env_name.upper()]
                break
    return found


@cache
def get_settings() -> Settings:
    return Settings()
