"""The deploy gate's S3 checks: the scan of the S3 operations a function's code names, the IAM actions
they need (infra/s3_access.py), each function's role holding exactly those, and no role granted object
lock or an S3 wildcard. Hand-made fragments and a tiny package here; the real stack in test_gate_on_synth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.build import ALL_FUNCTIONS
from infra.gate import checks
from infra.gate.clients import ClientSite, FunctionCode, OperationSite, scan_function, scan_functions
from infra.s3_access import S3_ACCESS, granted_actions, operation_actions
from tests.infra import fragments as f
from tests.infra.code_trees import write_code_tree

PACKAGE = {
    "__init__.py": "",
    "deps.py": """
def boto_client(service):
    import boto3
    return boto3.client(service)

def blobs():
    from engram.store import Store
    return Store(boto_client("s3"))

def words():
    return {"get_object": 1}
""",
    "store.py": """
class Store:
    def __init__(self, client):
        self.client = client

    def get(self, key, version=None):
        kwargs = {"Key": key}
        if version:
            kwargs["VersionId"] = version
        return _call(self.client.get_object, **kwargs)

    def drop(self, prefix):
        for page in self.client.get_paginator("list_object_versions").paginate(Prefix=prefix):
            self.client.delete_objects(Delete=page)

    def link(self, key):
        return self.client.generate_presigned_url("put_object", Params={"Key": key})

def _call(method, **kwargs):
    try:
        return method(**kwargs)
    except Exception as exc:
        if "NoSuchKey" in str(exc):
            return None
        raise
