"""The local HTTP front `engram local` had before its worker processes, kept as the concurrency
bench's anchor: a threaded http.server in front of one in-process `LocalGateway`, whose lock lets one
request run at a time (a single lane).

    python -m tests.bench.single_lane PORT   (DATABASE_URL or ENGRAM_DATA_DIR as for `engram local`)
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from engram.limits import MAX_REQUEST_BYTES
from engram.local.gateway import HttpResponse, LocalGateway, error, too_large
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
            if length > MAX_REQUEST_BYTES:
                if length <= DRAIN_LIMIT_BYTES:
                    remaining = length
                    while remaining > 0:
                        chunk = self.rfile.read(min(remaining, 1 << 20))
                        if not chunk:
                            break
                        remaining -= len(chunk)
                self._send(too_large())
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            headers = list(self.headers.items())  # repeated headers included, as API Gateway passes them
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


def main(argv: list[str]) -> int:
    from engram import deps
    from engram.local.stack import install_app, open_database
    from engram.settings import get_settings

    settings = get_settings()
    local = open_database(settings)
    install_app(local)
    deps.embedder().embed_query("warm up")
    server = make_server("127.0.0.1", int(argv[0]))
    print("ready", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        local.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
