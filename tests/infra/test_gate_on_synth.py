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


def test_the_extract_functions_that_ocr_reach_textract_through_its_endpoint(dev: Synth) -> None:
    report = RegionReport(REGION, synth_ok=dev.error is None)
    stack = load_stack(dev.outdir / f"{dev.stack.stack_name}.template.json", REGION)
    report.template, report.templates = stack.flat, stack.templates
    check_template(report, scan_functions(ALL_FUNCTIONS))

    for function in ("pipeline/extract", "pipeline/extract_media"):  # scanned PDF pages; images
        assert "textract: interface endpoint" in " ".join(report.paths[function]), report.paths[function]
    for function in ("pipeline/detect", "pipeline/extract_office", "pipeline/extract_code"):
        assert not any(line.startswith("textract") for line in report.paths[function]), function
    # vision is off by default: the media function has no LLM grant, and so no Bedrock path to check
    assert not any(line.startswith("bedrock") for line in report.paths["pipeline/extract_media"])


def test_a_stage_with_a_nat_gateway_passes_every_check_too(with_nat: Synth) -> None:
    # Its media function transcribes, and its documents API takes URLs: each with a path and a grant
    report = RegionReport(REGION, synth_ok=with_nat.error is None)
    stack = load_stack(with_nat.outdir / f"{with_nat.stack.stack_name}.template.json", REGION)
    report.template, report.templates = stack.flat, stack.templates
    check_template(report, scan_functions(ALL_FUNCTIONS))
    assert {name: problems for name, problems in report.problems.items() if problems} == {}
    assert "transcribe: NAT gateway" in " ".join(report.paths["pipeline/extract_media"])
