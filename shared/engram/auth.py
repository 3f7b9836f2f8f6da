"""The authorizer's logic: an API Gateway REQUEST authorizer event in, an IAM policy out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram.apikey import API_KEY_HEADER, AmbiguousApiKey, api_key_from
from engram.errors import Forbidden, Unauthorized
from engram.observability import logger
from engram.tenants.service import authenticate

if TYPE_CHECKING:
    from engram.db.database import Database

__all__ = ["API_KEY_HEADER", "AuthorizerDenied", "api_key_from", "authorize_request"]


class AuthorizerDenied(Exception):
    """API Gateway answers 401 when an authorizer raises 'Unauthorized'."""


def _api_wide_arn(method_arn: str) -> str:
    # arn:aws:execute-api:region:account:api-id/stage/METHOD/path -> .../stage/*/*: the cached
    # policy must cover every route, not only the one that happened to be called first.
    parts = method_arn.split("/")
    return "/".join(parts[:2]) + "/*/*" if len(parts) >= 2 else method_arn


def authorize_request(db: Database, event: dict[str, Any]) -> dict[str, Any]:
    method_arn = str(event.get("methodArn", "*"))
    try:
        api_key = api_key_from(event)
    except AmbiguousApiKey as exc:
        logger.info("api key refused", extra={"reason": str(exc)})
        return _policy("anonymous", "Deny", method_arn, None, {"reason": str(exc)})
    try:
        principal = authenticate(db, api_key)
    except Unauthorized:
        raise AuthorizerDenied("Unauthorized") from None
    except Forbidden as exc:
        logger.info("api key refused", extra={"reason": exc.message})
        return _policy("anonymous", "Deny", method_arn, None, {"reason": exc.message})
    return _policy(
        str(principal.tenant_id),
        "Allow",
        _api_wide_arn(method_arn),
        api_key,
        {
            "tenantId": str(principal.tenant_id),
            "tenantName": principal.tenant_name,
            "keyId": str(principal.key_id),
        },
    )


def _policy(
    principal_id: str, effect: str, resource: str, api_key: str | None, context: dict[str, str]
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "principalId": principal_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": resource}],
        },
        "context": context,
    }
    if api_key:
        response["usageIdentifierKey"] = api_key
    return response
