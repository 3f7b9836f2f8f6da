"""Calls through the client openapi-python-client generates, by operation id, with the answer's status
and parsed type checked on the spot."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx

PACKAGE = "engram_api_client"


class GeneratedApi:
    def __init__(
        self,
        document: dict[str, Any],
        base_url: str,
        key: str | None,
        hook: Callable[[httpx.Response], None],
    ) -> None:
        client = importlib.import_module(f"{PACKAGE}.client")
        self.models = importlib.import_module(f"{PACKAGE}.models")
        self.types = importlib.import_module(f"{PACKAGE}.types")
        options: dict[str, Any] = {
            "base_url": base_url,
            "raise_on_unexpected_status": True,
            "timeout": httpx.Timeout(60.0),
            "httpx_args": {"event_hooks": {"response": [hook]}},
        }
        # The apiKey scheme: the key alone, in x-api-key.
        self.client = (
            client.AuthenticatedClient(token=key, prefix="", auth_header_name="x-api-key", **options)
            if key is not None
            else client.Client(**options)
        )
        self._tags = {
            op["operationId"]: op["tags"][0] for ops in document["paths"].values() for op in ops.values()
        }

    def module(self, operation_id: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.api.{self._tags[operation_id]}.{operation_id}")

    def body(self, model: str, data: dict[str, Any]) -> Any:
        return getattr(self.models, model).from_dict(data)

    def call(self, operation_id: str, /, *args: Any, **kwargs: Any) -> Any:
        """The generated `sync_detailed` of the operation: a Response with status_code and parsed."""
        return self.module(operation_id).sync_detailed(*args, client=self.client, **kwargs)

    def expect(self, status: int, model: str | None, operation_id: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call, and check the status and the class the generated client parsed the body into."""
        response = self.call(operation_id, *args, **kwargs)
        assert response.status_code == status, (operation_id, response.status_code, response.content[:500])
        if model is not None:
            assert type(response.parsed).__name__ == model, (operation_id, type(response.parsed))
        return response.parsed
