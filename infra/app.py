"""The CDK app (`cdk.json`: `python3 infra/app.py`). Stage and settings come from context:

    cdk synth -c stage=prod -c min_acu=1 -c alarm_email=ops@example.com

No account or region is written down: CDK_DEFAULT_ACCOUNT/REGION come from the CLI's credentials (the
CLI sets CDK_DEFAULT_REGION from AWS_REGION or the profile's region; `make synth` passes a
CDK_DEFAULT_REGION of your own on as AWS_REGION). Without credentials the template is environment-agnostic,
unless CDK_DEFAULT_ACCOUNT is set by hand (as the deploy gate does, with cdk.context.json for its lookups).
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

from infra.build import Assets  # noqa: E402
from infra.config import StageConfig  # noqa: E402
from infra.nag import check_with_nag  # noqa: E402
from infra.stack import EngramStack  # noqa: E402


def build_app(app: cdk.App, assets: Assets | None = None, env: cdk.Environment | None = None) -> EngramStack:
    config = StageConfig.from_context(app.node)
    # With credentials the CLI knows the account and region and the stack is pinned to them (what
    # `cdk deploy` wants); without (an offline `make synth`) the template stays environment-agnostic.
    if env is None and os.environ.get("CDK_DEFAULT_ACCOUNT"):
        env = cdk.Environment(
            account=os.environ["CDK_DEFAULT_ACCOUNT"], region=os.environ.get("CDK_DEFAULT_REGION")
        )
    stack = EngramStack(app, config=config, assets=assets or Assets.in_build_dir(), env=env)
    check_with_nag(app, stack)
    return stack


def main() -> None:
    if not Assets.in_build_dir().layer_built:
        sys.exit("engram: the Lambda assets are missing: run `make build` first")
    app = cdk.App()
    build_app(app)
    app.synth()


if __name__ == "__main__":
    main()
