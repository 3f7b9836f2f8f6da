"""The VPC: functions in private subnets, the database in isolated subnets, AWS APIs via endpoints.

By default there is no NAT gateway: the functions reach S3 through a (free) gateway endpoint and
Secrets Manager, Step Functions and Bedrock through interface endpoints. See the README for what each
choice costs; `-c nat_gateways=1` adds a NAT gateway for providers outside AWS.

A gateway endpoint is a route to S3's public addresses, so a security group must let the functions out
to them: the egress rule names S3's managed prefix list, whose id (it differs per region) a small
deploy-time lookup asks EC2 for. The deploy gate (infra/gate) checks every function's path from the
template.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.config import StageConfig, log_retention

APP_SUBNETS = "app"
DATA_SUBNETS = "data"


class Network(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig) -> None:
        super().__init__(scope, id)
        self.config = config
        with_nat = config.nat_gateways > 0
        subnets = [
            ec2.SubnetConfiguration(
                name=APP_SUBNETS,
                subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                if with_nat
                else ec2.SubnetType.PRIVATE_ISOLATED,
                cidr_mask=22,
            ),
            ec2.SubnetConfiguration(
                name=DATA_SUBNETS, subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24
            ),
        ]
        if with_nat:
            subnets.insert(
                0, ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=26)
            )
        flow_logs = logs.LogGroup(
            self,
            "FlowLogs",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr("10.40.0.0/16"),
            max_azs=config.max_azs,
            nat_gateways=config.nat_gateways,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
            flow_logs={
                "rejected": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        self.app_subnets = ec2.SubnetSelection(subnet_group_name=APP_SUBNETS)
        self.data_subnets = ec2.SubnetSelection(subnet_group_name=DATA_SUBNETS)
        self.vpc.add_gateway_endpoint(
            "S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[self.app_subnets]
        )
        self.endpoint_security_group = ec2.SecurityGroup(
            self,
            "EndpointsSg",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Interface endpoints: HTTPS from inside the VPC only",
        )
        self.endpoint_security_group.add_ingress_rule(
            ec2.Peer.ipv4(self.vpc.vpc_cidr_block), ec2.Port.tcp(443), "HTTPS from the VPC"
        )
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        for name in config.interface_endpoints:
            self.interface_endpoints[name] = self.vpc.add_interface_endpoint(
                _endpoint_id(name),
                service=ec2.InterfaceVpcEndpointAwsService(name),
                subnets=self.app_subnets,
                security_groups=[self.endpoint_security_group],
                private_dns_enabled=True,
            )
        self.s3_prefix_list_lookup: cr.AwsCustomResource | None = None
        self.s3_access = self._s3_access()

    @property
    def reaches_internet(self) -> bool:
        """Whether functions in the app subnets can open HTTPS connections to anywhere (a NAT gateway)."""
        return self.config.nat_gateways > 0

    def reaches(self, service: str) -> bool:
        """Whether functions in the app subnets can call this AWS API (endpoint or NAT)."""
        return self.reaches_internet or service == "s3" or service in self.interface_endpoints

    def https_out(self, security_group: ec2.SecurityGroup) -> None:
        """HTTPS to the AWS APIs: the interface endpoints in the VPC, or anywhere through the NAT."""
        with_nat = self.config.nat_gateways > 0
        peer = ec2.Peer.any_ipv4() if with_nat else ec2.Peer.ipv4(self.vpc.vpc_cidr_block)
        security_group.add_egress_rule(peer, ec2.Port.tcp(443), "HTTPS to AWS APIs")

    def _s3_access(self) -> ec2.SecurityGroup:
        """The group of the functions that call S3: HTTPS out to S3's addresses (its managed prefix list,
        which the gateway endpoint routes; anywhere when a NAT gateway is there)."""
        group = ec2.SecurityGroup(
            self,
            "S3AccessSg",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Functions that call S3: HTTPS to S3 through the gateway endpoint",
        )
        if self.config.nat_gateways > 0:
            group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to S3 (through the NAT)")
            return group
        region = Stack.of(self).region
        lookup = cr.AwsSdkCall(
            service="EC2",
            action="describeManagedPrefixLists",
            parameters={"Filters": [{"Name": "prefix-list-name", "Values": [f"com.amazonaws.{region}.s3"]}]},
            physical_resource_id=cr.PhysicalResourceId.of(f"s3-prefix-list-{region}"),
            output_paths=["PrefixLists.0.PrefixListId"],
        )
        self.s3_prefix_list_lookup = cr.AwsCustomResource(
            self,
            "S3PrefixList",
            on_create=lookup,
            on_update=lookup,
            policy=cr.AwsCustomResourcePolicy.from_sdk_calls(
                resources=cr.AwsCustomResourcePolicy.ANY_RESOURCE
            ),
            install_latest_aws_sdk=False,
            log_group=logs.LogGroup(
                self,
                "S3PrefixListLogs",
                retention=log_retention(self.config.log_retention_days),
                removal_policy=RemovalPolicy.DESTROY,
            ),
        )
        prefix_list = self.s3_prefix_list_lookup.get_response_field("PrefixLists.0.PrefixListId")
        group.add_egress_rule(ec2.Peer.prefix_list(prefix_list), ec2.Port.tcp(443), "HTTPS to S3 (gateway)")
        return group


def _endpoint_id(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-")) + "Endpoint"
