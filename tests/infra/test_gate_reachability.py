"""The gate's reachability check on hand-made fragments: each path is found when it exists, and each one
thing that breaks it (the egress rule, the endpoint's ingress, private DNS, a route, a port) is caught."""

from __future__ import annotations

from typing import Any

from infra.aws_services import ServiceUse
from infra.gate.checks import grants_within_declarations, reachability
from infra.gate.clients import ClientSite, FunctionCode
from infra.gate.reachability import Network
from tests.infra import fragments as f


def _function_in_vpc(egress: list[dict]) -> dict:  # type: ignore[type-arg]
    body = f.network()
    f.security_group(body, "FnSg", egress=egress)
    f.function(body, "Fn", groups=["FnSg"])
    return body


def _path(body: dict, service: str, region: str = "eu-west-1") -> str | None:  # type: ignore[type-arg]
    network = Network(f.template(body, region))
    return network.path_to_service(network.function_placement("Fn"), service)


# --- S3 through the gateway endpoint ---------------------------------------------------------------


def test_s3_gateway_with_egress_only_to_the_vpc_cidr_is_no_path() -> None:
    # Given the shape the stack had: HTTPS allowed only to the VPC's CIDR, and an S3 gateway endpoint
    body = _function_in_vpc([f.https_to(f.vpc_cidr())])
    f.s3_gateway(body)
    # Then S3 (public addresses behind the gateway's prefix list) is out of reach
    assert _path(body, "s3") is None


def test_s3_gateway_with_egress_to_the_s3_prefix_list_is_a_path() -> None:
    body = _function_in_vpc([f.https_to(f.vpc_cidr())])
    f.s3_gateway(body)
    f.prefix_list_egress(body, "FnSg", f.s3_prefix_list_lookup(body))
    assert _path(body, "s3") == "gateway endpoint S3Endpoint + prefix-list egress"


def test_a_prefix_list_of_another_service_or_a_literal_id_does_not_count_for_s3() -> None:
    body = _function_in_vpc([])
    f.s3_gateway(body)
    f.prefix_list_egress(body, "FnSg", f.s3_prefix_list_lookup(body, service="dynamodb"))
    assert _path(body, "s3") is None
    literal = _function_in_vpc([])
    f.s3_gateway(literal)
    f.prefix_list_egress(literal, "FnSg", "pl-6da54004")  # cannot be told apart from any other list offline
    assert _path(literal, "s3") is None


def test_s3_gateway_missing_from_one_subnets_route_table_is_no_path() -> None:
    body = _function_in_vpc([f.https_to("0.0.0.0/0")])
    f.s3_gateway(body, route_tables=("App1Routes",))  # the function also runs in App2
    assert _path(body, "s3") is None
    f.s3_gateway(body)
    assert _path(body, "s3") is not None


# --- interface endpoints ---------------------------------------------------------------------------


def _with_endpoint(*, ingress: list[dict], egress: list[dict], private_dns: bool = True) -> dict:  # type: ignore[type-arg]
    body = _function_in_vpc(egress)
    f.security_group(body, "EndpointSg", ingress=ingress)
    f.interface_endpoint(body, "secretsmanager", private_dns=private_dns)
    return body


def test_interface_endpoint_admitting_the_vpc_cidr_is_a_path() -> None:
    body = _with_endpoint(ingress=[f.https_to(f.vpc_cidr())], egress=[f.https_to(f.vpc_cidr())])
    assert _path(body, "secretsmanager") == "interface endpoint SecretsmanagerEndpoint"


def test_interface_endpoint_without_private_dns_is_no_path() -> None:
    body = _with_endpoint(
        ingress=[f.https_to(f.vpc_cidr())], egress=[f.https_to(f.vpc_cidr())], private_dns=False
    )
    assert _path(body, "secretsmanager") is None


def test_interface_endpoint_whose_group_does_not_admit_the_function_is_no_path() -> None:
    # The endpoint admits only the data subnets' range, not the app subnets the function runs in
    body = _with_endpoint(ingress=[f.https_to("10.40.8.0/23")], egress=[f.https_to(f.vpc_cidr())])
    assert _path(body, "secretsmanager") is None


