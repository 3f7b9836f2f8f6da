"""Dashboard and alarms: 5xx, p95 latency, throttles, database connections, proxy pinning."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synth
from tests.infra.helpers import ref


def _alarms(synth: Synth) -> dict[str, dict[str, Any]]:
    return {logical: synth.props(logical) for logical in synth.of_type("AWS::CloudWatch::Alarm")}


def _metric_names(alarm: dict[str, Any]) -> set[str]:
    if "MetricName" in alarm:
        return {alarm["MetricName"]}
    return {q["MetricStat"]["Metric"]["MetricName"] for q in alarm.get("Metrics", []) if "MetricStat" in q}


def test_alarms_cover_5xx_latency_throttles_connections_and_pinning(dev: Synth) -> None:
    by_metric = {name: alarm for alarm in _alarms(dev).values() for name in _metric_names(alarm)}
    assert by_metric["5XXError"]["Namespace"] == "AWS/ApiGateway"
    assert by_metric["Latency"]["ExtendedStatistic"] == "p95"
    assert by_metric["DatabaseConnections"]["Namespace"] == "AWS/RDS"
    assert by_metric["DatabaseConnectionsCurrentlySessionPinned"]["Namespace"] == "AWS/RDS"
    throttles = by_metric["Throttles"]
    summed = [q for q in throttles["Metrics"] if "Expression" in q]
    assert len(summed) == 1 and summed[0]["Expression"].count("+") == len(throttles["Metrics"]) - 2


def test_every_alarm_notifies_the_encrypted_topic(dev: Synth) -> None:
    (topic,) = dev.of_type("AWS::SNS::Topic")
    assert ref(dev.props(topic)["KmsMasterKeyId"]) in dev.of_type("AWS::KMS::Key")
    alarms = _alarms(dev)
    throttle_alarms = [a for a in alarms.values() if "Throttles" in _metric_names(a)]
    # 5xx, latency, connections, pinning, async failures, and one throttle alarm per 10 functions
    # (CloudWatch's limit).
    assert len(alarms) == 5 + len(throttle_alarms) and throttle_alarms
    for logical, alarm in alarms.items():
        assert [ref(a) for a in alarm["AlarmActions"]] == [topic], logical


def test_dashboard_shows_the_api_functions_and_database(dev: Synth) -> None:
    (dashboard,) = dev.of_type("AWS::CloudWatch::Dashboard")
    body = str(dev.props(dashboard)["DashboardBody"])
    for needle in (
        "API requests and errors",
        "Lambda p95 duration",
        "ServerlessDatabaseCapacity",
        "DatabaseConnectionsCurrentlySessionPinned",
    ):
        assert needle in body, needle


def test_cloudwatch_may_publish_to_the_alarm_topic(dev: Synth) -> None:
    # Found by an audit: enforce_ssl gives the topic a policy of its own, which replaces SNS's default
    # one; with only its Deny (no TLS), CloudWatch could not publish, and no alarm reached anyone
    (topic,) = dev.of_type("AWS::SNS::Topic")
    (policy,) = [p for p in dev.of_type("AWS::SNS::TopicPolicy") if topic in str(dev.props(p)["Topics"])]
    allows = [
        s
        for s in dev.props(policy)["PolicyDocument"]["Statement"]
        if s["Effect"] == "Allow" and s.get("Principal", {}).get("Service") == "cloudwatch.amazonaws.com"
    ]

    assert len(allows) == 1 and allows[0]["Action"] == "sns:Publish"
    assert ref(allows[0]["Resource"]) == topic
    assert "aws:SourceAccount" in str(allows[0]["Condition"])
