"""Reading a multipart/form-data upload (the local `POST /v1/documents/upload`) with the stdlib."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from engram.errors import InvalidInput


@dataclass
class Upload:
    filename: str
    data: bytes
    content_type: str | None
    fields: dict[str, str] = field(default_factory=dict)

    def json_field(self, name: str, default: Any) -> Any:
        raw = self.fields.get(name)
        if raw is None or raw == "":
            return default
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise InvalidInput(f"{name} must be JSON", details={"field": name}) from None
        except RecursionError:
            raise InvalidInput(f"{name} is nested too deeply", details={"field": name}) from None


def parse_multipart(content_type: str, body: bytes) -> Upload:
    if "boundary=" not in content_type:
        raise InvalidInput("send the file as multipart/form-data with a boundary", details={"field": "body"})
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n" + body
    )
    if not message.is_multipart():
        raise InvalidInput("the body is not multipart/form-data", details={"field": "body"})
    upload: Upload | None = None
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        payload = payload if isinstance(payload, bytes) else b""
        if name == "file":
            filename = part.get_filename()
            if not filename:
                raise InvalidInput("the file part needs a filename", details={"field": "file"})
            declared = part.get_content_type()
            upload = Upload(
                filename=filename.replace("\\", "/").rsplit("/", 1)[-1],
                data=payload,
                content_type=None if declared in ("application/octet-stream", "text/plain") else declared,
            )
        else:
            try:
                fields[name] = payload.decode("utf-8")
            except UnicodeDecodeError:
                # Never stored with replacement characters: refused as sent.
                raise InvalidInput(f"{name} is not UTF-8 text", details={"field": name}) from None
    if upload is None:
        raise InvalidInput("a part named 'file' is required", details={"field": "file"})
    upload.fields = fields
    return upload
