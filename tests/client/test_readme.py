"""The README's "Use it from Python" and "Use it from an MCP client", run as a new user would: in a fresh
virtualenv, `pip install ./shared/client` (the README's own command) must bring httpx and pydantic and
nothing of the server (no psycopg, boto3 or Powertools); then each Python example runs against the local
stack over HTTP, and the MCP client configuration launches `engram-mcp` from that virtualenv."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from engram.tenants.service import IssuedKey
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
SERVER_SIDE = {
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "boto3",
    "botocore",
    "aws-lambda-powertools",
    "engram",
}
CLIENT_SIDE = {"engram-client", "httpx", "httpcore", "h11", "anyio", "idna", "certifi", "sniffio", "pydantic"}


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def pip_install_line(title: str) -> list[str]:
    line = next(
        line for b in blocks(section(title), "bash") for line in b.splitlines() if line.startswith("pip ")
    )
    return shlex.split(line.split("#")[0])[1:]


class FreshVenv:
    def __init__(self, root: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120)
        self.root = root
        self.python = root / "bin" / "python"

    def pip(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.python), "-m", "pip", "--disable-pip-version-check", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    def distributions(self) -> set[str]:
        listed = subprocess.run(
            [str(self.python), "-m", "pip", "list", "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
        return {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}


@pytest.fixture(scope="session")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[FreshVenv, set[str]]:
    """A new virtualenv with the README's `pip install ./shared/client`, and what that installed."""
    venv = FreshVenv(tmp_path_factory.mktemp("fresh") / "venv")
    venv.pip(*pip_install_line("Use it from Python"))
    return venv, venv.distributions()


def test_the_client_installs_without_anything_of_the_server(fresh: tuple[FreshVenv, set[str]]) -> None:
    _, installed = fresh

    assert installed & SERVER_SIDE == set()
    assert {"engram-client", "httpx", "pydantic"} <= installed
    assert installed - CLIENT_SIDE <= {
        "pip",
        "setuptools",
        "pydantic-core",
        "annotated-types",
        "typing-extensions",
        "typing-inspection",
    }


@pytest.mark.parametrize("number", range(len(blocks(section("Use it from Python"), "python"))))
def test_the_python_examples_run(
    fresh: tuple[FreshVenv, set[str]], live_url: str, tenant: IssuedKey, number: int
) -> None:
    venv, _ = fresh
    code = blocks(section("Use it from Python"), "python")[number]
    env = {"PATH": os.environ["PATH"], "ENGRAM_URL": live_url, "ENGRAM_API_KEY": tenant.plaintext}

    ran = subprocess.run(
        [str(venv.python), "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False
    )

    assert ran.returncode == 0, ran.stderr[-3000:]
    expected = [
        comment.split(":")[0].strip() for comment in re.findall(r"print\(.*\)\s+#\s*(.+)$", code, flags=re.M)
    ]
    for words in expected:
        for word in words.replace("...", " ").split():
            assert word in ran.stdout, (word, ran.stdout)


@pytest.mark.anyio
async def test_the_mcp_configuration_launches_the_server(
    fresh: tuple[FreshVenv, set[str]], live_url: str, tenant: IssuedKey
) -> None:
    venv, _ = fresh
    venv.pip(*pip_install_line("Use it from an MCP client"))
    (config,) = blocks(section("Use it from an MCP client"), "json")
    server: dict[str, Any] = json.loads(config)["mcpServers"]["engram"]
    env = {**server["env"], "ENGRAM_URL": live_url, "ENGRAM_API_KEY": tenant.plaintext}
    launch = StdioServerParameters(
        command=str(venv.root / "bin" / server["command"]), args=server["args"], env=env
    )

    async with Client(launch, read_timeout_seconds=120) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        stored = await client.call_tool("remember", {"content": "Alice's favourite tea is oolong"})
        recalled = await client.call_tool("recall", {"query": "which tea does Alice like?"})

    assert {"remember", "recall", "get_profile", "get_context", "forget", "supersede"} <= tools
    assert not stored.is_error and not recalled.is_error
    assert "oolong" in recalled.content[0].text
