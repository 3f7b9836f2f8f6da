"""What every API handler shares: the resolver with its error mapping, and the caller's tenant."""

from engram.api.app import build_resolver, no_content, principal_of, resolve, tenant_of, with_etag

__all__ = ["build_resolver", "no_content", "principal_of", "resolve", "tenant_of", "with_etag"]
