"""Messages between `engram local` and its worker processes: length-prefixed pickles over a socket
pair. Both ends are this program, so pickle is safe here; nothing else can write to the socket.

One call, one reply; except a streamed reply (`Reply.stream`), which announces that the body follows
in `Chunk`s, each sent as soon as it is made, and ends with one `StreamEnd`. Meanwhile `engram local`
may send one `CancelStream` (its client went away): the worker stops making the body and ends the stream.
Either way the worker takes its next call only after its `StreamEnd`.

A streamed request (`HttpCall.streamed`, a route marked `streamed_body`) is the mirror image: its body
follows the call in `Chunk`s, as the client sends it, and ends with one `StreamEnd` (with an error: it broke
off, and the handler must keep nothing of it). The worker may reply before the body's end (the handler
failed, or read no further); `engram local` then stops sending and ends the body at once, and the worker
drops what is left of it up to that `StreamEnd`."""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from engram.documents.runs import DocumentRef
from engram.settings import Settings

_LENGTH = struct.Struct("!Q")


@dataclass(frozen=True)
class Boot:
    """What a worker needs to serve: sent once, right after it starts."""

    role: str  # "api" or "ingest"
    settings: Settings
    app_conninfo: str
    set_role: str | None  # SET ROLE after connecting (a DATABASE_URL that logs in as an admin)


@dataclass(frozen=True)
class HttpCall:
    method: str
    raw_path: str  # percent-encoded, with the query string
    headers: list[tuple[str, str]]
    body: bytes
    # The body (then empty here) follows in Chunks, ended by a StreamEnd.
    streamed: bool = False


@dataclass(frozen=True)
class LambdaCall:
    function: str  # under functions/, e.g. "pipeline/embed"
    event: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    value: Any = None
    # When the function raised: the error's name and message, as Lambda reports them.
    error: tuple[str, str] | None = None
    # Pipeline runs the invocation asked for (a document registered), started by `engram local`.
    starts: list[tuple[DocumentRef, str]] = field(default_factory=list)
    # The value is an HTTP response without its body, which follows in Chunks, then a StreamEnd.
    stream: bool = False


@dataclass(frozen=True)
class Chunk:
    """The next piece of a streamed body (a reply's, or a request's)."""

    data: bytes


@dataclass(frozen=True)
class StreamEnd:
    """The streamed body (a reply's, or a request's) is complete; or, with `error` (its name and message),
    it broke off."""

    error: tuple[str, str] | None = None


@dataclass(frozen=True)
class CancelStream:
    """From `engram local`: nobody reads the streamed body any more."""


def encode(message: object) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def send(sock: socket.socket, message: object) -> None:
    sock.sendall(encode(message))


def receive(sock: socket.socket) -> Any:
    """The next message, or None once the other end has closed."""
    header = _read_exactly(sock, _LENGTH.size)
    if header is None:
        return None
    (length,) = _LENGTH.unpack(header)
    data = _read_exactly(sock, length)
    if data is None:
        return None
    return pickle.loads(data)  # noqa: S301 - written by the parent process only


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


async def read_message(reader: asyncio.StreamReader) -> Any:
    """The next message; asyncio.IncompleteReadError once the worker has gone."""
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    return pickle.loads(await reader.readexactly(length))  # noqa: S301 - our own worker
