"""The base of the API's request and response models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    """A pydantic model whose validator and serializer are built when it is first used, not when its
    module is imported (`defer_build`). A Lambda's cold start serves one route: it builds that route's
    models, not every model its handler module names."""

    model_config = ConfigDict(defer_build=True)
