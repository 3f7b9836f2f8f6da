"""Small hand-made CloudFormation fragments for the deploy gate's tests: a VPC with app and data subnets,
functions with their security groups, endpoints, a proxy and a cluster. Each test builds the smallest
template that shows one check passing, then breaks one thing and shows the check failing."""

from __future__ import annotations

import copy
from typing import Any

from infra.gate.template import Template

Body = dict[str, Any]
VPC = "Vpc"


def getatt(logical: str, attribute: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical, attribute]}


def ref(logical: str) -> dict[str, str]:
    return {"Ref": logical}


def vpc_cidr() -> dict[str, list[str]]:
    return getatt(VPC, "CidrBlock")


def network() -> Body:
    """A VPC with two app subnets (each with its own route table) and two data subnets."""
    resources: Body = {
        VPC: {
            "Type": "AWS::EC2::VPC",
            "Properties": {"CidrBlock": "10.40.0.0/16", "EnableDnsHostnames": True, "EnableDnsSupport": True},
        }
    }
    for name, cidr in (
        ("App1", "10.40.0.0/22"),
        ("App2", "10.40.4.0/22"),
        ("Data1", "10.40.8.0/24"),
        ("Data2", "10.40.9.0/24"),
    ):
        resources[f"{name}Subnet"] = {
            "Type": "AWS::EC2::Subnet",
            "Properties": {"CidrBlock": cidr, "VpcId": ref(VPC)},
        }
        resources[f"{name}Routes"] = {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": ref(VPC)}}
        resources[f"{name}Association"] = {
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": {"RouteTableId": ref(f"{name}Routes"), "SubnetId": ref(f"{name}Subnet")},
        }
    return {"Resources": resources}


def security_group(
    body: Body, logical: str, *, egress: list[Body] | None = None, ingress: list[Body] | None = None
) -> None:
    props: Body = {"GroupDescription": logical, "VpcId": ref(VPC)}
    if egress is not None:
        props["SecurityGroupEgress"] = egress
    if ingress is not None:
        props["SecurityGroupIngress"] = ingress
    body["Resources"][logical] = {"Type": "AWS::EC2::SecurityGroup", "Properties": props}


def https_to(cidr: Any) -> Body:
    return {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": cidr}


def sg_rule(body: Body, logical: str, *, source: str, target: str, port: int) -> None:
    """source may connect to target on port: an egress on source and an ingress on target."""
    body["Resources"][f"{logical}Egress"] = {
        "Type": "AWS::EC2::SecurityGroupEgress",
        "Properties": {
            "GroupId": getatt(source, "GroupId"),
            "IpProtocol": "tcp",
            "FromPort": port,
            "ToPort": port,
            "DestinationSecurityGroupId": getatt(target, "GroupId"),
        },
    }
    body["Resources"][f"{logical}Ingress"] = {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {
            "GroupId": getatt(target, "GroupId"),
            "IpProtocol": "tcp",
            "FromPort": port,
            "ToPort": port,
            "SourceSecurityGroupId": getatt(source, "GroupId"),
        },
    }


def function(
    body: Body, logical: str, *, groups: list[str], env: Body | None = None, name: str | None = None
) -> None:
    body["Resources"][f"{logical}Role"] = {"Type": "AWS::IAM::Role", "Properties": {}}
    body["Resources"][logical] = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "FunctionName": name or logical,
            "Role": getatt(f"{logical}Role", "Arn"),
            "Timeout": 15,
            "Environment": {"Variables": env or {}},
            "VpcConfig": {
                "SecurityGroupIds": [getatt(g, "GroupId") for g in groups],
                "SubnetIds": [ref("App1Subnet"), ref("App2Subnet")],
            },
        },
    }


def grant(body: Body, function_logical: str, actions: list[str], resource: Any = "*") -> None:
    body["Resources"][f"{function_logical}Policy"] = {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "Roles": [ref(f"{function_logical}Role")],
            "PolicyDocument": {"Statement": [{"Effect": "Allow", "Action": actions, "Resource": resource}]},
        },
    }


