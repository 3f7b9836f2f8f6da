"""`make sam-invoke` helper: the logical id of function FN in a synthesized template, for
`sam local invoke -t cdk.out/Engram-STAGE.template.json <logical id> -e EVENT`."""

from __future__ import annotations

import json
import sys
from pathlib import Path


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
    if len(argv) != 3:
        print("usage: python -m infra.sam TEMPLATE STAGE FUNCTION", file=sys.stderr)
        return 2
    template = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    print(logical_id(template, argv[1], argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
