"""cdk-nag's AwsSolutions pack runs at synth: zero unacknowledged findings, each acknowledgement with a
reason, and the check is live (without the acknowledgements the same synth fails)."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synth


def _acknowledgements(synth: Synth) -> list[dict[str, Any]]:
    found = []
    for resource in synth.resources.values():
        found.extend(resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []))
    return found


def test_synth_passes_awssolutions_with_no_unacknowledged_finding(dev: Synth) -> None:
    assert dev.error is None, dev.error
    report = dev.validation_report()
    violations = [v for plugin in report["pluginReports"] for v in plugin["violations"]]
    assert violations == []


def test_every_acknowledgement_names_a_rule_and_gives_a_reason(dev: Synth) -> None:
    acknowledgements = _acknowledgements(dev)
    assert acknowledgements, "the acknowledgements are written into the template metadata"
    ours = [ack for ack in acknowledgements if ack["id"].startswith("AwsSolutions-")]
    assert ours
    for ack in acknowledgements:  # CDK adds a few of its own (CloudFormation-Validate::...), with reasons
        assert len(ack["reason"]) >= 40, ack


def test_without_the_acknowledgements_synth_fails_on_the_findings(prod_unacknowledged: Synth) -> None:
    assert prod_unacknowledged.error is not None and "ValidationFailed" in prod_unacknowledged.error
    report = prod_unacknowledged.validation_report()
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    rules = {v["ruleName"].split("[")[0] for v in plugin["violations"]}
    assert {"AwsSolutions-COG4", "AwsSolutions-APIG4", "AwsSolutions-L1", "AwsSolutions-IAM5"} <= rules
    assert "AwsSolutions-RDS10" not in rules, "prod has deletion protection: nothing to acknowledge there"
