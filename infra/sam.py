"""`make sam-invoke` / `make sam-api`: a SAM-friendly variant of the synthesized template, and the logical
id of a function in it.

The deployable template does not suit `sam local` as it is:
- the master secret's rotation is a Serverless Application Repository app, which SAM resolves by calling
  the repository before it touches Docker (NoRegionFound, EndpointConnectionError): the variant drops it,
  and what refers to it;
- the API is a nested stack whose methods name the functions through parameters, which `sam local
  start-api` cannot follow: the variant is the stack flattened into one template (infra/gate/nested.py);
- SAM's --env-vars overrides only the variables a function declares, so DATABASE_URL (and the TLS and
  IAM settings the local database does not use) are declared on every function, empty, for
  infra/sam-env.json to fill in: the functions then reach the local embedded PostgreSQL on the host
  (`make sam-db`) at host.docker.internal.

    python -m infra.sam variant cdk.out/Engram-dev.template.json cdk.out/Engram-dev.sam.json
    python -m infra.sam logical-id cdk.out/Engram-dev.sam.json dev health
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from infra.gate.nested import load_stack
from infra.gate.template import refs_in

SAM_ENV = Path(__file__).resolve().parent / "sam-env.json"
DROPPED_TYPES = frozenset({"AWS::Serverless::Application"})


def sam_variables() -> dict[str, str]:
    parameters: dict[str, str] = json.loads(SAM_ENV.read_text(encoding="utf-8"))["Parameters"]
    return parameters


def variant(template: dict[str, Any], variables: dict[str, str] | None = None) -> dict[str, Any]:
    """The template without SAR apps (and what refers to them), with every variable of sam-env.json
    declared on every function."""
    out = json.loads(json.dumps(template))
    resources: dict[str, Any] = out.get("Resources", {})
    dropped = {k for k, r in resources.items() if r.get("Type") in DROPPED_TYPES}
    while True:  # whatever refers to a dropped resource goes too (the rotation schedule)
        more = {
            k for k, r in resources.items() if k not in dropped and refs_in(r.get("Properties")) & dropped
        }
        if not more:
            break
        dropped |= more
    for name in dropped:
        del resources[name]
    for resource in resources.values():
        depends = resource.get("DependsOn")
        if isinstance(depends, list):
            resource["DependsOn"] = [d for d in depends if d not in dropped]
        elif isinstance(depends, str) and depends in dropped:
            del resource["DependsOn"]
    out["Outputs"] = {k: v for k, v in out.get("Outputs", {}).items() if not refs_in(v) & dropped}
    declared = dict.fromkeys(variables or sam_variables(), "")
    for resource in resources.values():
        if resource.get("Type") == "AWS::Lambda::Function":
            env = (
                resource.setdefault("Properties", {})
                .setdefault("Environment", {})
                .setdefault("Variables", {})
            )
            for name, value in declared.items():
                env.setdefault(name, value)
    return out


def logical_id(template: dict[str, object], stage: str, function: str) -> str:
    wanted = f"engram-{stage}-{function.replace('/', '-')}"  # pipeline/extract -> pipeline-extract
    resources = template.get("Resources", {})
    assert isinstance(resources, dict)
    names: dict[str, str] = {
        str(logical): str(resource["Properties"].get("FunctionName", ""))
        for logical, resource in resources.items()
        if resource.get("Type") == "AWS::Lambda::Function"
    }
    for logical, name in names.items():
        if name == wanted:
            return logical
    known = sorted(n.removeprefix(f"engram-{stage}-") for n in names.values() if n.startswith("engram-"))
    raise SystemExit(f"no function {function!r} in the {stage} template; known: {', '.join(known)}")


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "variant":
        template = load_stack(Path(argv[1])).flat.body
        Path(argv[2]).write_text(json.dumps(variant(template), indent=1), encoding="utf-8")
        return 0
    if len(argv) == 4 and argv[0] == "logical-id":
        template = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        print(logical_id(template, argv[2], argv[3]))
        return 0
    print(
        "usage: python -m infra.sam variant TEMPLATE OUT | logical-id TEMPLATE STAGE FUNCTION",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
