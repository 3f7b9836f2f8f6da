"""Fetching a URL for the extract step: http(s) only, size-capped, and never into private networks
(the pipeline runs inside the VPC, next to the database and the instance metadata endpoint)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from engram.documents.failures import FetchFailed, TooLarge, TransientError
from engram.limits import file_too_large

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
USER_AGENT = "engram-ingest/0.1 (+https://github.com/)"
Resolver = Callable[[str], list[str]]


def resolve_host(host: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except socket.gaierror as exc:
        raise FetchFailed(f"the host {host!r} could not be resolved: {exc.strerror}") from None


@dataclass(frozen=True)
class Fetched:
    data: bytes
    content_type: str | None
    url: str


class UrlFetcher:
    def __init__(
        self,
        *,
        max_bytes: int,
        timeout: float,
        allow_private: bool = False,
        client: httpx.Client | None = None,
        resolver: Resolver = resolve_host,
    ) -> None:
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self.resolver = resolver
        self.timeout = timeout
        self._client = client

    @property
    def client(self) -> httpx.Client:
        """Made on the first fetch: every pipeline step builds a fetcher, only extract uses it, and
        importing httpx costs a cold start ~60 ms."""
        if self._client is None:
            import httpx

            self._client = httpx.Client(
                timeout=self.timeout, follow_redirects=False, headers={"User-Agent": USER_AGENT}
            )
        return self._client

    def fetch(self, url: str) -> Fetched:
        import httpx

        current = url
        for _ in range(MAX_REDIRECTS + 1):
            self._check(current)
            try:
                with self.client.stream("GET", current) as response:
                    if response.is_redirect and response.headers.get("location"):
                        current = urljoin(current, response.headers["location"])
                        continue
                    return self._read(current, response)
            except httpx.TimeoutException as exc:
                raise TransientError(f"fetching {url} timed out") from exc
            except httpx.TransportError as exc:
                raise FetchFailed(f"could not fetch {url}: {exc}") from None
        raise FetchFailed(f"{url} redirects more than {MAX_REDIRECTS} times")

    def _read(self, url: str, response: Any) -> Fetched:
        if response.status_code in (429, 502, 503, 504):
            raise TransientError(f"GET {url} answered {response.status_code}")
        if response.status_code >= 400:
            raise FetchFailed(f"GET {url} answered HTTP {response.status_code}")
        declared = response.headers.get("content-length")
        if (
            declared
            and declared.isdigit()
            and (refusal := file_too_large(int(declared), self.max_bytes, subject=url))
        ):
            raise TooLarge(refusal)
        body = bytearray()
        for part in response.iter_bytes():
            body.extend(part)
            if refusal := file_too_large(len(body), self.max_bytes, exact=False, subject=url):
                raise TooLarge(refusal)
        return Fetched(bytes(body), response.headers.get("content-type"), url)

    def _check(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchFailed(f"only http and https URLs can be fetched, not {url!r}")
        if self.allow_private:
            return
        for address in self.resolver(parts.hostname):
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if not ip.is_global:
                raise FetchFailed(
                    f"{parts.hostname} resolves to {ip}, a private or reserved address: refused "
                    "(set ENGRAM_ALLOW_PRIVATE_URLS=true to allow it on a trusted network)"
                )
