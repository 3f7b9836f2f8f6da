"""cdk-nag's AwsSolutions pack runs at synth: zero unacknowledged findings, each acknowledgement with a
reason and kept in the code (not in the template), and the check is live (without the acknowledgements
the same synth fails)."""

from __future__ import annotations

from tests.infra.conftest import Synth


def _acknowledgements(synth: Synth) -> dict[str, str]:
    """rule -> reason, as CDK records them on the constructs (construct metadata, not the template)."""
    found: dict[str, str] = {}
    for construct in synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == "aws:cdk:acknowledged-rules":
                found.update({f"{construct.node.path} {rule}": reason for rule, reason in entry.data.items()})
    return found


def test_synth_passes_awssolutions_with_no_unacknowledged_finding(dev: Synth, agnostic: Synth) -> None:
    for synth in (dev, agnostic):
        assert synth.error is None, synth.error
        report = synth.validation_report()
        violations = [v for plugin in report["pluginReports"] for v in plugin["violations"]]
        assert violations == []


def test_every_acknowledgement_names_a_rule_and_gives_a_reason(dev: Synth) -> None:
    acknowledgements = _acknowledgements(dev)
    assert [k for k in acknowledgements if "AwsSolutions-" in k]
    for where, reason in acknowledgements.items():  # CDK adds a few of its own, with reasons too
        assert len(reason) >= 40, where


def test_no_acknowledgement_is_written_into_the_template(dev: Synth) -> None:
    assert not [k for k, r in dev.resources.items() if "cdk_nag" in r.get("Metadata", {})]


def test_without_the_acknowledgements_synth_fails_on_the_findings(prod_unacknowledged: Synth) -> None:
    assert prod_unacknowledged.error is not None and "ValidationFailed" in prod_unacknowledged.error
    report = prod_unacknowledged.validation_report()
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    rules = {v["ruleName"].split("[")[0] for v in plugin["violations"]}
    assert {"AwsSolutions-COG4", "AwsSolutions-APIG4", "AwsSolutions-L1", "AwsSolutions-IAM5"} <= rules
    assert "AwsSolutions-RDS10" not in rules, "prod has deletion protection: nothing to acknowledge there"
