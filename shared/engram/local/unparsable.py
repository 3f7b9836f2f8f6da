"""The answer to a request that the local front's HTTP parser cannot read, in the API's error shape.

Hypercorn answers such a request itself, before the app sees it: a negative or a second, different
Content-Length, a bare CR in a header, a request line and headers past h11's buffer, a Transfer-Encoding
other than chunked. Its answer has an empty body and h11's status hint, which is 501 (Not Implemented)
for an unknown transfer coding. The API's errors always carry `{"error": {"code", "message"}}`, and a
request that cannot be read is the client's error, a 4xx: `install` makes Hypercorn's answer one (400
for the 501, 431 stays), with h11's reason in the message. The connection is still closed after it.

Hypercorn has no hook for this answer: its H11Protocol._send_error_response is replaced, once per process
(engram.local.asgi.server_config installs it). Its only caller is the handler of h11's
RemoteProtocolError, inside the `except` block, which is where the reason is read from.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import h11

REASON_CHARS = 200
_MESSAGES = {
    431: "the request line and headers are too long",
    501: "only Transfer-Encoding: chunked can be read; or send the body with Content-Length",
}


def error_body(status_hint: int, reason: str | None) -> tuple[int, bytes]:
    """The status (a 4xx) and the JSON body that answer a request h11 refused with `status_hint`."""
    status = 431 if status_hint == 431 else 400
    code = "headers_too_large" if status == 431 else "bad_request"
    message = _MESSAGES.get(status_hint, "the request could not be read as HTTP/1.1")
    if reason:
        message += f" ({reason[:REASON_CHARS]})"
    return status, json.dumps({"error": {"code": code, "message": message}}).encode()


async def _send_error_response(self: Any, status_code: int) -> None:
    """Hypercorn's H11Protocol._send_error_response, with a body."""
    refused = sys.exc_info()[1]
    reason = str(refused) if isinstance(refused, h11.RemoteProtocolError) else None
    status, body = error_body(status_code, reason)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *self.config.response_headers("h11"),
    ]
    await self._send_h11_event(h11.Response(status_code=status, headers=headers))
    await self._send_h11_event(h11.Data(data=body))
    await self._send_h11_event(h11.EndOfMessage())


def install() -> None:
    from hypercorn.protocol.h11 import H11Protocol

    H11Protocol._send_error_response = _send_error_response  # type: ignore[method-assign]
