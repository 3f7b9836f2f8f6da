"""Synthetic memories for the latency and recall benchmarks.

Not real embeddings: 384-d unit vectors drawn around two-level Gaussian clusters (100 topics of 10
sub-topics), and texts of pseudo-words (a Zipf background plus each sub-topic's own words), so both
search legs have realistic work to do. Every tenant draws from the same topics, and the selectivity
tags are assigned at random, independent of the vectors: the hard case for a filtered HNSW scan.
Everything is seeded, so a run can rebuild exactly the data set it measured.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

DIMS = 384
# Containers of very different sizes (share of a tenant's memories).
CONTAINERS: tuple[tuple[str, float], ...] = (
    ("inbox", 0.50),
    ("projects.alpha", 0.25),
    ("projects.beta", 0.15),
    ("crm.contacts", 0.07),
    ("crm.notes", 0.025),
    ("journal.2024", 0.005),
)
# Filter selectivity -> the tag that exactly that share of a tenant's memories carries (nested).
SELECTIVITY_TAGS: dict[float, str | None] = {1.0: None, 0.1: "sel10", 0.01: "sel1", 0.001: "sel01"}


def share_label(share: float) -> str:
    """A share of the tenant as the bench names it: '10%', '0.1%'."""
    return f"{share:.1%}".replace(".0%", "%")


MEMORY_TYPES = ("fact", "preference", "episode", "insight", "task", "procedure")
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@dataclass(frozen=True)
class Spec:
    per_tenant: int
    tenants: int = 10
    topics: int = 100
    subtopics: int = 10
    noise: float = 1.0
    vocabulary: int = 20_000
    seed: int = 5

    @property
    def name(self) -> str:
        return human_count(self.per_tenant)


@dataclass
class TenantBatch:
    containers: list[str]
    contents: list[str]
    vectors: np.ndarray  # (n, DIMS) float32, unit length
    tags: list[list[str]]
    memory_types: list[str]


@dataclass(frozen=True)
class Query:
    text: str
    vector: np.ndarray
    cluster: int


@dataclass
class World:
    """Topic centres, vocabulary and topic words shared by every tenant."""

    spec: Spec
    centres: np.ndarray = field(init=False)
    words: list[str] = field(init=False)
    topic_words: np.ndarray = field(init=False)
    _background: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        rng = np.random.default_rng([self.spec.seed, 0])
        supers = _unit(rng.standard_normal((self.spec.topics, DIMS)))
        offsets = _unit(rng.standard_normal((self.spec.topics * self.spec.subtopics, DIMS)))
        self.centres = _unit(np.repeat(supers, self.spec.subtopics, axis=0) + 0.8 * offsets).astype(
            np.float32
        )
        self.words = _pseudo_words(rng, self.spec.vocabulary)
        clusters = len(self.centres)
        # Each sub-topic has 40 mid-frequency words of its own.
        self.topic_words = rng.integers(500, self.spec.vocabulary, size=(clusters, 40))
        ranks = np.arange(self.spec.vocabulary, dtype=np.float64)
        weights = 1.0 / (ranks + 20.0)  # Zipf over content words (stop words are gone already)
        self._background = weights / weights.sum()

    @property
    def clusters(self) -> int:
        return len(self.centres)

    def vectors(self, rng: np.random.Generator, clusters: np.ndarray) -> np.ndarray:
        noise = rng.standard_normal((len(clusters), DIMS)) / np.sqrt(DIMS)
        return _unit(self.centres[clusters] + self.spec.noise * noise).astype(np.float32)

    def texts(
        self, rng: np.random.Generator, clusters: np.ndarray, lo: int, hi: int, topical: float
    ) -> list[str]:
        lengths = rng.integers(lo, hi + 1, size=len(clusters))
        total = int(lengths.sum())
        from_topic = rng.random(total) < topical
        topic_pick = self.topic_words[np.repeat(clusters, lengths), rng.integers(0, 40, size=total)]
        background = rng.choice(self.spec.vocabulary, size=total, p=self._background)
        ids = np.where(from_topic, topic_pick, background)
        out: list[str] = []
        start = 0
        words = self.words
        for n in lengths:
            out.append(" ".join(words[i] for i in ids[start : start + n]))
            start += n
        return out

    def tenant(self, index: int) -> TenantBatch:
        n = self.spec.per_tenant
        rng = np.random.default_rng([self.spec.seed, 1, index])
        clusters = rng.integers(0, self.clusters, size=n)
        shares = np.array([share for _, share in CONTAINERS])
        container_ids = rng.choice(len(CONTAINERS), size=n, p=shares / shares.sum())
        order = rng.permutation(n)  # the first 10% carry sel10, the first 1% sel1, the first 0.1% sel01
        tags: list[list[str]] = [[] for _ in range(n)]
        for share, tag in SELECTIVITY_TAGS.items():
            if tag is not None:
                for i in order[: max(1, round(n * share))]:
                    tags[i].append(tag)
        return TenantBatch(
            containers=[CONTAINERS[i][0] for i in container_ids],
            contents=self.texts(rng, clusters, 8, 30, topical=0.5),
            vectors=self.vectors(rng, clusters),
            tags=tags,
            memory_types=[MEMORY_TYPES[i] for i in rng.integers(0, len(MEMORY_TYPES), size=n)],
        )

    def queries(self, count: int, stream: int) -> list[Query]:
        rng = np.random.default_rng([self.spec.seed, 2, stream])
        clusters = rng.integers(0, self.clusters, size=count)
        texts = self.texts(rng, clusters, 3, 7, topical=0.7)
        vectors = self.vectors(rng, clusters)
        return [Query(t, v, int(c)) for t, v, c in zip(texts, vectors, clusters, strict=True)]


def chunks(batch: TenantBatch, size: int) -> Iterator[range]:
    for start in range(0, len(batch.contents), size):
        yield range(start, min(start + size, len(batch.contents)))


def human_count(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1000 == 0:
        return f"{n // 1000}K"
    return str(n)


def parse_count(text: str) -> int:
    text = text.strip().upper()
    factor = {"K": 1000, "M": 1_000_000}.get(text[-1:], 1)
    digits = text[:-1] if factor > 1 else text
    value = int(float(digits) * factor)
    if value < 100:
        raise ValueError(f"scale {text!r} is too small: at least 100 memories per tenant")
    return value


def _unit(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return result


def _pseudo_words(rng: np.random.Generator, count: int) -> list[str]:
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        length = int(rng.integers(2, 5))
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), size=length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words
