"""The network (endpoints instead of NAT) and least privilege: no wildcard beyond X-Ray (and Textract
for the extract functions that OCR, Transcribe for the media one: they support no resource-level
permissions)."""

from __future__ import annotations

import json

from infra.s3_access import S3_ACCESS
from tests.infra.conftest import Synth
from tests.infra.helpers import engram_functions, ref, refs_in

XRAY_ONLY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
OCR_ONLY = {"textract:DetectDocumentText"}  # documents (scanned PDF pages) and media (images)
TRANSCRIBE_ONLY = {"transcribe:StartTranscriptionJob", "transcribe:GetTranscriptionJob"}  # media (audio)
# The state machine's role: X-Ray and the CloudWatch Logs delivery actions (vended logs).
LOG_DELIVERY = {
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
}


def _statements_of(synth: Synth, logical_function: str) -> list[dict]:  # type: ignore[type-arg]
    role = ref(synth.props(logical_function)["Role"])
    return [
        statement
        for policy in synth.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy["Properties"]["Roles"]}
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict) -> set[str]:  # type: ignore[type-arg]
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_no_nat_gateway_and_endpoints_for_the_aws_apis_the_functions_use(dev: Synth) -> None:
    assert not dev.of_type("AWS::EC2::NatGateway")
    assert not dev.of_type("AWS::EC2::InternetGateway")
    services = {}
    for props in (dev.props(k) for k in dev.of_type("AWS::EC2::VPCEndpoint")):
        name = str(props["ServiceName"]).rsplit(".", 1)[-1].strip("'\"]}")
        services[name] = props.get("VpcEndpointType", "Gateway")
    text = " ".join(str(dev.props(k)["ServiceName"]) for k in dev.of_type("AWS::EC2::VPCEndpoint"))
    for service in ("secretsmanager", "states", "bedrock-runtime", "events", "s3"):
        assert f".{service}" in text, service
    assert ".textract" in text  # OCR of scanned pages and images without a NAT gateway
    assert list(services.values()).count("Interface") == 5  # no STS: no function calls it


def test_no_statement_grants_resource_star_except_xray(dev: Synth) -> None:
    functions = engram_functions(dev)
    documents_role = ref(dev.props(functions["pipeline-extract"])["Role"])
    media_role = ref(dev.props(functions["pipeline-extract_media"])["Role"])
    for logical, policy in dev.of_type("AWS::IAM::Policy").items():
        roles = {ref(r) for r in policy["Properties"]["Roles"]}
        allowed = set(XRAY_ONLY)
        if documents_role in roles:
            allowed |= OCR_ONLY
        if media_role in roles:
            allowed |= OCR_ONLY | TRANSCRIBE_ONLY
        if logical.startswith("IngestionPipelineStateMachineRole"):
            allowed |= LOG_DELIVERY
        if logical.startswith("NetworkS3PrefixList"):  # the deploy-time lookup of S3's prefix list id
            allowed |= {"ec2:DescribeManagedPrefixLists"}
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == "*":
                assert _actions(statement) <= allowed, (logical, statement)


def test_only_the_owner_functions_read_the_master_secret(dev: Synth) -> None:
    (secret,) = dev.of_type("AWS::SecretsManager::Secret")
    readers = set()
    for name, logical in engram_functions(dev).items():
        for statement in _statements_of(dev, logical):
            if "secretsmanager:GetSecretValue" in _actions(statement):
                assert secret in refs_in(statement["Resource"]) or ref(statement["Resource"]) is not None
                readers.add(name)
    assert readers == {"migrate", "admin"}


def test_only_the_embedding_functions_may_call_bedrock_and_only_llm_extract_and_sessions_the_llm(
    dev: Synth,
) -> None:
    callers: dict[str, set[str]] = {}
    for name, logical in engram_functions(dev).items():
        for statement in _statements_of(dev, logical):
            if any(a.startswith("bedrock:") for a in _actions(statement)):
                assert _actions(statement) == {"bedrock:InvokeModel"}
                resource = str(statement["Resource"])
                models = {m for m in ("amazon.titan-embed-text-v2:0", "claude-haiku-4-5") if m in resource}
                assert models, (name, resource)
                callers.setdefault(name, set()).update(models)
    embedding = {"amazon.titan-embed-text-v2:0"}
    assert callers == {
        **{name: embedding for name in ("search", "procedures", "profile", "graph")},
        "sessions": {*embedding, "claude-haiku-4-5"},  # messages sent with extract=full
        "memories": {*embedding, "claude-haiku-4-5"},  # direct writes with extract=full
        "pipeline-embed": embedding,
        "pipeline-llm_extract": {*embedding, "claude-haiku-4-5"},
        "relay": {"claude-haiku-4-5"},  # conversation summaries
    }


