"""The deploy gate's checks on the stack itself, synthesized as `cdk deploy` would for eu-west-1 (the
same checks `make check-deploy` runs for three regions through the CDK CLI, with cfn-lint)."""

from __future__ import annotations

from infra.build import ALL_FUNCTIONS
from infra.gate.__main__ import RegionReport, check_template
from infra.gate.clients import scan_functions
from infra.gate.nested import load_stack
from tests.infra.conftest import REGION, Synth


def test_the_deployable_template_passes_every_check_of_the_gate(dev: Synth) -> None:
    report = RegionReport(REGION, synth_ok=dev.error is None)
    path = dev.outdir / f"{dev.stack.stack_name}.template.json"
    stack = load_stack(path, REGION)
    report.template, report.templates = stack.flat, stack.templates
    check_template(report, scan_functions(ALL_FUNCTIONS))
    assert {name: problems for name, problems in report.problems.items() if problems} == {}
    assert len(report.templates) == 2, "the stack and its API"
    for template in report.templates.values():
        assert template.size < 700_000 and len(template.resources) <= 400
    assert sorted(report.paths) == sorted(ALL_FUNCTIONS)
    assert "s3: gateway endpoint" in " ".join(report.paths["pipeline/trigger"])
    assert any(line.startswith("database: RDS Proxy") for line in report.paths["memories"])
