"""engram-client is generated from the API's OpenAPI document: the checked-in models and methods are
exactly what the generator makes of the document the server serves now, so every route has a method
and every object schema a model (`make client-code` regenerates them)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from types import ModuleType
from typing import Any

from engram_client import AsyncEngram, Engram, models
from tests.conftest import REPO

CODEGEN = REPO / "shared" / "client" / "tools" / "codegen.py"


def _codegen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engram_client_codegen", CODEGEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_sdk_is_what_the_current_document_generates(document: dict[str, Any]) -> None:
    codegen = _codegen()

    generated = codegen.generate(document)

    for name, text in generated.items():
        assert (codegen.PACKAGE / name).read_text() == text, (
            f"engram_client/{name} is stale: run make client-code"
        )


def test_every_operation_is_a_method_of_both_clients_and_every_schema_a_model(
    document: dict[str, Any],
) -> None:
    operation_ids = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}

    for client in (Engram, AsyncEngram):
        missing = {op for op in operation_ids if not callable(getattr(client, op, None))}
        assert missing == set(), client
    assert all(inspect.iscoroutinefunction(getattr(AsyncEngram, op)) for op in operation_ids)
    objects = {name for name, schema in document["components"]["schemas"].items() if "properties" in schema}
    assert objects <= set(dir(models))


def test_body_fields_are_keyword_arguments_named_as_in_the_schema(document: dict[str, Any]) -> None:
    body = document["components"]["schemas"]["MemoryCreate"]["properties"]

    parameters = inspect.signature(Engram.create_memory).parameters

    assert set(body) <= set(parameters)
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in body)
    assert parameters["content"].default is inspect.Parameter.empty