def _egress(synth: Synth, group: str) -> list[dict]:  # type: ignore[type-arg]
    inline = synth.props(group).get("SecurityGroupEgress", [])
    separate = [
        r["Properties"]
        for r in synth.of_type("AWS::EC2::SecurityGroupEgress").values()
        if ref(r["Properties"]["GroupId"]) == group
    ]
    return [e for e in [*inline, *separate] if e.get("CidrIp") != "255.255.255.255/32"]


def _group(synth: Synth, prefix: str) -> str:
    (group,) = [k for k in synth.of_type("AWS::EC2::SecurityGroup") if k.startswith(prefix)]
    return group


def test_function_groups_reach_only_https_in_the_vpc_and_their_database(dev: Synth) -> None:
    cluster_sg, proxy_sg = _group(dev, "DatabaseClusterSg"), _group(dev, "DatabaseProxySg")
    for prefix, database in (("FunctionsProxyClientsSg", proxy_sg), ("FunctionsOwnerClientsSg", cluster_sg)):
        rules = _egress(dev, _group(dev, prefix))
        https = [r for r in rules if r["FromPort"] == 443]
        assert len(https) == 1 and ref(https[0]["CidrIp"]) is not None, "the VPC's own CIDR, not 0.0.0.0/0"
        (db,) = [r for r in rules if r["FromPort"] == 5432]
        assert ref(db["DestinationSecurityGroupId"]) == database, prefix
        assert len(rules) == 2, prefix


def test_s3_callers_get_https_to_s3s_managed_prefix_list_looked_up_for_the_region(dev: Synth) -> None:
    # Given the group that the functions calling S3 carry
    (rule,) = _egress(dev, _group(dev, "NetworkS3AccessSg"))
    # Then it lets them out on 443 to the prefix list a deploy-time lookup finds for this region
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443)
    lookup = ref(rule["DestinationPrefixListId"])
    assert lookup is not None and dev.resources[lookup]["Type"] == "Custom::AWS"
    create = json.dumps(dev.props(lookup)["Create"])
    assert "describeManagedPrefixLists" in create and "com.amazonaws.eu-west-1.s3" in create


def _s3_grants(synth: Synth, logical_function: str) -> set[tuple[str, str]]:
    """(action, resource) for each S3 action of the function's role: a bucket as '<Bucket>', an object
    key pattern as '<Bucket>/<prefix>*'."""

    def rendered(resource: object) -> str:
        text = json.dumps(resource)
        (bucket,) = refs_in(resource)
        if "Fn::Join" not in text:
            return f"<{bucket}>"
        return f"<{bucket}>" + "".join(p for p in resource["Fn::Join"][1] if isinstance(p, str))  # type: ignore[index]

    return {
        (action, rendered(resource))
        for statement in _statements_of(synth, logical_function)
        for action in _actions(statement)
        if action.startswith("s3:")
        for resource in (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
    }


def test_each_function_holds_its_exact_s3_actions_on_the_keys_declared_for_them(dev: Synth) -> None:
    functions = engram_functions(dev)
    buckets = {
        "documents": dev.stack.get_logical_id(dev.stack.buckets.documents.node.default_child),  # type: ignore[arg-type]
        "exports": dev.stack.get_logical_id(dev.stack.buckets.exports.node.default_child),  # type: ignore[arg-type]
    }
    for name, logical in functions.items():
        expected = {
            (
                action,
                f"<{buckets[access.bucket]}>"
                if access.keys is None
                else f"<{buckets[access.bucket]}>/{key}*",
            )
            for access in S3_ACCESS.get(
                name.replace("-", "/", 1) if name.startswith("pipeline-") else name, ()
            )
            for action in access.actions
            for key in (access.keys if access.keys is not None else ("",))
        }
        assert _s3_grants(dev, logical) == expected, name
    # the containers function only lists and deletes the versions of work files
    documents = buckets["documents"]
    assert _s3_grants(dev, functions["containers"]) == {
        ("s3:ListBucketVersions", f"<{documents}>"),
        ("s3:DeleteObjectVersion", f"<{documents}>/_engram/*"),
    }
