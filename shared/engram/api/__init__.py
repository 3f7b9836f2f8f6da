"""What every API handler shares: the resolver with its error mapping, and the caller's tenant.

The names load on first use, so that importing `engram.api.limits` (documents models, the local front)
does not import the resolver and its web framework."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.api.app import build_resolver, principal_of, resolve

__all__ = ["build_resolver", "principal_of", "resolve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from engram.api import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
