"""The deploy gate's assertions over one synthesized template (read as data). Each check returns the
problems it finds, as sentences a reviewer can act on; an empty list is a pass."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from engram.providers import bedrock_profiles
from engram.providers.llm import MAX_DELAY_S
from engram.settings import Settings
from infra.aws_services import IAM_PREFIX, ServiceUse, endpoint_service
from infra.gate.clients import FunctionCode
from infra.gate.graphs import circles
from infra.gate.reachability import Network
from infra.gate.template import Template, getatt, ref, refs_in, strings_in
from infra.s3_access import NOT_CALLED, OPERATION_ACTIONS, operation_actions

MAX_RESOURCES = 400  # CloudFormation allows 500
MAX_UNZIPPED_BYTES = 250 * 1024 * 1024  # Lambda: a function's code and all its layers, unzipped
MAX_TEMPLATE_BYTES = 700_000  # CloudFormation allows 1,000,000 (the body CDK uploads)
DB_APP_ENTRY = "engram.db.connect.app_database"
DB_OWNER_ENTRY = "engram.db.connect.master_conninfo_factory"
# Regions a template may name besides its own, and why.
FOREIGN_REGION_ALLOWED = {
    # The rotation function's Serverless Application Repository app is published from us-east-1 for
    # every commercial region (CDK's SecretRotationApplication).
    "arn:aws:serverlessrepo:us-east-1:297356227824:applications/",
}
_REGION = re.compile(
    r"\b(?:us|eu|ap|sa|ca|me|af|il|mx)-(?:north|south|east|west|central|northeast|southeast)-\d\b"
)
_PROFILE = re.compile(
    r"\b([a-z]{2,4}(?:-gov)?)\.((?:anthropic|amazon|meta|mistral|cohere|deepseek|writer)\.[\w.:-]+)"
)

Check = Callable[..., list[str]]


def budgets(
    t: Template, max_resources: int = MAX_RESOURCES, max_bytes: int = MAX_TEMPLATE_BYTES
) -> list[str]:
    problems = []
    if len(t.resources) > max_resources:
        problems.append(
            f"{len(t.resources)} resources: the budget is {max_resources} (CloudFormation's limit 500)"
        )
    if t.size > max_bytes:
        problems.append(
            f"{t.size / 1000:.0f} KB: the budget is {max_bytes / 1000:.0f} KB (CloudFormation's 1 MB)"
        )
    return problems


def lambda_sizes(t: Template, limit: int = MAX_UNZIPPED_BYTES) -> tuple[list[str], dict[str, int]]:
    """Per function: its code and every layer it uses, unzipped, from the assets the template names
    (`aws:asset:path`, synthesized with --no-staging so they are the build's own folders)."""
    from pathlib import Path

    from infra.build import REPO, unzipped_size

    problems: list[str] = []
    sizes: dict[str, int] = {}
    for logical, resource in t.of_type("AWS::Lambda::Function").items():
        code = (resource.get("Metadata") or {}).get("aws:asset:path")
        if code is None or (not Path(code).exists() and not Path(code).resolve().is_relative_to(REPO)):
            continue  # inline code, or CDK's own small providers (staged in a temporary folder, gone)
        parts = [code]
        for layer in resource.get("Properties", {}).get("Layers", []):
            path = (t.resources.get(ref(layer) or "", {}).get("Metadata") or {}).get("aws:asset:path")
            if path is None:
                problems.append(f"{logical}: cannot tell the size of layer {layer}")
            else:
                parts.append(path)
        missing = [p for p in parts if not Path(p).is_dir()]
        if missing:
            problems.append(f"{logical}: assets not built: {', '.join(missing)}")
            continue
        sizes[logical] = unzipped_size(*(Path(p) for p in parts))
        if sizes[logical] > limit:
            problems.append(
                f"{logical}: {sizes[logical] / 2**20:.1f} MiB unzipped with its layers; Lambda allows "
                f"{limit / 2**20:.0f} MiB"
            )
    return problems, sizes


def no_suppression_metadata(t: Template) -> list[str]:
    """cdk-nag acknowledgements stay in the code (infra/nag.py), not in the template's bytes."""
    found = [k for k, r in t.resources.items() if "cdk_nag" in (r.get("Metadata") or {})]
    return [f"{len(found)} resources carry cdk_nag suppression metadata (first: {found[0]})"] if found else []


def no_test_invoke_permissions(t: Template) -> list[str]:
    found = [
        k
        for k, r in t.of_type("AWS::Lambda::Permission").items()
        if any("test-invoke-stage" in s for s in strings_in(r.get("Properties", {}).get("SourceArn")))
    ]
    return (
        [f"{len(found)} Lambda permissions for the console's test-invoke (first: {found[0]})"]
        if found
        else []
    )


def api_gateway_account(t: Template, opted_in: bool) -> list[str]:
    """The region-wide API Gateway account setting is created only on opt-in, and never deleted."""
    problems = []
    for logical, resource in t.of_type("AWS::ApiGateway::Account").items():
        if not opted_in:
            problems.append(f"{logical}: the account-level API Gateway setting without the opt-in context")
        role = ref(resource.get("Properties", {}).get("CloudWatchRoleArn"))
        for name in filter(None, (logical, role)):
            policy = t.resources.get(name, {})
            if policy.get("DeletionPolicy") != "Retain" or policy.get("UpdateReplacePolicy") != "Retain":
                problems.append(
                    f"{name}: account-level, so it must be kept on delete (DeletionPolicy Retain)"
                )
    return problems


def engine_version(t: Template, expected: str) -> list[str]:
    problems = []
    for logical, resource in t.of_type("AWS::RDS::DBCluster").items():
        version = resource.get("Properties", {}).get("EngineVersion")
        if version != expected:
            problems.append(f"{logical}: engine version {version}, expected {expected}")
    return problems


def trigger_timeouts(t: Template) -> list[str]:
    """A deploy-time Trigger waits at least as long as its function may run, and its provider as long."""
    problems = []
    for logical, resource in t.of_type("Custom::Trigger").items():
        props = resource.get("Properties", {})
        waits = int(props.get("Timeout", 120_000)) / 1000
        function = _function_of(t, props.get("HandlerArn"))
        runs = t.props(function or "").get("Timeout", 3)
        if function is None:
            problems.append(f"{logical}: cannot tell which function it runs")
        elif waits < runs:
            problems.append(f"{logical}: waits {waits:.0f} s for {function}, which may run {runs} s")
        provider = (getatt(props.get("ServiceToken")) or ("", ""))[0]
        provider_timeout = t.props(provider).get("Timeout", 3)
        if provider and provider_timeout < waits:
            problems.append(
                f"{logical}: its provider {provider} stops after {provider_timeout} s, before {waits:.0f} s"
            )
    return problems


def _function_of(t: Template, value: Any) -> str | None:
    """The function behind a function, version or alias reference."""
    target = ref(value)
    kind = t.type_of(target)
    if kind == "AWS::Lambda::Function":
        return target
    if kind in ("AWS::Lambda::Version", "AWS::Lambda::Alias"):
        return _function_of(t, t.props(target or "").get("FunctionName"))
    return None


def _alarmed_queues(t: Template) -> set[str]:
    queues = set()
    for resource in t.of_type("AWS::CloudWatch::Alarm").values():
        props = resource.get("Properties", {})
        metrics = [props] + [m.get("MetricStat", {}).get("Metric", {}) for m in props.get("Metrics", [])]
        for metric in metrics:
            if (
                metric.get("Namespace") == "AWS/SQS"
                and metric.get("MetricName") == "ApproximateNumberOfMessagesVisible"
            ):
                for dimension in metric.get("Dimensions", []):
                    if dimension.get("Name") == "QueueName":
                        queues |= refs_in(dimension.get("Value"))
    return queues


def async_failures_kept(t: Template) -> list[str]:
    """Every function invoked asynchronously (EventBridge rules, S3 or SNS notifications) sends the events
    it finally fails on somewhere (a DLQ or an on-failure destination), every EventBridge target sends
    what it cannot deliver to a DLQ, and an alarm watches each such queue's depth."""
    problems = []
    alarmed = _alarmed_queues(t)
    async_functions: dict[str, str] = {}
    for logical, resource in t.of_type("AWS::Events::Rule").items():
        for target in resource.get("Properties", {}).get("Targets", []):
            function = _function_of(t, target.get("Arn"))
            if function is None:
                continue
            async_functions.setdefault(function, f"rule {logical}")
            dlq = ref((target.get("DeadLetterConfig") or {}).get("Arn"))
            if dlq is None:
                problems.append(f"rule {logical}: its target {function} has no dead-letter queue")
            elif dlq not in alarmed:
                problems.append(f"rule {logical}: no alarm on the depth of its dead-letter queue {dlq}")
    for resource in t.of_type("AWS::Lambda::Permission").values():
        props = resource.get("Properties", {})
        if props.get("Principal") in ("s3.amazonaws.com", "sns.amazonaws.com"):
            function = _function_of(t, props.get("FunctionName"))
            if function:
                async_functions.setdefault(function, str(props.get("Principal")))
    configs = {
        _function_of(t, r.get("Properties", {}).get("FunctionName")): r.get("Properties", {})
        for r in t.of_type("AWS::Lambda::EventInvokeConfig").values()
    }
    for function, source in sorted(async_functions.items()):
        on_failure = ref(
            ((configs.get(function) or {}).get("DestinationConfig") or {})
            .get("OnFailure", {})
            .get("Destination")
        )
        dead_letter = ref((t.props(function).get("DeadLetterConfig") or {}).get("TargetArn"))
        kept = on_failure or dead_letter
        if kept is None:
            problems.append(
                f"{function} (invoked by {source}): no on-failure destination or DLQ: "
                "failed events are dropped"
            )
        elif t.type_of(kept) == "AWS::SQS::Queue" and kept not in alarmed:
            problems.append(f"{function}: no alarm on the depth of its failure queue {kept}")
    return problems


def region_correctness(t: Template, region: str) -> list[str]:
    """Nothing names another region (but the allowed), every Bedrock inference profile serves this region,
    and each function's LLM model is the one its IAM grant names."""
    problems = []
    for text in sorted(set(strings_in(t.resources))):
        if any(text.startswith(allowed) for allowed in FOREIGN_REGION_ALLOWED):
            continue
        for other in set(_REGION.findall(text)) - {region}:
            problems.append(f"names {other} in {text[:120]!r}")
        for geo, model in _PROFILE.findall(text):
            profile = f"{geo}.{model}"
            if (
                bedrock_profiles.split_profile(profile)[0]
                and bedrock_profiles.serves(profile, region) is False
            ):
                problems.append(f"inference profile {profile} does not take requests from {region}")
    return problems


def llm_matches_grant(t: Template, region: str) -> list[str]:
    """A function with ENGRAM_LLM_PROVIDER=bedrock calls ENGRAM_LLM_MODEL, which is a profile that serves
    the region, and its role may invoke exactly that profile (and its model in the profile's regions)."""
    problems = []
    for logical, resource in t.of_type("AWS::Lambda::Function").items():
        env = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
        if env.get("ENGRAM_LLM_PROVIDER", Settings.model_fields["llm_provider"].default) != "bedrock":
            continue
        model = env.get("ENGRAM_LLM_MODEL")
        if not isinstance(model, str):
            problems.append(f"{logical}: the LLM is bedrock but ENGRAM_LLM_MODEL is not set")
            continue
        if bedrock_profiles.serves(model, region) is False or (
            bedrock_profiles.split_profile(model)[0] is None and bedrock_profiles.regions_served(model)
        ):
            problems.append(f"{logical}: {model} is not an inference profile that serves {region}")
        resources = " ".join(
            t.value(r) or ""
            for statement in _statements(t, logical)
            if "bedrock:InvokeModel" in _actions(statement)
            for r in _list(statement.get("Resource"))
        )
        if f"inference-profile/{model}" not in resources:
            problems.append(f"{logical}: calls {model} but its role may not invoke that inference profile")
        bare = bedrock_profiles.split_profile(model)[1]
        if f"foundation-model/{bare}" not in resources:
            problems.append(f"{logical}: its role may not invoke {bare} where the profile routes requests")
    return problems


def rotation_after_migration(t: Template) -> list[str]:
    """The master secret's rotation is set up only after the deploy-time migration has run, so its first
    rotation cannot change the password under the migration."""
    triggers = set(t.of_type("Custom::Trigger"))
    problems = []
    for logical in t.of_type("AWS::SecretsManager::RotationSchedule"):
        if triggers and not triggers <= depends_on(t, logical):
            problems.append(f"{logical}: may be created (and rotate the secret) while the migration runs")
    return problems


def llm_calls_fit(t: Template) -> list[str]:
    """A function that calls the LLM waits for its calls to their end: every attempt timing out, with the
    longest wait between them (engram.providers.llm.MAX_DELAY_S), ends within its timeout. Otherwise a
    slow or throttled model ends the function itself (API Gateway's 502, a step's timeout) instead of
    a clear, retryable error."""
    defaults = Settings.model_fields
    problems = []
    for logical, resource in sorted(t.of_type("AWS::Lambda::Function").items()):
        props = resource.get("Properties", {})
        env = props.get("Environment", {}).get("Variables", {})
        if "ENGRAM_LLM_PROVIDER" not in env:
            continue
        call = float(env.get("ENGRAM_LLM_TIMEOUT_SECONDS", defaults["llm_timeout_seconds"].default))
        attempts = int(env.get("ENGRAM_LLM_MAX_ATTEMPTS", defaults["llm_max_attempts"].default))
        worst = call * attempts + (attempts - 1) * MAX_DELAY_S
        timeout = int(props.get("Timeout", 3))
        if worst > timeout:
            problems.append(
                f"{logical}: its LLM calls may take {worst:g} s ({attempts} x {call:g} s, and the waits "
                f"between them), beyond its {timeout} s timeout"
            )
    return problems


def functions_after_migration(t: Template, functions: Mapping[str, str]) -> list[str]:
    """Every function (name -> logical id) but the one a deploy-time Trigger runs waits for that Trigger:
    on a first deploy nothing (a schedule, an API call, an S3 event) may run before the schema exists,
    and on an update new code does not serve before its migrations have run."""
    problems = []
    for trigger, resource in t.of_type("Custom::Trigger").items():
        runs = _function_of(t, resource.get("Properties", {}).get("HandlerArn"))
        for name, logical in sorted(functions.items()):
            if logical != runs and trigger not in depends_on(t, logical):
                problems.append(f"{name}: may serve before the deploy-time migration ({trigger}) has run")
    return problems


def depends_on(t: Template, logical: str) -> set[str]:
    """Everything a resource waits for: DependsOn and references, transitively."""
    seen: set[str] = set()
    todo = [logical]
    while todo:
        for name in waits_for(t, todo.pop()) - seen:
            seen.add(name)
            todo.append(name)
    return seen


def waits_for(t: Template, logical: str) -> set[str]:
    """The resources CloudFormation creates before this one: its DependsOn, and those its properties
    name (Ref, Fn::GetAtt, and ${Name} in an Fn::Sub)."""
    resource = t.resources.get(logical, {})
    direct = resource.get("DependsOn", [])
    named = ({direct} if isinstance(direct, str) else set(direct)) | refs_in(resource.get("Properties"))
    for text in strings_in(_subs(resource.get("Properties"))):
        named |= {m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text)}
    return named & set(t.resources)


