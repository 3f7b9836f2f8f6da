"""Conversational retrieval on the project's own dev set (tests/bench/conversations.py): evidence recall@10
by question kind, for each search mode.

The protocol is the held-out benchmark's: every turn is written with `POST /v1/memories` as an `episode`
whose content starts with its speaker and whose metadata holds its session date (the server embeds it),
one container per conversation; every question is searched with `POST /v1/search` (the server embeds it
too), limit 10. A question's recall is the share of its evidence turns among the ten results.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from tests.bench import conversations
from tests.bench.conversations import KINDS, Conversation
from tests.bench.harness import Handlers, check
from tests.bench.report import Figure, Target

TENANT = "bench-dev"
RECALL_TARGET = 0.70  # the held-out benchmark's goal; the dev set tells where we stand
MODES = ("hybrid", "text", "vector")
SPLITS = {"dev": conversations.DEV_SEED, "held-out": conversations.HELD_OUT_SEED}


def load(handlers: Handlers, local: LocalDatabase, data: list[Conversation]) -> Any:
    """The conversations as a fresh tenant's memories, turn by turn through the API. Returns the
    tenant id and the memory id of each turn."""
    tenant_id = tenants.ensure_tenant(local.admin, TENANT)
    with local.admin.tenant(tenant_id) as cur:
        cur.execute("DELETE FROM memories WHERE tenant_id = %s", (tenant_id,))
    ids: dict[str, str] = {}
    for conversation in data:
        for turn in conversation.turns:
            reply = check(
                handlers.call(
                    "POST",
                    "/v1/memories",
                    tenant_id,
                    {
                        "content": turn.content,
                        "container": container_of(conversation),
                        "memory_type": "episode",
                        "metadata": turn.metadata,
                    },
                ),
                201,
            )
            ids[str(reply.body["id"])] = turn.id
    return tenant_id, ids


def container_of(conversation: Conversation) -> str:
    return f"dev.{conversation.name}"


def evidence_recall(
    handlers: Handlers, tenant_id: Any, ids: dict[str, str], data: list[Conversation], mode: str
) -> tuple[dict[str, list[float]], list[float]]:
    """Recall@10 of each question, by kind; and each search's time in ms."""
    by_kind: dict[str, list[float]] = defaultdict(list)
    timings: list[float] = []
    for conversation in data:
        for question in conversation.questions:
            reply = check(
                handlers.call(
                    "POST",
                    "/v1/search",
                    tenant_id,
                    {
                        "query": question.text,
                        "container": container_of(conversation),
                        "limit": 10,
                        "mode": mode,
                    },
                )
            )
            timings.append(reply.seconds * 1000)
            found = {ids.get(str(r["id"])) for r in reply.body["results"]}
            wanted = set(question.evidence)
            by_kind[question.kind].append(len(wanted & found) / len(wanted))
    return by_kind, timings


def dev_recall(
    handlers: Handlers, local: LocalDatabase, split: str, log: Callable[[str], None]
) -> list[Figure]:
    data = conversations.generate(SPLITS[split])
    turns, questions = sum(len(c.turns) for c in data), sum(len(c.questions) for c in data)
    section = (
        f"conversational dev set, {split} split "
        f"({len(data)} conversations, {turns} turns, {questions} questions)"
    )
    started = time.perf_counter()
    tenant_id, ids = load(handlers, local, data)
    log(f"  dev: wrote {turns} turns in {time.perf_counter() - started:.0f}s")
    figures: list[Figure] = []
    for mode in MODES:
        by_kind, timings = evidence_recall(handlers, tenant_id, ids, data, mode)
        overall = [r for kind in KINDS for r in by_kind[kind]]
        figures.append(
            Figure(
                key=f"dev.{split}.{mode}.recall10",
                section=section,
                name=f"{mode} evidence recall@10",
                value=sum(overall) / len(overall),
                target=Target(">=", RECALL_TARGET) if mode == "hybrid" else None,
                note=f"search p50 {sorted(timings)[len(timings) // 2]:.0f} ms (query embedded by the server)",
            )
        )
        for kind in KINDS:
            values = by_kind[kind]
            figures.append(
                Figure(
                    key=f"dev.{split}.{mode}.recall10.{kind}",
                    section=section,
                    name=f"  {mode} {kind} ({len(values)})",
                    value=sum(values) / len(values),
                )
            )
    log(f"  dev: {len(MODES)} modes x {questions} questions in {time.perf_counter() - started:.0f}s")
    return figures
