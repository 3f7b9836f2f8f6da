"""The static scan of which boto3 clients a function's code creates: on a tiny package made here (each rule
of the call graph shown once), and on the project's real functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.gate.clients import scan_function, scan_functions
from tests.infra.code_trees import write_code_tree

PACKAGE = {
    "__init__.py": "",
    "deps.py": """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from engram.queue import Queue

def boto_client(service):
    import boto3
    return boto3.client(service)

def blobs():
    from engram.store import S3Store
    return S3Store(boto_client("s3"))

def queue() -> "Queue":
    import boto3
    return boto3.client("sqs")

def never_called():
    import boto3
    return boto3.client("dynamodb")
""",
    "store.py": """
class S3Store:
    def __init__(self, client):
        self.client = client

    def presigner(self):
        import boto3
        return boto3.Session().client("sts")
""",
    "queue.py": "class Queue: ...\n",
    "text.py": """
import httpx

def fetch():
    return httpx.client("not-an-aws-service")
""",
    "api/__init__.py": "from engram.api.app import run\n",
    "api/app.py": """
from engram import deps

def run():
    return deps.queue()
""",
}


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    handlers = {
        "files": "from engram import deps\n\ndef handler(event, context):\n    return deps.blobs()\n",
        "reexport": "from engram.api import run\n\ndef handler(event, context):\n    return run()\n",
        "plain": "import engram.text\n\ndef handler(event, context):\n    return None\n",
    }
    return write_code_tree(tmp_path, PACKAGE, handlers)


def test_a_factory_called_with_a_literal_service_is_found_through_deps(fake: tuple[Path, Path]) -> None:
    functions, package = fake
    code = scan_function("files", functions, package)
    # deps.blobs -> boto_client("s3"); S3Store is named, so its methods count (presigner -> sts)
    assert code.services == {"s3", "sts"}
    (s3,) = [site for site in code.clients if site.service == "s3"]
    assert s3.function == "engram.deps.blobs" and s3.where.endswith("deps.py:12")


def test_re_exports_are_followed_and_unreached_code_is_not_counted(fake: tuple[Path, Path]) -> None:
    functions, package = fake
    code = scan_function("reexport", functions, package)
    assert code.services == {"sqs"}  # not dynamodb (never called), not the TYPE_CHECKING import's module
    assert code.reaches("engram.api.app.run") and not code.reaches("engram.deps.never_called")


def test_non_aws_client_calls_are_ignored(fake: tuple[Path, Path]) -> None:
    functions, package = fake
    assert scan_function("plain", functions, package).services == set()


def test_the_project_functions_create_the_clients_they_are_known_to() -> None:
    code = scan_functions(["health", "documents", "migrate", "pipeline/trigger", "pipeline/extract"])
    assert code["health"].services == {"rds"}  # the IAM token for RDS Proxy, nothing else
    assert code["documents"].services == {"rds", "s3", "stepfunctions"}
    assert code["migrate"].services == {"secretsmanager"}
    assert code["pipeline/trigger"].services >= {"s3", "stepfunctions"}
    assert code["pipeline/extract"].services >= {"s3", "textract", "bedrock-runtime"}
    assert code["health"].reaches("engram.db.connect.app_database")
    assert code["migrate"].reaches("engram.db.connect.master_conninfo_factory")
    assert not code["migrate"].reaches("engram.db.connect.app_database")