def test_interface_endpoint_admitting_the_functions_group_by_name_is_a_path() -> None:
    body = _with_endpoint(ingress=[], egress=[])
    f.sg_rule(body, "FnToEndpoint", source="FnSg", target="EndpointSg", port=443)
    assert _path(body, "secretsmanager") is not None


def test_function_without_egress_to_the_endpoint_is_no_path() -> None:
    body = _with_endpoint(
        ingress=[f.https_to(f.vpc_cidr())],
        egress=[{"IpProtocol": "tcp", "FromPort": 5432, "ToPort": 5432, "CidrIp": f.vpc_cidr()}],
    )
    assert _path(body, "secretsmanager") is None


def test_no_endpoint_for_the_service_is_no_path() -> None:
    body = _with_endpoint(ingress=[f.https_to(f.vpc_cidr())], egress=[f.https_to(f.vpc_cidr())])
    assert _path(body, "textract") is None


# --- NAT -------------------------------------------------------------------------------------------


def test_nat_route_with_egress_anywhere_reaches_any_service_and_without_the_route_does_not() -> None:
    body = _function_in_vpc([f.https_to("0.0.0.0/0")])
    assert _path(body, "textract") is None
    body["Resources"]["Nat"] = {"Type": "AWS::EC2::NatGateway", "Properties": {}}
    for table in ("App1Routes", "App2Routes"):
        body["Resources"][f"{table}Default"] = {
            "Type": "AWS::EC2::Route",
            "Properties": {
                "RouteTableId": f.ref(table),
                "DestinationCidrBlock": "0.0.0.0/0",
                "NatGatewayId": f.ref("Nat"),
            },
        }
    assert _path(body, "textract") == "NAT gateway"


def test_a_function_outside_the_vpc_reaches_public_endpoints() -> None:
    body = _function_in_vpc([])
    del body["Resources"]["Fn"]["Properties"]["VpcConfig"]
    assert _path(body, "s3") is not None


# --- the database ----------------------------------------------------------------------------------


def _app_function(body: dict, port: int = 5432) -> None:  # type: ignore[type-arg]
    f.security_group(body, "FnSg", egress=[])
    f.function(
        body,
        "Fn",
        groups=["FnSg"],
        env={"ENGRAM_DB_HOST": f.getatt("Proxy", "Endpoint"), "ENGRAM_DB_PORT": str(port)},
    )


def test_database_path_function_to_proxy_to_cluster() -> None:
    body = f.network()
    f.database(body)
    _app_function(body)
    f.sg_rule(body, "FnToProxy", source="FnSg", target="ProxySg", port=5432)
    how, missing = Network(f.template(body)).database_path("Fn")
    assert (how, missing) == ("RDS Proxy Proxy -> Cluster", [])


def test_database_path_breaks_without_the_proxys_ingress() -> None:
    body = f.network()
    f.database(body)
    _app_function(body)
    f.sg_rule(body, "FnToProxy", source="FnSg", target="ProxySg", port=5432)
    del body["Resources"]["FnToProxyIngress"]
    how, missing = Network(f.template(body)).database_path("Fn")
    assert how is None and missing == ["its security groups do not reach the proxy Proxy's on 5432"]


def test_database_path_breaks_when_the_proxy_cannot_reach_the_cluster() -> None:
    body = f.network()
    f.database(body)
    _app_function(body)
    f.sg_rule(body, "FnToProxy", source="FnSg", target="ProxySg", port=5432)
    del body["Resources"]["ProxyToClusterEgress"]
    _, missing = Network(f.template(body)).database_path("Fn")
    assert missing == ["the proxy's security groups do not reach the cluster Cluster's on 5432"]


def test_database_path_breaks_on_the_wrong_port() -> None:
    body = f.network()
    f.database(body, port=5433)
    _app_function(body, port=5432)
    f.sg_rule(body, "FnToProxy", source="FnSg", target="ProxySg", port=5432)
    _, missing = Network(f.template(body)).database_path("Fn")
    assert "it connects on 5432 but the cluster Cluster listens on 5433" in missing


