"""Network paths, computed from the template: can this function reach that AWS API, or the database?

A VPC function reaches an AWS API when one of these holds:
- an interface endpoint for the service with private DNS, whose security group admits the function (a
  rule naming one of its groups, or a CIDR holding its subnets) on 443, and a group of the function lets
  it out to the endpoint (a rule naming the endpoint's group, or a CIDR holding the endpoint's subnets);
- for S3 (and DynamoDB), a gateway endpoint in the route table of every subnet of the function, and
  egress on 443 to the service's managed prefix list (or to 0.0.0.0/0);
- a NAT route (0.0.0.0/0 -> NAT gateway) in the route table of every subnet of the function, and egress
  on 443 to 0.0.0.0/0.
A function outside any VPC reaches every public endpoint (Lambda's own network).

The database: a function that logs in through RDS Proxy needs its groups to reach the proxy's groups on
the port it connects to, the proxy's groups to reach the cluster's on the cluster's port, and the proxy
to target that cluster; an owner function needs its groups to reach the cluster's directly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from infra.gate.template import Template, getatt, ref, refs_in

HTTPS = 443
ANYWHERE = "0.0.0.0/0"


@dataclass(frozen=True)
class Rule:
    group: str  # logical id of the security group the rule belongs to
    egress: bool
    protocol: str
    from_port: int | None
    to_port: int | None
    cidr: Any = None  # raw value: "10.0.0.0/16", {"Fn::GetAtt": [vpc, "CidrBlock"]}
    peer_group: str | None = None
    prefix_list: Any = None

    def covers_port(self, port: int) -> bool:
        if self.protocol in ("-1", "all"):
            return True
        if self.protocol not in ("tcp", "6"):
            return False
        return (
            self.from_port is not None and self.to_port is not None and self.from_port <= port <= self.to_port
        )


@dataclass(frozen=True)
class Placement:
    """Where a function (or a proxy, a cluster, an endpoint) sits: its groups and subnets."""

    groups: frozenset[str]
    subnets: frozenset[str]


class Network:
    def __init__(self, template: Template) -> None:
        self.t = template
        self.rules = list(self._rules())

    # --- reading the template --------------------------------------------------------------------

    def _rules(self) -> Iterable[Rule]:
        t = self.t
        for logical, resource in t.of_type("AWS::EC2::SecurityGroup").items():
            props = resource.get("Properties", {})
            for egress, key in ((False, "SecurityGroupIngress"), (True, "SecurityGroupEgress")):
                for rule in props.get(key, []) or []:
                    yield self._rule(logical, egress, rule)
        for kind, egress in (
            ("AWS::EC2::SecurityGroupIngress", False),
            ("AWS::EC2::SecurityGroupEgress", True),
        ):
            for resource in t.of_type(kind).values():
                props = resource.get("Properties", {})
                group = ref(props.get("GroupId"))
                if group is not None:
                    yield self._rule(group, egress, props)

    def _rule(self, group: str, egress: bool, props: dict[str, Any]) -> Rule:
        t = self.t
        peer = props.get("DestinationSecurityGroupId" if egress else "SourceSecurityGroupId")
        return Rule(
            group=group,
            egress=egress,
            protocol=str(props.get("IpProtocol", "")).lower(),
            from_port=t.number(props.get("FromPort")),
            to_port=t.number(props.get("ToPort")),
            cidr=props.get("CidrIp"),
            peer_group=ref(peer),
            prefix_list=props.get("DestinationPrefixListId" if egress else "SourcePrefixListId"),
        )

    def function_placement(self, function: str) -> Placement | None:
        vpc = self.t.props(function).get("VpcConfig")
        if not vpc:
            return None
        return Placement(
            frozenset(filter(None, (ref(g) for g in vpc.get("SecurityGroupIds", [])))),
            frozenset(filter(None, (ref(s) for s in vpc.get("SubnetIds", [])))),
        )

    def subnet_cidr(self, subnet: str) -> str | None:
        value = self.t.props(subnet).get("CidrBlock")
        return value if isinstance(value, str) else None

    def subnet_vpc(self, subnet: str) -> str | None:
        return ref(self.t.props(subnet).get("VpcId"))

    def route_table_of(self, subnet: str) -> str | None:
        for resource in self.t.of_type("AWS::EC2::SubnetRouteTableAssociation").values():
            props = resource.get("Properties", {})
            if ref(props.get("SubnetId")) == subnet:
                return ref(props.get("RouteTableId"))
        return None

    # --- who may talk to whom --------------------------------------------------------------------

    def _cidr_holds(self, cidr: Any, subnets: Iterable[str]) -> bool:
        """Whether a rule's CIDR holds every one of these subnets."""
        subnets = list(subnets)
        if not subnets:
            return False
        target = getatt(cidr)
        if target and target[1] == "CidrBlock" and self.t.type_of(target[0]) == "AWS::EC2::VPC":
            return all(self.subnet_vpc(s) == target[0] for s in subnets)
        if not isinstance(cidr, str):
            return False
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return False
        for subnet in subnets:
            block = self.subnet_cidr(subnet)
            if block is None or not ipaddress.ip_network(block).subnet_of(network):  # type: ignore[arg-type]
                return False
        return True

    def allows(self, source: Placement, target: Placement, port: int) -> bool:
        """Source's groups let it out to the target, and the target's groups let it in, on `port`."""
        out = any(
            r.egress
            and r.group in source.groups
            and r.covers_port(port)
            and (
                (r.peer_group is not None and r.peer_group in target.groups)
                or self._cidr_holds(r.cidr, target.subnets)
            )
            for r in self.rules
        )
        into = any(
            not r.egress
            and r.group in target.groups
            and r.covers_port(port)
            and (
                (r.peer_group is not None and r.peer_group in source.groups)
                or self._cidr_holds(r.cidr, source.subnets)
            )
            for r in self.rules
        )
        return out and into

    def egress_anywhere(self, source: Placement, port: int = HTTPS) -> bool:
        return any(
            r.egress and r.group in source.groups and r.covers_port(port) and r.cidr == ANYWHERE
            for r in self.rules
        )

    def egress_to_prefix_list(self, source: Placement, service: str, port: int = HTTPS) -> bool:
        return any(
            r.egress
            and r.group in source.groups
            and r.covers_port(port)
            and r.prefix_list is not None
            and self.is_managed_prefix_list(r.prefix_list, service)
            for r in self.rules
        )

    def is_managed_prefix_list(self, value: Any, service: str) -> bool:
        """Whether a DestinationPrefixListId is AWS's managed prefix list of `service` in this region: a
        literal id cannot say so offline, a lookup in the template (a custom resource that asks EC2 for
        `com.amazonaws.<region>.<service>`) can."""
        target = ref(value)
        if target is None or not str(self.t.type_of(target)).startswith("Custom::"):
            return False
        text = " ".join(s for s in (self.t.value(v) for v in self.t.props(target).values()) if s is not None)
        region = self.t.region or "${AWS::Region}"
        return "describemanagedprefixlists" in text.lower() and f"com.amazonaws.{region}.{service}" in text

    # --- paths to AWS APIs -----------------------------------------------------------------------

    def endpoints(self, service: str) -> dict[str, dict[str, Any]]:
        found = {}
        for logical, resource in self.t.of_type("AWS::EC2::VPCEndpoint").items():
            name = self.t.value(resource.get("Properties", {}).get("ServiceName"))
            if name is not None and name.rsplit(".", 1)[-1] == service and name.startswith("com.amazonaws."):
                found[logical] = resource.get("Properties", {})
        return found

    def application_placement(self, application: str) -> Placement | None:
        """A Serverless Application Repository app in the VPC (the secret rotation's Lambda): its
        vpcSecurityGroupIds and vpcSubnetIds parameters."""
        params = self.t.props(application).get("Parameters", {})
        groups, subnets = refs_in(params.get("vpcSecurityGroupIds")), refs_in(params.get("vpcSubnetIds"))
        return Placement(frozenset(groups), frozenset(subnets)) if groups else None

    def path_to_service(self, placement: Placement | None, service: str) -> str | None:
        """How code placed there reaches the AWS API `service` (an endpoint service name), or None."""
        if placement is None:
            return "outside the VPC (Lambda's network)"
        for logical, props in self.endpoints(service).items():
            kind = props.get("VpcEndpointType", "Gateway")
            if kind == "Interface" and self._interface_path(placement, props):
                return f"interface endpoint {logical}"
            if kind == "Gateway" and self._gateway_path(placement, props, service):
                return f"gateway endpoint {logical} + prefix-list egress"
        if self._nat_path(placement):
            return "NAT gateway"
        return None

    def _interface_path(self, function: Placement, props: dict[str, Any]) -> bool:
        if props.get("PrivateDnsEnabled") is not True or not self._vpc_resolves_private_dns(props):
            return False
        endpoint = Placement(
            frozenset(filter(None, (ref(g) for g in props.get("SecurityGroupIds", [])))),
            frozenset(filter(None, (ref(s) for s in props.get("SubnetIds", [])))),
        )
        return self.allows(function, endpoint, HTTPS)

    def _vpc_resolves_private_dns(self, props: dict[str, Any]) -> bool:
        vpc = self.t.props(ref(props.get("VpcId")) or "")
        return vpc.get("EnableDnsSupport", True) is True and vpc.get("EnableDnsHostnames") is True

    def _gateway_path(self, function: Placement, props: dict[str, Any], service: str) -> bool:
        tables = {ref(t) for t in props.get("RouteTableIds", [])}
        routed = all(self.route_table_of(subnet) in tables for subnet in function.subnets)
        return routed and (self.egress_to_prefix_list(function, service) or self.egress_anywhere(function))

    def _nat_path(self, function: Placement) -> bool:
        nat_tables = {
            ref(props.get("RouteTableId"))
            for props in (r.get("Properties", {}) for r in self.t.of_type("AWS::EC2::Route").values())
            if props.get("DestinationCidrBlock") == ANYWHERE and ref(props.get("NatGatewayId")) is not None
        }
        routed = bool(function.subnets) and all(
            self.route_table_of(s) in nat_tables for s in function.subnets
        )
        return routed and self.egress_anywhere(function)

    # --- the database ----------------------------------------------------------------------------

    def database_path(self, function: str) -> tuple[str | None, list[str]]:
        """(how the function reaches the database, what is missing). It reaches it through RDS Proxy when
        ENGRAM_DB_HOST names a proxy's endpoint, directly when ENGRAM_DB_SECRET_ARN names a cluster's
        secret."""
        env = self.t.props(function).get("Environment", {}).get("Variables", {})
        placement = self.function_placement(function)
        return self.database_path_from(placement, env)

    def database_path_from(
        self, placement: Placement | None, env: dict[str, Any]
    ) -> tuple[str | None, list[str]]:
        if placement is None:
            return None, ["is not in the VPC, so it cannot reach the database"]
        host = getatt(env.get("ENGRAM_DB_HOST"))
        if host and self.t.type_of(host[0]) == "AWS::RDS::DBProxy":
            return self._through_proxy(host[0], placement, env)
        secret = refs_in(env.get("ENGRAM_DB_SECRET_ARN"))
        clusters = [c for c in self.t.of_type("AWS::RDS::DBCluster") if secret & self._secrets_of_cluster(c)]
        if clusters:
            return self._direct(clusters[0], placement)
        return None, [
            "has neither ENGRAM_DB_HOST (a proxy endpoint) nor ENGRAM_DB_SECRET_ARN (the cluster's secret)"
        ]

    def _secrets_of_cluster(self, cluster: str) -> set[str]:
        secrets = set()
        for logical, resource in self.t.of_type("AWS::SecretsManager::SecretTargetAttachment").items():
            props = resource.get("Properties", {})
            if ref(props.get("TargetId")) == cluster:
                secrets |= {logical, *refs_in(props.get("SecretId"))}
        secrets |= refs_in(self.t.props(cluster).get("MasterUserPassword"))
        return secrets

    def cluster_placement(self, cluster: str) -> Placement:
        props = self.t.props(cluster)
        subnets: set[str] = set()
        group = self.t.props(ref(props.get("DBSubnetGroupName")) or "")
        subnets |= {s for s in (ref(v) for v in group.get("SubnetIds", [])) if s}
        return Placement(
            frozenset(filter(None, (ref(g) for g in props.get("VpcSecurityGroupIds", [])))),
            frozenset(subnets),
        )

    def _through_proxy(
        self, proxy: str, function: Placement, env: dict[str, Any]
    ) -> tuple[str | None, list[str]]:
        props = self.t.props(proxy)
        proxy_at = Placement(
            frozenset(filter(None, (ref(g) for g in props.get("VpcSecurityGroupIds", [])))),
            frozenset(filter(None, (ref(s) for s in props.get("VpcSubnetIds", [])))),
        )
        port = self.t.number(env.get("ENGRAM_DB_PORT")) or 5432
        missing = []
        if not self.allows(function, proxy_at, port):
            missing.append(f"its security groups do not reach the proxy {proxy}'s on {port}")
        targets = [
            c
            for r in self.t.of_type("AWS::RDS::DBProxyTargetGroup").values()
            if ref(r.get("Properties", {}).get("DBProxyName")) == proxy
            for c in (ref(v) for v in r.get("Properties", {}).get("DBClusterIdentifiers", []))
            if c
        ]
        if not targets:
            missing.append(f"the proxy {proxy} targets no cluster")
        for cluster in targets:
            cluster_port = self.t.number(self.t.props(cluster).get("Port")) or 5432
            if cluster_port != port:
                missing.append(f"it connects on {port} but the cluster {cluster} listens on {cluster_port}")
            if not self.allows(proxy_at, self.cluster_placement(cluster), cluster_port):
                missing.append(
                    f"the proxy's security groups do not reach the cluster {cluster}'s on {cluster_port}"
                )
        return (None if missing else f"RDS Proxy {proxy} -> {', '.join(targets)}"), missing

    def _direct(self, cluster: str, function: Placement) -> tuple[str | None, list[str]]:
        port = self.t.number(self.t.props(cluster).get("Port")) or 5432
        if self.allows(function, self.cluster_placement(cluster), port):
            return f"cluster {cluster} directly", []
        return None, [f"its security groups do not reach the cluster {cluster}'s on {port}"]
