"""`make sam-db`: the local embedded PostgreSQL (the one `make local` uses, migrated), reachable from the
containers `sam local` starts.

The embedded server listens on a unix socket only, which a container cannot reach; this forwards a TCP
port on the Docker bridge to it (infra/sam-env.json's DATABASE_URL: host.docker.internal:54329). The
socket trusts local logins, so the port is opened on the bridge address only (docker0 on Linux;
127.0.0.1 where Docker Desktop maps host.docker.internal to the host's loopback), never on all
interfaces.

    python -m infra.sam_db [--host 172.17.0.1] [--port 54329]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

DEFAULT_PORT = 54329


def socket_path(conninfo: str) -> Path:
    params = conninfo_to_dict(conninfo)
    host = str(params.get("host", ""))
    if not host.startswith("/"):
        raise ValueError(f"not a unix-socket connection: {conninfo}")
    return Path(host) / f".s.PGSQL.{params.get('port') or 5432}"


def bridge_address() -> str:
    """docker0's address on Linux, else the loopback (Docker Desktop)."""
    try:
        out = subprocess.run(
            ["ip", "-4", "-o", "addr", "show", "docker0"],  # noqa: S607
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except FileNotFoundError:
        return "127.0.0.1"
    for word in out.split():
        if "/" in word and word[0].isdigit():
            return word.split("/")[0]
    return "127.0.0.1"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def serve(host: str, port: int, unix_socket: Path) -> asyncio.Server:
    """Forward each TCP connection on host:port to the server's unix socket."""

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_unix_connection(str(unix_socket))
        await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))

    return await asyncio.start_server(handle, host, port)


async def _main(host: str, port: int) -> None:
    from engram.local.stack import open_database
    from engram.settings import get_settings

    local = open_database(get_settings(), app_pool_size=1)  # starts (or attaches to) and migrates it
    server = await serve(host, port, socket_path(local.admin_conninfo))
    print(f"sam-db: postgresql://postgres@{host}:{port}/engram -> {local.admin_conninfo} (Ctrl-C stops)")
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=None, help="address to listen on (default: the Docker bridge)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args.host or bridge_address(), args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