def test_owner_function_reaches_the_cluster_directly_or_not_at_all() -> None:
    body = f.network()
    f.database(body)
    f.security_group(body, "OwnerSg", egress=[])
    f.function(body, "Owner", groups=["OwnerSg"], env={"ENGRAM_DB_SECRET_ARN": f.ref("SecretAttachment")})
    network = Network(f.template(body))
    assert network.database_path("Owner") == (
        None,
        ["its security groups do not reach the cluster Cluster's on 5432"],
    )
    f.sg_rule(body, "OwnerToCluster", source="OwnerSg", target="ClusterSg", port=5432)
    assert Network(f.template(body)).database_path("Owner") == ("cluster Cluster directly", [])


# --- the whole check: declarations against code and template --------------------------------------


def _documents_stack(
    *, declared: list[ServiceUse], created: list[str], grant: list[str]
) -> tuple[list[str], dict]:  # type: ignore[type-arg]
    body = _function_in_vpc([f.https_to(f.vpc_cidr())])
    f.s3_gateway(body)
    f.prefix_list_egress(body, "FnSg", f.s3_prefix_list_lookup(body))
    f.grant(body, "Fn", grant)
    code = FunctionCode(
        "documents", frozenset(), tuple(ClientSite(s, "engram.x.y", "x.py:1") for s in created)
    )
    return reachability(f.template(body), {"documents": "Fn"}, {"documents": declared}, {"documents": code})


S3 = ServiceUse("s3", "reads the bucket")


def test_reachability_passes_when_declared_created_routed_and_granted() -> None:
    problems, paths = _documents_stack(declared=[S3], created=["s3"], grant=["s3:GetObject*"])
    assert problems == []
    assert paths == {"documents": ["s3: gateway endpoint S3Endpoint + prefix-list egress"]}


def test_a_client_the_code_creates_but_nobody_declared_fails() -> None:
    problems, _ = _documents_stack(declared=[S3], created=["s3", "sqs"], grant=["s3:GetObject*"])
    assert problems == [
        "documents: its code creates a sqs client (x.py:1, engram.x.y) that infra/aws_services.py does "
        "not declare for it"
    ]


def test_a_declared_service_the_code_never_creates_fails() -> None:
    problems, _ = _documents_stack(declared=[S3], created=[], grant=["s3:GetObject*"])
    assert problems == ["documents: declares s3 (reads the bucket) but its code creates no such client"]


def test_a_called_service_without_an_iam_grant_fails() -> None:
    problems, _ = _documents_stack(declared=[S3], created=["s3"], grant=["sqs:SendMessage"])
    assert problems == ["documents: calls s3 (reads the bucket) but its role grants no s3:* action"]


def test_a_call_switched_off_by_the_functions_settings_needs_no_path() -> None:
    ocr = ServiceUse("textract", "OCR", when={"ocr_provider": frozenset({"auto", "textract"})})
    body = _function_in_vpc([])
    f.grant(body, "Fn", ["textract:DetectDocumentText"])
    code = {"extract": FunctionCode("extract", frozenset(), (ClientSite("textract", "m.f", "m.py:1"),))}
    problems, _ = reachability(f.template(body), {"extract": "Fn"}, {"extract": [ocr]}, code)
    assert problems == ["extract: no network path to textract (OCR)"]  # ocr_provider defaults to auto
    body["Resources"]["Fn"]["Properties"]["Environment"]["Variables"]["ENGRAM_OCR_PROVIDER"] = "none"
    problems, _ = reachability(f.template(body), {"extract": "Fn"}, {"extract": [ocr]}, code)
    assert problems == []


def test_code_that_logs_in_through_the_proxy_needs_the_database_path() -> None:
    body = f.network()
    f.database(body)
    _app_function(body)
    code = {"health": FunctionCode("health", frozenset({"engram.db.connect.app_database"}), ())}
    problems, _ = reachability(f.template(body), {"health": "Fn"}, {"health": []}, code)
    assert problems == ["health: database: its security groups do not reach the proxy Proxy's on 5432"]
    f.sg_rule(body, "FnToProxy", source="FnSg", target="ProxySg", port=5432)
    problems, paths = reachability(f.template(body), {"health": "Fn"}, {"health": []}, code)
    assert problems == [] and paths["health"] == ["database: RDS Proxy Proxy -> Cluster"]


