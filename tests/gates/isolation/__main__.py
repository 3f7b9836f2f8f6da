"""python -m tests.gates.isolation [--min-requests 2000] [--seed N] [--keep]

The isolation gate (`make isolation`). It starts `engram local` on a free port with a throw-away data
directory and gives two tenants one of everything through their own keys. Tenant B's data is read
through B's API; then tenant A replays requests over every route of `engram.api.routes`, built from
B's ids, names and cursors. It fails on:
- a response to A that carries B's content (B's secret marker, which only B's texts hold) or one of
  B's ids that A's request did not itself contain (404 messages may echo what was asked);
- any 5xx;
- any change to B's data, read again through B's API afterwards;
- a route without a request template (before anything starts).
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import sys
import time
from collections import Counter
from typing import Any

from tests.gates.isolation.client import Answer, Call, TenantClient
from tests.gates.isolation.reads import Harvest, harvest, snapshot
from tests.gates.isolation.seed import seed
from tests.gates.isolation.templates import TEMPLATES, coverage_problems
from tests.gates.stack import local_stack

MIN_REQUESTS = 2000


def leaks(call: Call, answer: Answer, victim: Harvest) -> list[str]:
    """What in the answer belongs to the victim and was not in the question."""
    found = []
    text, asked = answer.text.lower(), call.text().lower()
    if victim.seeded.secret in text:
        found.append("the victim's content (its secret marker)")
    for victim_id in victim.every_id():
        if text.count(victim_id) > asked.count(victim_id):
            found.append(f"the victim's id {victim_id}")
    return found


def _canary(victim: TenantClient, b: Harvest) -> bool:
    """The check must be able to fail: B reading its own memory is what a leak to A would look like."""
    memory = b.ids["memory"][0]
    call = Call("GET", f"/v1/memories/{memory}")
    answer = victim.send(call)
    return (
        answer.status == 200
        and bool(leaks(Call("GET", "/v1/stats"), answer, b))
        and not leaks(call, Answer(404, f"memory {memory} not found"), b)
    )


def plan(attacker: Harvest, victim: Harvest, rng: random.Random, min_requests: int) -> list[tuple[str, Call]]:
    """Every template's candidates, at most its cap each, in a fixed order for the seed."""
    calls: list[tuple[str, Call]] = []
    made: dict[str, int] = {}
    for (method, path), spec in TEMPLATES.items():
        candidates = list(spec.template(attacker, victim))
        if not candidates:
            raise SystemExit(f"the template for {method} {path} made no request from the victim's data")
        chosen = candidates if len(candidates) <= spec.cap else rng.sample(candidates, spec.cap)
        made[f"{method} {path}"] = len(chosen)
        calls.extend((f"{method} {path}", call) for call in chosen)
    if len(calls) < min_requests:
        counts = ", ".join(f"{route}: {n}" for route, n in made.items())
        raise SystemExit(f"the templates made {len(calls)} requests, fewer than {min_requests} ({counts})")
    return calls


def differences(before: Any, after: Any, where: str = "") -> list[str]:
    if type(before) is not type(after):
        return [f"{where or '/'}: {json.dumps(before)[:200]} -> {json.dumps(after)[:200]}"]
    if isinstance(before, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            out += differences(before.get(key), after.get(key), f"{where}/{key}")
        return out
    if isinstance(before, list) and len(before) == len(after):
        return [
            d
            for i, (x, y) in enumerate(zip(before, after, strict=True))
            for d in differences(x, y, f"{where}[{i}]")
        ]
    return (
        []
        if before == after
        else [f"{where or '/'}: {json.dumps(before)[:200]} -> {json.dumps(after)[:200]}"]
    )


def run(min_requests: int, seed_value: int, keep: bool, log_path: str | None) -> int:
    problems = coverage_problems()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    rng = random.Random(seed_value)
    started = time.monotonic()
    with local_stack(keep=keep) as stack:
        up = time.monotonic()
        attacker = TenantClient(stack.base_url, stack.dev_key)
        victim = TenantClient(stack.base_url, stack.create_key("victim"))
        try:
            labels = {"attacker": f"a{secrets.token_hex(3)}", "victim": f"v{secrets.token_hex(3)}"}
            marks = {name: f"sx{secrets.token_hex(8)}" for name in labels}
            a_seed = seed(attacker, labels["attacker"], marks["attacker"], rng)
            b_seed = seed(victim, labels["victim"], marks["victim"], rng)
            a = harvest(attacker, a_seed, snapshot(attacker, a_seed))
            before = snapshot(victim, b_seed)
            b = harvest(victim, b_seed, before)
            seeded = time.monotonic()

            calls = plan(a, b, rng, min_requests)
            canary = _canary(victim, b)
            statuses: Counter[int] = Counter()
            failures: list[str] = [] if canary else ["the leak check missed B's own memory read by B"]
            log = open(log_path, "w") if log_path else None  # noqa: SIM115 - closed below
            for route, call in calls:
                answer = attacker.send(call)
                statuses[answer.status] += 1
                if log:
                    log.write(json.dumps({"route": route, "url": call.url, "status": answer.status}) + "\n")
                if answer.status >= 500:
                    failures.append(
                        f"{route}: {answer.status} for {call.method} {call.url}: {answer.text[:300]}"
                    )
                for leak in leaks(call, answer, b):
                    failures.append(f"{route}: {call.method} {call.url} answered {answer.status} with {leak}")
            probed = time.monotonic()
            if log:
                log.close()

            changed = differences(before, snapshot(victim, b_seed))
        finally:
            attacker.close()
            victim.close()
    finished = time.monotonic()

    routes = len({route for route, _ in calls})
    print(
        f"isolation gate: {len(calls)} requests from tenant A over {routes} routes, built from tenant B's "
        f"{len(b.every_id())} ids, {sum(map(len, b.names.values()))} names and "
        f"{sum(map(len, b.cursors.values()))} cursors (seed {seed_value})"
    )
    print("  answers: " + ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items())))
    print(f"  leaks and server errors: {len(failures)}")
    print(f"  B's data afterwards: {'unchanged' if not changed else f'{len(changed)} differences'}")
    print(
        f"  time: stack {up - started:.0f}s, seeding and reading {seeded - up:.0f}s, "
        f"probe {probed - seeded:.0f}s, total {finished - started:.0f}s"
    )
    for line in failures[:50] + changed[:50]:
        print("  FAIL " + line)
    return 1 if failures or changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--min-requests", type=int, default=MIN_REQUESTS)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--keep", action="store_true", help="keep the stack's data directory")
    parser.add_argument("--log", help="write each request's route, URL and status to this file (JSON lines)")
    args = parser.parse_args()
    return run(args.min_requests, args.seed, args.keep, args.log)


if __name__ == "__main__":
    sys.exit(main())
