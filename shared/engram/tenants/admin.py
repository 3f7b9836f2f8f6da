"""The admin function's requests: store a key's hash, revoke keys, list keys.

Invoked directly (boto3 `lambda.invoke`) by `engram keys ... --stage`, never through API Gateway. The
plaintext key never reaches it: the CLI makes the key, gives its value to API Gateway, and sends only
the SHA-256 hash and the visible prefix here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from engram.errors import EngramError
from engram.tenants import repo, service

if TYPE_CHECKING:
    from engram.db.database import Database

_HEX_SHA256 = r"^[0-9a-f]{64}$"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant: str = Field(min_length=1, max_length=63)


class RegisterKey(_Request):
    action: Literal["register_key"]
    key_hash: str = Field(pattern=_HEX_SHA256, description="hex SHA-256 of the key")
    prefix: str = Field(min_length=1, max_length=32)
    label: str = Field(default="", max_length=200)


class RevokeKey(_Request):
    action: Literal["revoke_key"]
    key_hash: str | None = Field(default=None, pattern=_HEX_SHA256)
    prefix: str | None = Field(default=None, min_length=1, max_length=32)

    @model_validator(mode="after")
    def _one_selector(self) -> RevokeKey:
        if (self.key_hash is None) == (self.prefix is None):
            raise ValueError("give exactly one of key_hash and prefix")
        return self


class ListKeys(_Request):
    action: Literal["list_keys"]


AdminRequest = Annotated[RegisterKey | RevokeKey | ListKeys, Field(discriminator="action")]
_ACTIONS = {"register_key", "revoke_key", "list_keys"}
_ADAPTER: TypeAdapter[RegisterKey | RevokeKey | ListKeys] = TypeAdapter(AdminRequest)


def error(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return {"ok": False, "error": body}


def handle(admin_db: Database, payload: Any) -> dict[str, Any]:
    """One request in, `{"ok": true, ...}` or `{"ok": false, "error": {code, message, field?}}` out."""
    try:
        request = _ADAPTER.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"] if part not in _ACTIONS) or None
        return error("validation_error", f"{field}: {first['msg']}" if field else first["msg"], field)
    try:
        return {"ok": True, **_dispatch(admin_db, request)}
    except EngramError as exc:
        return error(exc.code, exc.message, exc.details.get("field"))


def _dispatch(admin_db: Database, request: RegisterKey | RevokeKey | ListKeys) -> dict[str, Any]:
    if isinstance(request, RegisterKey):
        tenant_id, key_id = service.register_key(
            admin_db, request.tenant, bytes.fromhex(request.key_hash), request.prefix, label=request.label
        )
        return {"tenant_id": str(tenant_id), "tenant_name": request.tenant, "key_id": str(key_id)}
    if isinstance(request, RevokeKey):
        count = service.revoke_key(
            admin_db,
            request.tenant,
            key_hash=bytes.fromhex(request.key_hash) if request.key_hash else None,
            prefix=request.prefix,
        )
        return {"revoked": count}
    tenant_id = service.ensure_existing_tenant(admin_db, request.tenant)
    with admin_db.tenant(tenant_id) as cur:
        keys = repo.list_keys(cur, tenant_id)
    return {
        "keys": [
            {
                "id": str(key.id),
                "prefix": key.prefix,
                "name": key.name,
                "created_at": key.created_at.isoformat(),
                "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
            }
            for key in keys
        ]
    }