def test_an_rds_login_token_needs_its_grant_though_it_sends_no_request() -> None:
    token = ServiceUse("rds", "signs its IAM login token for RDS Proxy", calls=False)
    body = _function_in_vpc([])
    code = {"health": FunctionCode("health", frozenset(), (ClientSite("rds", "m.f", "m.py:1"),))}
    problems, _ = reachability(f.template(body), {"health": "Fn"}, {"health": [token]}, code)
    assert problems == [
        "health: signs its IAM login token for RDS Proxy, but its role grants no rds-db:* action"
    ]
    f.grant(body, "Fn", ["rds-db:connect"])
    assert reachability(f.template(body), {"health": "Fn"}, {"health": [token]}, code)[0] == []


# --- the converse: no role grants a function what it does not declare ------------------------------


def _granted(actions: list[str], resource: Any = "*", *, traced: bool = True) -> dict:  # type: ignore[type-arg]
    body = _function_in_vpc([])
    f.grant(body, "Fn", actions, resource)
    if traced:
        body["Resources"]["Fn"]["Properties"]["TracingConfig"] = {"Mode": "Active"}
    return body


def _beyond(body: dict, declared: list[ServiceUse]) -> list[str]:  # type: ignore[type-arg]
    return grants_within_declarations(f.template(body), {"documents": "Fn"}, {"documents": declared})


def test_grants_of_declared_services_and_xray_under_tracing_are_within_the_declarations() -> None:
    body = _granted(["s3:GetObject*", "xray:PutTraceSegments", "xray:PutTelemetryRecords"])
    assert _beyond(body, [S3]) == []


def test_a_grant_of_a_service_the_function_does_not_declare_is_beyond_them() -> None:
    body = _granted(["s3:GetObject*", "bedrock:InvokeModel", "states:StartExecution"])
    assert _beyond(body, [S3]) == [
        "documents: its role grants bedrock:InvokeModel, states:StartExecution, which infra/aws_services.py "
        "does not declare for it"
    ]
    # a client the function creates but never calls with does not earn its service a grant
    unused = ServiceUse("bedrock-runtime", "builds a client it never calls", calls=False)
    assert "bedrock:InvokeModel" in _beyond(body, [S3, unused])[0]


def test_xray_without_active_tracing_is_beyond_the_declarations() -> None:
    body = _granted(["xray:PutTraceSegments"], traced=False)
    assert _beyond(body, []) == [
        "documents: its role grants xray:PutTraceSegments, which infra/aws_services.py does not declare "
        "for it"
    ]


def test_sqs_only_on_the_functions_own_on_failure_queue() -> None:
    body = _granted(["sqs:SendMessage"], f.getatt("Failures", "Arn"))
    body["Resources"]["Failures"] = {"Type": "AWS::SQS::Queue"}
    assert _beyond(body, []) == [
        "documents: its role grants sqs:SendMessage, which infra/aws_services.py does not declare for it"
    ]
    body["Resources"]["FnAsync"] = {
        "Type": "AWS::Lambda::EventInvokeConfig",
        "Properties": {
            "FunctionName": f.ref("Fn"),
            "DestinationConfig": {"OnFailure": {"Destination": f.getatt("Failures", "Arn")}},
        },
    }
    assert _beyond(body, []) == []
    body["Resources"]["FnPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]["Resource"] = "*"
    assert "sqs:SendMessage" in _beyond(body, [])[0], "any queue but its own is beyond"


def test_a_managed_policy_other_than_lambdas_own_is_beyond_the_declarations() -> None:
    body = _granted([])
    lambda_basic = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    body["Resources"]["FnRole"]["Properties"]["ManagedPolicyArns"] = [lambda_basic]
    assert _beyond(body, []) == []
    body["Resources"]["FnRole"]["Properties"]["ManagedPolicyArns"].append(
        "arn:aws:iam::aws:policy/AdministratorAccess"
    )
    assert _beyond(body, []) == [
        "documents: its role has the managed policy arn:aws:iam::aws:policy/AdministratorAccess"
    ]
