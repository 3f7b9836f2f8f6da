"""Stand-ins for LLM servers: a scripted OpenAI-compatible HTTP server on loopback, and recorded
response shapes of the OpenAI, Anthropic and Bedrock Converse APIs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def chat_completion(
    content: str, *, prompt_tokens: int = 100, completion_tokens: int = 20, finish_reason: str = "stop"
) -> dict[str, Any]:
    """An OpenAI Chat Completions response, as api.openai.com (and Ollama, vLLM) shape it."""
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1735689600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "fp_0123456789",
    }


def anthropic_message(
    text: str,
    *,
    input_tokens: int = 100,
    output_tokens: int = 20,
    stop_reason: str = "end_turn",
    **usage: int,
) -> dict[str, Any]:
    """An Anthropic Messages API response."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage},
    }


def converse_response(
    text: str, *, input_tokens: int = 100, output_tokens: int = 20, stop_reason: str = "end_turn"
) -> dict[str, Any]:
    """A Bedrock Converse response (as botocore parses it)."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop_reason,
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
        "metrics": {"latencyMs": 812},
    }


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a provider that times out)
    raw: bytes | None = None  # sent instead of the JSON body (a provider that answers garbage)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers POST /v1/chat/completions with the scripted
    replies, in order (a string is the assistant's content), and records every request it gets."""

    def __init__(self, replies: list[Reply | str]) -> None:
        self.replies = [r if isinstance(r, Reply) else Reply(200, chat_completion(r)) for r in replies]
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with server._lock:
                    server.requests.append(
                        Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
                    )
                    reply = (
                        server.replies.pop(0)
                        if server.replies
                        else Reply(500, {"error": {"message": "script exhausted"}})
                    )
                if self.path != "/v1/chat/completions":
                    reply = Reply(404, {"error": {"message": f"no route {self.path}"}})
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting: what a timeout test wants

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def scripted_openai_server(replies: list[Reply | str]) -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer(replies).start()
    try:
        yield server
    finally:
        server.stop()