def _subs(value: Any) -> list[Any]:
    """The template strings of every Fn::Sub inside a value."""
    if isinstance(value, dict):
        found = [v[0] if isinstance(v, list) else v for k, v in value.items() if k == "Fn::Sub"]
        return found + [s for inner in value.values() for s in _subs(inner)]
    if isinstance(value, list):
        return [s for inner in value for s in _subs(inner)]
    return []


def dependency_cycles(t: Template) -> list[str]:
    """Resources that wait for each other in a circle: CloudFormation refuses such a template ("Circular
    dependency between resources") before it creates anything, and cfn-lint does not see it through
    the SAM transform. Each strongly connected group of the waits-for graph is one problem."""
    graph = {name: waits_for(t, name) for name in t.resources}
    return sorted(
        f"{', '.join(group)} wait for each other in a circle: CloudFormation refuses the template"
        for group in circles(graph)
    )


def _statements(t: Template, function: str) -> list[dict[str, Any]]:
    role = ref(t.props(function).get("Role"))
    return [
        statement
        for policy in t.of_type("AWS::IAM::Policy").values()
        if role in {ref(r) for r in policy.get("Properties", {}).get("Roles", [])}
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Effect", "Allow") == "Allow"
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    return set(_list(statement.get("Action")))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# --- least privilege by declaration: no function's role grants what it does not declare -----------

# A login token is signed locally (no request), but RDS Proxy checks it against rds-db:connect.
SIGNED_TOKENS = frozenset({"rds"})
# What Lambda itself does with a function's role: write its logs, manage its network interfaces.
LAMBDA_MANAGED_POLICIES = ("AWSLambdaBasicExecutionRole", "AWSLambdaVPCAccessExecutionRole")
XRAY_TRACING = frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"})


def needs_grant(use: ServiceUse) -> bool:
    return use.calls or use.service in SIGNED_TOKENS


def grants_within_declarations(
    t: Template, functions: Mapping[str, str], declared: Mapping[str, Iterable[ServiceUse]]
) -> list[str]:
    """The converse of the grants the reachability check asks for: a function's role grants no AWS
    service that infra/aws_services.py does not declare for the function, and no managed policy but
    Lambda's own two. Allowed besides: what Lambda does with the role, X-Ray under active tracing and SQS
    on the function's own on-failure destination. With roles shared by several functions, this holds
    for each of them."""
    destinations = {
        _function_of(t, props.get("FunctionName")): ref(
            ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        )
        for props in (r.get("Properties", {}) for r in t.of_type("AWS::Lambda::EventInvokeConfig").values())
    }
    problems = []
    for name, logical in sorted(functions.items()):
        allowed = {
            IAM_PREFIX.get(u.service, u.service + ":") for u in declared.get(name, ()) if needs_grant(u)
        }
        traced = (t.props(logical).get("TracingConfig") or {}).get("Mode") == "Active"
        queue = destinations.get(logical)
        beyond: set[str] = set()
        for statement in _statements(t, logical):
            for action in _actions(statement):
                if any(action.startswith(prefix) for prefix in allowed):
                    continue
                if traced and action in XRAY_TRACING:
                    continue
                if action.startswith("sqs:") and queue and refs_in(statement.get("Resource")) == {queue}:
                    continue
                beyond.add(action)
        if beyond:
            problems.append(
                f"{name}: its role grants {', '.join(sorted(beyond))}, which infra/aws_services.py does not "
                "declare for it"
            )
        role = ref(t.props(logical).get("Role"))
        for arn in t.props(role or "").get("ManagedPolicyArns", []):
            text = t.value(arn) or str(arn)
            if not any(text.endswith(f"service-role/{policy}") for policy in LAMBDA_MANAGED_POLICIES):
                problems.append(f"{name}: its role has the managed policy {text}")
    return problems


# --- S3: exact actions, never object lock ---------------------------------------------------------

# Object lock: what could pin objects past their lifecycle (legal hold, retention), lift a retention
# (bypass governance) or change the bucket's lock. No function calls any of them, nor reads them.
OBJECT_LOCK_ACTIONS = (
    "s3:PutObjectLegalHold",
    "s3:PutObjectRetention",
    "s3:BypassGovernanceRetention",
    "s3:PutBucketObjectLockConfiguration",
    "s3:GetObjectLegalHold",
    "s3:GetObjectRetention",
    "s3:GetBucketObjectLockConfiguration",
)
_POLICY_TYPES = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role")


def _role_statements(t: Template) -> Iterator[tuple[str, dict[str, Any]]]:
    """(resource, statement) for every Allow statement of an identity policy: a policy, a managed
    policy, or a role's inline policies."""
    for logical, resource in t.of_type(*_POLICY_TYPES).items():
        props = resource.get("Properties", {})
        documents = [props.get("PolicyDocument")] + [
            p.get("PolicyDocument") for p in props.get("Policies", [])
        ]
        for document in filter(None, documents):
            for statement in _list(document.get("Statement", [])):
                if statement.get("Effect", "Allow") == "Allow":
                    yield logical, statement


def _covers(pattern: str, action: str) -> bool:
    """Whether an IAM action pattern (wildcards, any case) grants the action."""
    return fnmatchcase(action.lower(), str(pattern).lower())


def no_object_lock_or_s3_wildcard(t: Template) -> list[str]:
    """No role may be granted S3's object-lock actions (by name or by a wildcard such as
    `s3:PutObject*`, which CDK's grant_write hands out), `s3:*`, `*`, or an Allow with NotAction.
    Identity policies only: the buckets' own policies deny plain HTTP, and in a disposable stage let
    CDK's auto-delete provider list and delete objects (its `s3:GetBucket*` reads the lock setting)."""
    problems = []
    for logical, statement in _role_statements(t):
        if "NotAction" in statement:
            problems.append(f"{logical}: allows every action but {statement['NotAction']} (NotAction)")
        for action in sorted(_actions(statement), key=str):
            if str(action) == "*":
                problems.append(f"{logical}: grants *: every action, S3's object lock too")
                continue
            if str(action).lower() == "s3:*":
                problems.append(f"{logical}: grants {action}: every S3 action, object lock too")
                continue
            locks = [lock for lock in OBJECT_LOCK_ACTIONS if _covers(action, lock)]
            if locks:
                problems.append(f"{logical}: grants {action}, which is object lock ({', '.join(locks)})")
    return problems


def s3_actions_needed(name: str, found: FunctionCode) -> tuple[dict[str, str], list[str]]:
    """The S3 actions a function's code needs (action -> the operation and where its code names it),
    and the problems: operations with no IAM mapping, NOT_CALLED entries its code does not name."""
    unused = NOT_CALLED.get(name, {})
    needed: dict[str, str] = {}
    problems = []
    for site in found.s3_calls:
        if site.operation in unused:
            continue
        if site.operation not in OPERATION_ACTIONS:
            problems.append(
                f"{name}: its code calls S3 {site.operation} ({site.where}), which infra/s3_access.py "
                "does not map to IAM actions"
            )
            continue
        for action in operation_actions(site.operation, found.s3_mentions):
            needed.setdefault(action, f"{site.operation}, {site.where}")
    for operation in sorted(set(unused) - {site.operation for site in found.s3_calls}):
        problems.append(f"{name}: NOT_CALLED lists S3 {operation}, which its code does not name")
    return needed, problems


def s3_actions_match_code(
    t: Template, functions: Mapping[str, str], code: Mapping[str, FunctionCode]
) -> list[str]:
    """Each function's role holds every S3 action its code's S3 operations need (infra/s3_access.py
    says which), and no other S3 action, nor a wildcard; operations its code names but never runs are
    listed there (NOT_CALLED)."""
    problems = []
    for name, logical in sorted(functions.items()):
        needed, unmapped = s3_actions_needed(name, code[name])
        problems += unmapped
        held = {
            str(a) for st in _statements(t, logical) for a in _actions(st) if str(a).lower().startswith("s3:")
        }
        for action, why in sorted(needed.items()):
            if not any(_covers(pattern, action) for pattern in held):
                problems.append(f"{name}: its code calls S3 ({why}), which needs {action}: its role lacks it")
        for pattern in sorted(held):
            if "*" in pattern or "?" in pattern:
                problems.append(
                    f"{name}: its role grants {pattern}: a wildcard, where its code needs exact actions"
                )
            elif not any(_covers(pattern, action) for action in needed):
                problems.append(f"{name}: its role grants {pattern}, which no S3 call of its code needs")
    return problems


# --- reachability: per function, what its code calls and how it gets there ------------------------


def _grants(t: Template, function: str, service: str) -> bool:
    prefix = IAM_PREFIX.get(service, service + ":")
    return any(a.startswith(prefix) or a == "*" for s in _statements(t, function) for a in _actions(s))


def setting_active(use: ServiceUse, env: Mapping[str, Any]) -> bool:
    for setting, values in (use.when or {}).items():
        raw = env.get(f"ENGRAM_{setting.upper()}", Settings.model_fields[setting].default)
        if str(raw) not in values:
            return False
    return True


def reachability(
    t: Template,
    functions: Mapping[str, str],
    declared: Mapping[str, Iterable[ServiceUse]],
    code: Mapping[str, FunctionCode],
) -> tuple[list[str], dict[str, list[str]]]:
    """functions: function name ("pipeline/extract") -> logical id. Returns (problems, paths found)."""
    network = Network(t)
    problems: list[str] = []
    paths: dict[str, list[str]] = {}
    for name, logical in sorted(functions.items()):
        uses = list(declared.get(name, ()))
        env = t.props(logical).get("Environment", {}).get("Variables", {})
        found = code[name]
        declared_services = {u.service for u in uses}
        for site in found.clients:
            if site.service not in declared_services:
                problems.append(
                    f"{name}: its code creates a {site.service} client ({site.where}, {site.function}) that "
                    "infra/aws_services.py does not declare for it"
                )
        for use in uses:
            if use.service not in found.services:
                problems.append(
                    f"{name}: declares {use.service} ({use.why}) but its code creates no such client"
                )
        placement = network.function_placement(logical)
        lines = paths.setdefault(name, [])
        for use in uses:
            if use.service in SIGNED_TOKENS and not _grants(t, logical, use.service):
                problems.append(
                    f"{name}: {use.why}, but its role grants no {IAM_PREFIX[use.service]}* action"
                )
            if not use.calls or not setting_active(use, env):
                continue
            path = network.path_to_service(placement, endpoint_service(use.service))
            if path is None:
                problems.append(f"{name}: no network path to {use.service} ({use.why})")
            elif f"{use.service}: {path}" not in lines:
                lines.append(f"{use.service}: {path}")
            if not _grants(t, logical, use.service):
                prefix = IAM_PREFIX.get(use.service, use.service + ":")
                problems.append(
                    f"{name}: calls {use.service} ({use.why}) but its role grants no {prefix}* action"
                )
        if found.reaches(DB_APP_ENTRY) or found.reaches(DB_OWNER_ENTRY):
            how, missing = network.database_path(logical)
            problems += [f"{name}: database: {m}" for m in missing]
            if how:
                lines.append(f"database: {how}")
                owner = bool(refs_in(env.get("ENGRAM_DB_SECRET_ARN")))
                as_owner = found.reaches(DB_OWNER_ENTRY)
                if as_owner != owner:
                    problems.append(
                        f"{name}: its code logs in as {'the owner' if as_owner else 'the app role'} "
                        f"but its settings point {'at the cluster' if owner else 'at the proxy'}"
                    )
    for logical in t.of_type("AWS::Serverless::Application"):
        placement = network.application_placement(logical)
        if placement is None:
            continue
        if network.path_to_service(placement, "secretsmanager") is None:
            problems.append(f"{logical} (in the VPC): no network path to secretsmanager")
        for cluster in t.of_type("AWS::RDS::DBCluster"):
            port = t.number(t.props(cluster).get("Port")) or 5432
            if not network.allows(placement, network.cluster_placement(cluster), port):
                problems.append(
                    f"{logical} (in the VPC): its security groups do not reach the cluster {cluster}"
                )
    return problems, paths
