"""What every API handler shares: the resolver with its error mapping, and the caller's tenant."""

from engram.api.app import build_resolver, principal_of, resolve, with_etag

__all__ = ["build_resolver", "principal_of", "resolve", "with_etag"]
