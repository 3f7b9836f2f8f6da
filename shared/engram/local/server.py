"""The local HTTP front: a threaded HTTP/1.1 server in front of `LocalGateway`."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from engram.api.limits import MAX_REQUEST_BYTES as MAX_BODY_BYTES
from engram.local.gateway import HttpResponse, LocalGateway, error
from engram.observability import logger

DRAIN_LIMIT_BYTES = 64 * 1024 * 1024


def make_server(host: str, port: int, gateway: LocalGateway | None = None) -> ThreadingHTTPServer:
    gw = gateway or LocalGateway()

    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "engram-local"

        def _serve(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self._send(error(400, "bad_request", "invalid Content-Length"))
                return
            if length > MAX_BODY_BYTES:
                # Read (and drop) a moderately oversized body so the client sees the 413 rather than
                # a reset connection; beyond that, just close.
                if length <= DRAIN_LIMIT_BYTES:
                    remaining = length
                    while remaining > 0:
                        chunk = self.rfile.read(min(remaining, 1 << 20))
                        if not chunk:
                            break
                        remaining -= len(chunk)
                self._send(
                    error(413, "payload_too_large", f"request bodies are limited to {MAX_BODY_BYTES} bytes")
                )
                self.close_connection = True
                return
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self._send(
                    error(411, "length_required", "send a Content-Length; chunked bodies are not supported")
                )
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            headers = {name: value for name, value in self.headers.items()}
            try:
                response = gw.handle(self.command, self.path, headers, body)
            except Exception:
                logger.exception("local gateway failed")
                response = error(500, "internal_error", "an internal error occurred; it has been logged")
            self._send(response)

        def _send(self, response: HttpResponse) -> None:
            self.send_response(response.status)
            for name, value in response.headers.items():
                if name.lower() not in ("content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: object) -> None:
            logger.debug("http", extra={"request": format % args})

    server = ThreadingHTTPServer((host, port), RequestHandler)
    server.daemon_threads = True
    return server
