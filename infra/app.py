"""The CDK app (`cdk.json`: `python3 infra/app.py`). Stage and settings come from context:

    cdk synth -c stage=prod -c min_acu=1 -c alarm_email=ops@example.com

No account or region is written down: CDK_DEFAULT_ACCOUNT/REGION come from the CLI's credentials.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for entry in (REPO / "shared", REPO):  # `python3 infra/app.py` puts only infra/ on the path
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk  # noqa: E402

from infra.build import BUILD_DIR, layer_dir  # noqa: E402
from infra.config import StageConfig  # noqa: E402
from infra.nag import check_with_nag  # noqa: E402
from infra.stack import EngramStack  # noqa: E402


def build_app(app: cdk.App, build_dir: Path = BUILD_DIR) -> EngramStack:
    config = StageConfig.from_context(app.node)
    env = None
    if os.environ.get("CDK_DEFAULT_ACCOUNT") or os.environ.get("CDK_DEFAULT_REGION"):
        env = cdk.Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
        )
    stack = EngramStack(app, config=config, build_dir=build_dir, env=env)
    check_with_nag(app, stack)
    return stack


def main() -> None:
    if not (layer_dir(BUILD_DIR) / "python").is_dir():
        sys.exit("engram: the Lambda assets are missing: run `make build` first")
    app = cdk.App()
    build_app(app)
    app.synth()


if __name__ == "__main__":
    main()
