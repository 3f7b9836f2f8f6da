"""`make check-deploy`: synthesize the stack as a user's `cdk deploy` would, for a dummy account in several
regions, and hold each template to what a reviewer checks before deploying. No AWS account is needed:
context lookups come from the committed cdk.context.json (`--no-lookups`), and the CDK CLI runs with no
credentials at all.

    python -m infra.gate --cdk .cdk-cli/node_modules/.bin/cdk [--regions us-east-1,eu-west-1]

For each region: the synth itself (cdk-nag's AwsSolutions pack fails it on any unacknowledged finding),
budgets and cfn-lint (zero errors) for each template of the stack (its nested stacks' too), and on the
whole stack (infra/gate/nested.py): region-correct model ids and their IAM grants, LLM calls that end
within their function's timeout, reachability of every AWS API each function's code calls and of the
database, no role granting a function a service its declarations do not name, exactly the S3 actions
each function's code calls and no object-lock action or S3 wildcard on any role, async failures kept and
alarmed, deploy-time timeouts, the secret's rotation and every other function after the migration, no
resources waiting for each other in a circle, no account-level API Gateway setting, the engine version,
and no suppression metadata or test-invoke permissions in the template. Exits 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from infra.aws_services import declared_services
from infra.build import ALL_FUNCTIONS
from infra.config import ENGINE_MAJOR, newest_engine_version
from infra.gate import checks
from infra.gate.clients import FunctionCode, scan_functions
from infra.gate.nested import NestedTemplateMissing, label, load_stack
from infra.gate.template import Template

REPO = Path(__file__).resolve().parents[2]
ACCOUNT = "111111111111"
REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-2")
STAGE = "dev"


@dataclass
class RegionReport:
    region: str
    synth_ok: bool = False
    synth_output: str = ""
    template: Template | None = None  # the whole stack, its nested stacks flattened in
    templates: dict[str, Template] = field(default_factory=dict)  # each template CloudFormation receives
    nag_findings: list[str] | None = None
    lint_errors: list[str] = field(default_factory=list)
    lint_warnings: dict[str, int] = field(default_factory=dict)  # template -> cfn-lint's warnings
    problems: dict[str, list[str]] = field(default_factory=dict)
    paths: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # function logical id -> bytes unzipped, layers too
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.synth_ok and not self.lint_errors and not any(self.problems.values())


def synth_env(region: str, account: str) -> dict[str, str]:
    """The environment of a credential-less `cdk synth` for account/region: the CLI takes the region from
    AWS_REGION (it overwrites CDK_DEFAULT_REGION with its own) and, having no credentials, keeps the
    CDK_DEFAULT_ACCOUNT given. No profile, file or metadata service is consulted."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") or k == "AWS_CA_BUNDLE"}
    env.update(
        AWS_REGION=region,
        AWS_DEFAULT_REGION=region,
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DEFAULT_ACCOUNT=account,
        CDK_DEFAULT_REGION=region,
        CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def synthesize(cdk: Path, region: str, account: str, outdir: Path) -> tuple[bool, str]:
    command = [
        str(cdk),
        "synth",
        "--quiet",
        "--no-lookups",
        "--no-notices",
        "--no-version-reporting",
        "--output",
        str(outdir),
        "-c",
        f"stage={STAGE}",
        "--no-staging",  # the gate reads templates: no need to copy 250 MB of layers per region
    ]
    done = subprocess.run(  # noqa: S603 (a fixed command line)
        command, cwd=REPO, env=synth_env(region, account), capture_output=True, text=True, check=False
    )
    return done.returncode == 0, done.stdout + done.stderr


def nag_findings(outdir: Path) -> list[str] | None:
    """Each unacknowledged finding of the synth's policy validation (cdk-nag), with the construct."""
    report = outdir / "validation-report.json"
    if not report.is_file():
        return None
    body = json.loads(report.read_text(encoding="utf-8"))
    return [
        f"{violation['ruleName']} on {construct['constructPath']}"
        for plugin in body.get("pluginReports", [])
        for violation in plugin.get("violations", [])
        for construct in violation.get("violatingConstructs", [{"constructPath": "?"}])
    ]


def cfn_lint(template: Path, region: str) -> tuple[list[str], int]:
    """(errors, number of warnings) from cfn-lint for this region."""
    lint = Path(sys.executable).parent / "cfn-lint"
    done = subprocess.run(  # noqa: S603
        [str(lint), "--format", "json", "--regions", region, "--", str(template)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        matches = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        return [f"cfn-lint did not run: {(done.stderr or done.stdout).strip()[:500]}"], 0
    errors = [
        f"{m['Rule']['Id']} {m.get('Location', {}).get('Path', [])[:3]}: {m['Message']}"
        for m in matches
        if m.get("Level") == "Error"
    ]
    warnings = sum(1 for m in matches if m.get("Level") == "Warning")
    return errors, warnings


def engram_functions(template: Template) -> tuple[dict[str, str], list[str]]:
    """function name ("pipeline/extract") -> logical id, from each function's FunctionName."""
    by_short = {name.replace("/", "-"): name for name in ALL_FUNCTIONS}
    prefix = f"engram-{STAGE}-"
    found, unknown = {}, []
    for logical, resource in template.of_type("AWS::Lambda::Function").items():
        name = resource.get("Properties", {}).get("FunctionName")
        if isinstance(name, str) and name.startswith(prefix):
            short = name.removeprefix(prefix)
            if short in by_short:
                found[by_short[short]] = logical
            else:
                unknown.append(f"{name}: a function with no folder under functions/")
    missing = [f"{name}: not in the template" for name in ALL_FUNCTIONS if name not in found]
    return found, unknown + missing


def check_template(report: RegionReport, code: dict[str, FunctionCode]) -> None:
    t = report.template
    assert t is not None
    functions, unknown = engram_functions(t)
    reachable, paths = checks.reachability(
        t, functions, {name: declared_services(name) for name in functions}, code
    )
    report.paths = paths
    size_problems, report.sizes = checks.lambda_sizes(t)
    report.problems = {
        "function sizes": size_problems,
        "budgets": [
            f"{label(name)}: {p}" for name, each in report.templates.items() for p in checks.budgets(each)
        ],
        "suppression metadata": checks.no_suppression_metadata(t),
        "test-invoke permissions": checks.no_test_invoke_permissions(t),
        "functions": unknown,
        "reachability": reachable,
        "grants beyond the declarations": checks.grants_within_declarations(
            t, functions, {name: declared_services(name) for name in functions}
        ),
        "S3 actions and the code": checks.s3_actions_match_code(t, functions, code),
        "S3 object lock and wildcards": checks.no_object_lock_or_s3_wildcard(t),
        "region": checks.region_correctness(t, report.region),
        "LLM and its grant": checks.llm_matches_grant(t, report.region),
        "LLM calls within the timeout": checks.llm_calls_fit(t),
        "async failures": checks.async_failures_kept(t),
        "deploy-time timeouts": checks.trigger_timeouts(t),
        "rotation after migration": checks.rotation_after_migration(t),
        "functions after migration": checks.functions_after_migration(t, functions),
        "dependency cycles": checks.dependency_cycles(t),
        "API Gateway account": checks.api_gateway_account(t, opted_in=False),
        "engine version": checks.engine_version(t, newest_engine_version(ENGINE_MAJOR)),
    }
    if report.nag_findings:
        report.problems["cdk-nag (unacknowledged)"] = report.nag_findings


def run(cdk: Path, regions: list[str], account: str, out: Path, *, lint: bool = True) -> list[RegionReport]:
    code = scan_functions(ALL_FUNCTIONS)
    reports = []
    for region in regions:
        started = time.monotonic()
        report = RegionReport(region)
        outdir = out / region
        shutil.rmtree(outdir, ignore_errors=True)  # never check a template an earlier run left
        report.synth_ok, report.synth_output = synthesize(cdk, region, account, outdir)
        path = outdir / f"Engram-{STAGE}.template.json"
        report.nag_findings = nag_findings(outdir)
        if path.is_file():  # CDK writes the template even when validation fails: check it all the same
            try:
                stack = load_stack(path, region)
            except (NestedTemplateMissing, ValueError) as exc:
                report.problems = {"nested stacks": [str(exc)]}
            else:
                report.template, report.templates = stack.flat, stack.templates
                check_template(report, code)
            for name in report.templates if lint else ():
                errors, report.lint_warnings[name] = cfn_lint(outdir / name, region)
                report.lint_errors += [f"{label(name)}: {error}" for error in errors]
        report.seconds = time.monotonic() - started
        reports.append(report)
    return reports


def print_reports(reports: list[RegionReport], account: str, verbose: bool) -> None:
    print(f"\ndeploy gate: Engram-{STAGE} for account {account}")
    header = ("region", "synth", "cdk-nag", "checks", "template", "resources", "size (KB)", "cfn-lint")
    row = "{:<16}{:<8}{:>8}{:>8}   {:<32}{:>10}{:>11}{:>24}"
    print(row.format(*header))
    for r in reports:
        nag = "-" if r.nag_findings is None else str(len(r.nag_findings))
        failed = sum(len(v) for v in r.problems.values())
        first = (r.region, "ok" if r.synth_ok else "FAILED", nag, "ok" if not failed else f"{failed} FAILED")
        for n, (name, t) in enumerate(r.templates.items() or [("-", None)]):
            resources = f"{len(t.resources)}/{checks.MAX_RESOURCES}" if t else "-"
            size = f"{t.size / 1000:.0f}/{checks.MAX_TEMPLATE_BYTES / 1000:.0f}" if t else "-"
            failing = sum(1 for e in r.lint_errors if e.startswith(f"{label(name)}: "))
            lint = f"{failing} errors, {r.lint_warnings[name]} warnings" if name in r.lint_warnings else "-"
            print(row.format(*(first if n == 0 else ("",) * 4), label(name), resources, size, lint))
        largest = max(r.sizes.items(), key=lambda item: item[1], default=None)
        if largest:
            mib = largest[1] / 2**20
            print(f"{'':16}largest function: {largest[0]}, {mib:.1f} MiB with its layers (of 250)")
        # The extract functions, one per family of types, each with its own layer (engram.pipeline.steps).
        extract = {
            _short(k): v
            for k, v in r.sizes.items()
            if k.startswith(("FunctionsPipelineExtract", "FunctionsPipelineDetect"))
        }
        if extract:
            listed = ", ".join(f"{name} {size / 2**20:.1f}" for name, size in sorted(extract.items()))
            print(f"{'':16}detect and extract functions (MiB with layers): {listed}")
        print(f"{'':16}({r.seconds:.0f} s)")
    for r in reports:
        if not r.synth_ok:
            lines = r.synth_output.splitlines()
            errors = [
                f"{line.strip()} {lines[i + 1].strip() if i + 1 < len(lines) else ''}"
                for i, line in enumerate(lines)
                if line.startswith("ERROR") or "Error:" in line
            ]
            print(f"[{r.region}] synth failed:")
            for line in (errors or lines[-20:])[:20]:
                print(f"  {line}")
        for name, problems in r.problems.items():
            for problem in problems:
                print(f"[{r.region}] {name}: {problem}")
        for error in r.lint_errors:
            print(f"[{r.region}] cfn-lint: {error}")
    if verbose and reports and reports[0].sizes:
        print(f"\nfunction sizes, MiB unzipped with their layers ({reports[0].region}):")
        for logical, bytes_ in sorted(reports[0].sizes.items(), key=lambda item: -item[1]):
            print(f"  {_short(logical)}: {bytes_ / 2**20:.1f}")
    if verbose and reports and reports[0].paths:
        print(f"\npaths ({reports[0].region}):")
        for name, lines in sorted(reports[0].paths.items()):
            print(f"  {name}: " + "; ".join(lines))


def _short(logical: str) -> str:
    """FunctionsPipelineExtractOfficeC9071819 -> PipelineExtractOffice."""
    return logical.removeprefix("Functions")[:-8] if logical[-8:].isalnum() else logical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cdk", type=Path, default=REPO / ".cdk-cli" / "node_modules" / ".bin" / "cdk")
    parser.add_argument("--regions", default=",".join(REGIONS))
    parser.add_argument("--account", default=ACCOUNT)
    parser.add_argument("--out", type=Path, default=REPO / ".cdk-gate")
    parser.add_argument("--no-lint", action="store_true", help="skip cfn-lint")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every function's paths")
    args = parser.parse_args(argv)
    reports = run(args.cdk, args.regions.split(","), args.account, args.out, lint=not args.no_lint)
    print_reports(reports, args.account, args.verbose)
    ok = all(r.ok for r in reports)
    print("\ndeploy gate: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
