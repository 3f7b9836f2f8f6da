"""`engram preflight --region R`: what a deploy of the stack needs from the account, asked before
`cdk deploy` spends 20 minutes finding out (needs credentials for the account; reads only).

- the Aurora PostgreSQL engine version the stack pins can be created as Serverless v2 in the region;
- the Bedrock models are usable: Titan Text Embeddings v2, and the LLM (its inference profile exists,
  and its model is available, authorized and its agreement accepted);
- each interface endpoint service exists in the availability zones the VPC will use;
- API Gateway has its account-level CloudWatch role (the stage logs need it; else deploy with
  -c api_cloudwatch_role=true);
- quotas: a free VPC, a free Aurora cluster and instance, and Lambda concurrency for the functions.

The clients are passed in (`Clients`), so the tests drive it with botocore's Stubber.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from engram.providers import bedrock_profiles
from engram.settings import BEDROCK_EMBEDDING_MODEL

Outcome = Literal["ok", "warn", "fail"]
# The stack's default interface endpoints (infra/config.py takes them from here).
# textract: OCR of scanned PDF pages and images (drop it to save ~$15/month; OCR then fails ocr_unavailable)
DEFAULT_INTERFACE_ENDPOINTS = ("secretsmanager", "states", "bedrock-runtime", "textract")
LAMBDA_CONCURRENCY_NEEDED = 100  # below it, API calls are throttled as soon as a few run at once
VPC_QUOTA = ("vpc", "L-F678F1CE")
LAMBDA_CONCURRENCY_QUOTA = ("lambda", "L-B99A9384")


@dataclass(frozen=True)
class Finding:
    check: str
    outcome: Outcome
    detail: str


@dataclass(frozen=True)
class Plan:
    """What the stack will ask for (infra prints it for the region: `python -m infra.choices`)."""

    region: str
    engine_version: str  # "16.13", or a major ("16"): the newest minor the region offers is reported
    llm_model: str | None  # the inference profile (or model id) the LLM functions call; None: heuristic
    interface_endpoints: tuple[str, ...]
    max_azs: int = 2


@dataclass(frozen=True)
class Clients:
    rds: Any
    bedrock: Any
    ec2: Any
    apigateway: Any
    quotas: Any

    @classmethod
    def for_region(cls, region: str, session: Any = None) -> Clients:
        import boto3

        make: Callable[..., Any] = (session or boto3.Session(region_name=region)).client
        return cls(
            rds=make("rds", region_name=region),
            bedrock=make("bedrock", region_name=region),
            ec2=make("ec2", region_name=region),
            apigateway=make("apigateway", region_name=region),
            quotas=make("service-quotas", region_name=region),
        )


def run(plan: Plan, clients: Clients) -> list[Finding]:
    findings = [engine_version(plan, clients.rds), *models(plan, clients.bedrock)]
    findings += endpoints(plan, clients.ec2)
    findings.append(api_gateway_logging(clients.apigateway))
    findings += quotas(clients)
    return findings


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(exc).__name__))


def engine_version(plan: Plan, rds: Any) -> Finding:
    check = f"Aurora PostgreSQL {plan.engine_version} (Serverless v2)"
    if "." not in plan.engine_version:  # a major: which minors can be created?
        options = rds.describe_orderable_db_instance_options(
            Engine="aurora-postgresql", DBInstanceClass="db.serverless"
        ).get("OrderableDBInstanceOptions", [])
        versions = sorted(
            {o["EngineVersion"] for o in options if o["EngineVersion"].split(".")[0] == plan.engine_version},
            key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()),
        )
        if versions:
            return Finding(check, "ok", f"newest offered in {plan.region}: {versions[-1]}")
        return Finding(check, "fail", f"no {plan.engine_version}.x offered in {plan.region}")
    options = rds.describe_orderable_db_instance_options(
        Engine="aurora-postgresql", EngineVersion=plan.engine_version, DBInstanceClass="db.serverless"
    ).get("OrderableDBInstanceOptions", [])
    if options:
        return Finding(check, "ok", f"can be created in {plan.region}")
    return Finding(
        check,
        "fail",
        f"not offered in {plan.region} (retired or not yet there): deploy with -c engine_version=<a version "
        "`aws rds describe-db-engine-versions --engine aurora-postgresql` lists>",
    )


def models(plan: Plan, bedrock: Any) -> list[Finding]:
    findings = [_model("embeddings", BEDROCK_EMBEDDING_MODEL, bedrock)]
    if plan.llm_model is None:
        findings.append(Finding("LLM", "warn", "none: the pipeline uses the offline heuristic extractor"))
        return findings
    geo, bare = bedrock_profiles.split_profile(plan.llm_model)
    if geo is not None:
        try:
            bedrock.get_inference_profile(inferenceProfileIdentifier=plan.llm_model)
            findings.append(Finding(f"LLM profile {plan.llm_model}", "ok", "exists in the region"))
        except Exception as exc:
            findings.append(
                Finding(
                    f"LLM profile {plan.llm_model}",
                    "fail",
                    f"{_error_code(exc)}: set -c llm_model= to a profile this region offers "
                    "(aws bedrock list-inference-profiles), or -c llm_provider=none",
                )
            )
    findings.append(_model("LLM", bare, bedrock))
    return findings


def _model(what: str, model: str, bedrock: Any) -> Finding:
    check = f"{what} model {model}"
    try:
        found = bedrock.get_foundation_model_availability(modelId=model)
    except Exception as exc:
        return Finding(check, "fail", f"{_error_code(exc)}: the model is not offered here")
    problems = []
    if found["regionAvailability"] != "AVAILABLE":
        problems.append("not available in this region")
    if found["authorizationStatus"] != "AUTHORIZED":
        problems.append("not authorized for this account (IAM or SCP)")
    if found["entitlementAvailability"] != "AVAILABLE":
        problems.append("no entitlement: enable it in the Bedrock console (model access)")
    if found["agreementAvailability"]["status"] != "AVAILABLE":
        problems.append("its agreement is not accepted: open it once in the Bedrock console")
    return Finding(check, "fail" if problems else "ok", "; ".join(problems) or "usable")


def endpoints(plan: Plan, ec2: Any) -> list[Finding]:
    zones = sorted(
        z["ZoneName"]
        for z in ec2.describe_availability_zones(
            Filters=[
                {"Name": "zone-type", "Values": ["availability-zone"]},
                {"Name": "state", "Values": ["available"]},
            ]
        )["AvailabilityZones"]
    )[: plan.max_azs]
    names = [f"com.amazonaws.{plan.region}.{service}" for service in plan.interface_endpoints]
    details = {
        d["ServiceName"]: set(d.get("AvailabilityZones", []))
        for d in ec2.describe_vpc_endpoint_services(ServiceNames=names).get("ServiceDetails", [])
    }
    findings = []
    for service, name in zip(plan.interface_endpoints, names, strict=True):
        missing = sorted(set(zones) - details.get(name, set()))
        check = f"interface endpoint {service}"
        if name not in details:
            findings.append(Finding(check, "fail", f"{name} does not exist in {plan.region}"))
        elif missing:
            findings.append(
                Finding(check, "fail", f"not offered in {', '.join(missing)} (the VPC uses {zones})")
            )
        else:
            findings.append(Finding(check, "ok", f"in {', '.join(zones)}"))
    return findings


def api_gateway_logging(apigateway: Any) -> Finding:
    check = "API Gateway CloudWatch role"
    if apigateway.get_account().get("cloudwatchRoleArn"):
        return Finding(check, "ok", "set for the account and region")
    return Finding(
        check,
        "fail",
        "none: the stage's logs need it; deploy once with -c api_cloudwatch_role=true (kept on destroy)",
    )


def quotas(clients: Clients) -> list[Finding]:
    findings = []
    attributes = clients.rds.describe_account_attributes()["AccountQuotas"]
    for quota in attributes:
        if quota["AccountQuotaName"] in ("DBClusters", "DBInstances"):
            free = quota["Max"] - quota["Used"]
            outcome: Outcome = "ok" if free >= 1 else "fail"
            findings.append(
                Finding(
                    f"quota {quota['AccountQuotaName']}", outcome, f"{quota['Used']} of {quota['Max']} used"
                )
            )
    vpcs = len(clients.ec2.describe_vpcs().get("Vpcs", []))
    vpc_quota = _quota(clients.quotas, *VPC_QUOTA)
    if vpc_quota is not None:
        outcome = "ok" if vpcs < vpc_quota else "fail"
        findings.append(Finding("quota VPCs", outcome, f"{vpcs} of {vpc_quota:.0f} used; the stack adds one"))
    concurrency = _quota(clients.quotas, *LAMBDA_CONCURRENCY_QUOTA)
    if concurrency is not None:
        outcome = "ok" if concurrency >= LAMBDA_CONCURRENCY_NEEDED else "warn"
        detail = f"{concurrency:.0f} concurrent executions"
        if outcome == "warn":
            detail += (
                f": ask for at least {LAMBDA_CONCURRENCY_NEEDED} (Service Quotas), or calls get throttled"
            )
        findings.append(Finding("quota Lambda concurrency", outcome, detail))
    return findings


def _quota(client: Any, service: str, code: str) -> float | None:
    try:
        return float(client.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"])
    except Exception:
        return None


def report(findings: Iterable[Finding]) -> tuple[str, bool]:
    """(the table to print, whether the deploy may go ahead)."""
    lines, ok = [], True
    for finding in findings:
        ok = ok and finding.outcome != "fail"
        lines.append(f"{finding.outcome.upper():<5} {finding.check}: {finding.detail}")
    return "\n".join(lines), ok