def interface_endpoint(
    body: Body, service: str, *, group: str = "EndpointSg", private_dns: bool = True
) -> str:
    logical = f"{service.title().replace('-', '')}Endpoint"
    body["Resources"][logical] = {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {
            "VpcEndpointType": "Interface",
            "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, f".{service}"]]},
            "VpcId": ref(VPC),
            "PrivateDnsEnabled": private_dns,
            "SecurityGroupIds": [getatt(group, "GroupId")],
            "SubnetIds": [ref("App1Subnet"), ref("App2Subnet")],
        },
    }
    return logical


def s3_gateway(body: Body, route_tables: tuple[str, ...] = ("App1Routes", "App2Routes")) -> None:
    body["Resources"]["S3Endpoint"] = {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {
            "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]},
            "VpcId": ref(VPC),
            "RouteTableIds": [ref(t) for t in route_tables],
        },
    }


def s3_prefix_list_lookup(body: Body, service: str = "s3") -> dict[str, list[str]]:
    """The custom resource that asks EC2 for a managed prefix list, as CDK's AwsCustomResource renders it."""
    create = {
        "Fn::Join": [
            "",
            [
                '{"service":"EC2","action":"describeManagedPrefixLists","parameters":{"Filters":[{"Name":'
                '"prefix-list-name","Values":["com.amazonaws.',
                {"Ref": "AWS::Region"},
                f'.{service}"]}}]}},"physicalResourceId":{{"id":"x"}}}}',
            ],
        ]
    }
    body["Resources"]["PrefixListLookup"] = {"Type": "Custom::AWS", "Properties": {"Create": create}}
    return getatt("PrefixListLookup", "PrefixLists.0.PrefixListId")


def prefix_list_egress(body: Body, group: str, prefix_list: Any) -> None:
    body["Resources"][f"{group}ToPrefixList"] = {
        "Type": "AWS::EC2::SecurityGroupEgress",
        "Properties": {
            "GroupId": getatt(group, "GroupId"),
            "IpProtocol": "tcp",
            "FromPort": 443,
            "ToPort": 443,
            "DestinationPrefixListId": prefix_list,
        },
    }


def database(body: Body, *, port: int = 5432) -> None:
    """A cluster in ClusterSg behind a proxy in ProxySg, the proxy allowed in to the cluster."""
    security_group(body, "ClusterSg")
    security_group(body, "ProxySg")
    body["Resources"]["DbSubnets"] = {
        "Type": "AWS::RDS::DBSubnetGroup",
        "Properties": {"SubnetIds": [ref("Data1Subnet"), ref("Data2Subnet")]},
    }
    body["Resources"]["Secret"] = {"Type": "AWS::SecretsManager::Secret", "Properties": {}}
    body["Resources"]["Cluster"] = {
        "Type": "AWS::RDS::DBCluster",
        "Properties": {
            "Port": port,
            "DBSubnetGroupName": ref("DbSubnets"),
            "VpcSecurityGroupIds": [getatt("ClusterSg", "GroupId")],
            "EngineVersion": "16.13",
        },
    }
    body["Resources"]["SecretAttachment"] = {
        "Type": "AWS::SecretsManager::SecretTargetAttachment",
        "Properties": {"SecretId": ref("Secret"), "TargetId": ref("Cluster")},
    }
    body["Resources"]["Proxy"] = {
        "Type": "AWS::RDS::DBProxy",
        "Properties": {
            "VpcSecurityGroupIds": [getatt("ProxySg", "GroupId")],
            "VpcSubnetIds": [ref("Data1Subnet"), ref("Data2Subnet")],
        },
    }
    body["Resources"]["ProxyTargets"] = {
        "Type": "AWS::RDS::DBProxyTargetGroup",
        "Properties": {"DBProxyName": ref("Proxy"), "DBClusterIdentifiers": [ref("Cluster")]},
    }
    sg_rule(body, "ProxyToCluster", source="ProxySg", target="ClusterSg", port=port)


def template(body: Body, region: str | None = "eu-west-1") -> Template:
    return Template.of(copy.deepcopy(body), region)
