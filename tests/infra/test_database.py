"""Aurora Serverless v2 (PostgreSQL 16) and RDS Proxy: private, encrypted, backed up, IAM + TLS."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions, ref, refs_in


def _cluster(synth: Synth) -> tuple[str, dict[str, Any]]:
    (cluster,) = synth.of_type("AWS::RDS::DBCluster")
    return cluster, synth.props(cluster)


def test_cluster_is_aurora_postgres_16_serverless_v2_with_the_context_capacity(
    dev: Synth, prod_unacknowledged: Synth
) -> None:
    _, props = _cluster(dev)
    assert props["Engine"] == "aurora-postgresql"
    assert props["EngineVersion"].startswith("16.")
    assert props["ServerlessV2ScalingConfiguration"] == {"MinCapacity": 0.5, "MaxCapacity": 4}
    assert _cluster(prod_unacknowledged)[1]["ServerlessV2ScalingConfiguration"] == {
        "MinCapacity": 1,
        "MaxCapacity": 8,
    }
    (instance,) = dev.of_type("AWS::RDS::DBInstance")
    assert dev.props(instance)["DBInstanceClass"] == "db.serverless"


def test_database_is_encrypted_backed_up_and_not_public(dev: Synth) -> None:
    _, props = _cluster(dev)
    assert props["StorageEncrypted"] is True
    assert props["BackupRetentionPeriod"] >= 7
    assert props["EnableIAMDatabaseAuthentication"] is True
    for instance in dev.of_type("AWS::RDS::DBInstance"):
        assert dev.props(instance)["PubliclyAccessible"] is False


def test_database_and_proxy_sit_in_isolated_subnets(dev: Synth) -> None:
    (subnet_group,) = dev.of_type("AWS::RDS::DBSubnetGroup")
    (proxy,) = dev.of_type("AWS::RDS::DBProxy")
    data_subnets = {ref(s) for s in dev.props(subnet_group)["SubnetIds"]}
    assert data_subnets == {ref(s) for s in dev.props(proxy)["VpcSubnetIds"]}
    for subnet in data_subnets:
        assert dev.props(subnet)["MapPublicIpOnLaunch"] is False
    routes = dev.of_type("AWS::EC2::Route")
    assert not routes, "no internet or NAT routes exist by default"


def test_dev_can_be_destroyed_and_other_stages_are_protected(dev: Synth, prod_unacknowledged: Synth) -> None:
    cluster, props = _cluster(dev)
    assert props["DeletionProtection"] is False and dev.resources[cluster]["DeletionPolicy"] == "Delete"
    cluster, props = _cluster(prod_unacknowledged)
    assert props["DeletionProtection"] is True
    assert prod_unacknowledged.resources[cluster]["DeletionPolicy"] == "Snapshot"
    assert prod_unacknowledged.resources[cluster]["UpdateReplacePolicy"] == "Snapshot"


def test_master_secret_is_generated_and_rotated(dev: Synth) -> None:
    (secret,) = dev.of_type("AWS::SecretsManager::Secret")
    assert "GenerateSecretString" in dev.props(secret)
    (rotation,) = dev.of_type("AWS::SecretsManager::RotationSchedule")
    assert dev.props(rotation)["RotationRules"]["ScheduleExpression"] == "rate(30 days)"
    _, props = _cluster(dev)
    assert "{{resolve:secretsmanager:" in str(props["MasterUserPassword"])


def test_proxy_requires_tls_and_iam_end_to_end(dev: Synth) -> None:
    (proxy,) = dev.of_type("AWS::RDS::DBProxy")
    props = dev.props(proxy)
    assert props["RequireTLS"] is True
    assert props["DefaultAuthScheme"] == "IAM_AUTH"
    assert not props.get("Auth"), "no secret-based login path for clients"
    role_policies = [
        p
        for p in dev.of_type("AWS::IAM::Policy").values()
        if ref(p["Properties"]["Roles"][0]) == ref(props["RoleArn"])
    ]
    (statement,) = role_policies[0]["Properties"]["PolicyDocument"]["Statement"]
    (cluster,) = dev.of_type("AWS::RDS::DBCluster")
    assert statement["Action"] == "rds-db:connect"
    assert refs_in(statement["Resource"]) == {cluster} and "/engram_app" in str(statement["Resource"])


def test_api_functions_log_in_to_the_proxy_as_the_app_role_only(dev: Synth) -> None:
    (proxy,) = dev.of_type("AWS::RDS::DBProxy")
    for name, logical in engram_functions(dev).items():
        if name in ("migrate", "admin"):
            continue
        role = ref(dev.props(logical)["Role"])
        statements = [
            s
            for p in dev.of_type("AWS::IAM::Policy").values()
            if role in {ref(r) for r in p["Properties"]["Roles"]}
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ]
        connect = [s for s in statements if s["Action"] == "rds-db:connect"]
        assert len(connect) == 1, name
        assert proxy in refs_in(connect[0]["Resource"]) and "/engram_app" in str(connect[0]["Resource"])
        assert not [s for s in statements if "secretsmanager" in str(s["Action"])], name


def test_migration_trigger_runs_the_migrator_after_the_database_and_proxy(dev: Synth) -> None:
    (trigger,) = dev.of_type("Custom::Trigger")
    props = dev.props(trigger)
    assert props["ExecuteOnHandlerChange"] is True
    version = ref(props["HandlerArn"])
    assert ref(dev.props(version)["FunctionName"]) == engram_functions(dev)["migrate"]
    depends = set(dev.resources[trigger]["DependsOn"])
    (cluster,) = dev.of_type("AWS::RDS::DBCluster")
    (instance,) = dev.of_type("AWS::RDS::DBInstance")
    (proxy,) = dev.of_type("AWS::RDS::DBProxy")
    assert {cluster, instance, proxy} <= depends