""",
}


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    handlers = {
        "files": "from engram import deps\n\ndef handler(event, context):\n    return deps.blobs()\n",
        "plain": "from engram import deps\n\ndef handler(event, context):\n    return deps.words()\n",
    }
    return write_code_tree(tmp_path, PACKAGE, handlers)


# --- the scan ---------------------------------------------------------------------------------------


def test_the_scan_finds_operations_called_handed_on_paginated_and_presigned(fake: tuple[Path, Path]) -> None:
    functions, package = fake
    code = scan_function("files", functions, package)
    operations = {site.operation for site in code.s3_calls}
    # get_object is handed to a helper, not called; the others are named by a paginator or a presigned URL
    assert operations == {"get_object", "list_object_versions", "delete_objects", "put_object"}
    (get,) = [site for site in code.s3_calls if site.operation == "get_object"]
    assert get.where.endswith("store.py:10")
    assert code.s3_mentions == {"VersionId", "NoSuchKey"}


def test_code_without_an_s3_client_has_no_s3_operations(fake: tuple[Path, Path]) -> None:
    functions, package = fake
    code = scan_function("plain", functions, package)  # a dict key "get_object" is no call
    assert code.services == set() and code.s3_calls == () and code.s3_mentions == frozenset()


def test_a_version_and_a_missing_key_change_what_an_operation_needs() -> None:
    assert operation_actions("get_object", []) == ("s3:GetObject",)
    assert set(operation_actions("get_object", ["VersionId", "NoSuchKey"])) == {
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:ListBucket",  # else S3 answers 403, not NoSuchKey
    }
    assert operation_actions("delete_objects", []) == ("s3:DeleteObject",)
    assert operation_actions("delete_objects", ["VersionId"]) == ("s3:DeleteObjectVersion",)
    assert set(operation_actions("upload_fileobj", [])) == {"s3:PutObject", "s3:AbortMultipartUpload"}
    with pytest.raises(KeyError):
        operation_actions("put_object_legal_hold", [])


def test_every_function_is_granted_exactly_the_s3_actions_its_code_needs() -> None:
    code = scan_functions(ALL_FUNCTIONS)
    for name in ALL_FUNCTIONS:
        needed, problems = checks.s3_actions_needed(name, code[name])
        assert problems == [], name
        assert set(needed) == granted_actions(name), name
    # what the code says, spelled out for the functions whose needs differ
    assert granted_actions("containers") == {"s3:ListBucketVersions", "s3:DeleteObjectVersion"}
    assert granted_actions("pipeline/trigger") == {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket"}
    assert "s3:AbortMultipartUpload" in granted_actions("export_worker")
    assert "s3:AbortMultipartUpload" not in granted_actions("export")
    assert set(S3_ACCESS) == {name for name in ALL_FUNCTIONS if code[name].s3_calls}


# --- the role holds what the code needs, and nothing else ------------------------------------------


def _code(*operations: str, mentions: tuple[str, ...] = ()) -> FunctionCode:
    return FunctionCode(
        "fn",
        frozenset(),
        (ClientSite("s3", "engram.x.y", "x.py:1"),),
        tuple(OperationSite(op, f"x.py:{n}") for n, op in enumerate(operations, 2)),
        frozenset(mentions),
    )


def _held(actions: list[str], code: FunctionCode, name: str = "fn") -> list[str]:
    body = f.network()
    f.function(body, "Fn", groups=[])
    f.grant(body, "Fn", actions, {"Fn::GetAtt": ["Bucket", "Arn"]})
    return checks.s3_actions_match_code(f.template(body), {name: "Fn"}, {name: code})


def test_a_role_with_exactly_the_actions_the_code_needs_passes() -> None:
    code = _code("get_object", "put_object", mentions=("VersionId",))
    assert _held(["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"], code) == []


def test_an_action_the_code_needs_but_the_role_lacks_fails() -> None:
    code = _code("get_object", mentions=("NoSuchKey",))
    assert _held(["s3:GetObject"], code) == [
        "fn: its code calls S3 (get_object, x.py:2), which needs s3:ListBucket: its role lacks it"
    ]


def test_an_action_or_a_wildcard_the_code_does_not_need_fails() -> None:
    code = _code("get_object")
    assert _held(["s3:GetObject", "s3:DeleteObject", "s3:GetObject*"], code) == [
        "fn: its role grants s3:DeleteObject, which no S3 call of its code needs",
        "fn: its role grants s3:GetObject*: a wildcard, where its code needs exact actions",
    ]


def test_an_operation_with_no_iam_mapping_fails() -> None:
    assert _held([], _code("restore_object")) == [
        "fn: its code calls S3 restore_object (x.py:2), which infra/s3_access.py does not map to IAM actions"
    ]


def test_operations_listed_as_not_called_need_nothing_but_must_be_in_the_code() -> None:
    # containers: its blob store can read and write, but it only deletes (infra/s3_access.NOT_CALLED)
    deletes = ("list_object_versions", "delete_objects")
    code = _code("get_object", "put_object", *deletes, mentions=("VersionId",))
    assert _held(["s3:ListBucketVersions", "s3:DeleteObjectVersion"], code, "containers") == []
    assert _held(
        ["s3:ListBucketVersions", "s3:DeleteObjectVersion"],
        _code(*deletes, mentions=("VersionId",)),
        "containers",
    ) == [
        "containers: NOT_CALLED lists S3 get_object, which its code does not name",
        "containers: NOT_CALLED lists S3 put_object, which its code does not name",
    ]


# --- no object lock, no s3:* -----------------------------------------------------------------------


def _policy(actions: list[str], key: str = "Action") -> dict[str, Any]:
    statement = {"Effect": "Allow", key: actions, "Resource": "*"}
    return {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {"Statement": [statement]}}}


def test_exact_actions_without_object_lock_pass() -> None:
    body = {"Resources": {"P": _policy(["s3:GetObject", "s3:PutObject", "s3:DeleteObjectVersion"])}}
    assert checks.no_object_lock_or_s3_wildcard(f.template(body)) == []


def test_object_lock_actions_by_name_or_by_wildcard_fail() -> None:
    body = {
        "Resources": {
            "Named": _policy(["s3:GetObject", "s3:PutObjectLegalHold"]),
            "Wildcard": _policy(["s3:PutObject*"]),  # what CDK's grant_write hands out, spelled out
            "Bypass": _policy(["S3:bypassgovernanceretention"]),  # IAM actions are case-insensitive
        }
    }
    assert checks.no_object_lock_or_s3_wildcard(f.template(body)) == [
        "Named: grants s3:PutObjectLegalHold, which is object lock (s3:PutObjectLegalHold)",
        "Wildcard: grants s3:PutObject*, which is object lock (s3:PutObjectLegalHold, s3:PutObjectRetention)",
        "Bypass: grants S3:bypassgovernanceretention, which is object lock (s3:BypassGovernanceRetention)",
    ]


def test_every_s3_action_or_everything_fails_in_a_policy_or_a_roles_inline_policy() -> None:
    inline = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Policies": [
                {"PolicyName": "p", "PolicyDocument": _policy(["*"])["Properties"]["PolicyDocument"]}
            ]
        },
    }
    body = {
        "Resources": {"S3": _policy(["s3:*"]), "Role": inline, "Not": _policy(["s3:GetObject"], "NotAction")}
    }
    assert checks.no_object_lock_or_s3_wildcard(f.template(body)) == [
        "S3: grants s3:*: every S3 action, object lock too",
        "Role: grants *: every action, S3's object lock too",
        "Not: allows every action but ['s3:GetObject'] (NotAction)",
    ]
