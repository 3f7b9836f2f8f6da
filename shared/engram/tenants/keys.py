"""API keys: random, shown once, stored only as a SHA-256 hash plus a short visible prefix.

A fast hash is right here: keys are 256-bit random strings, not passwords, so there is nothing to
brute-force, and the authorizer hashes on every (uncached) request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

KEY_PREFIX = "engram_"
VISIBLE_PREFIX_LENGTH = len(KEY_PREFIX) + 6


@dataclass(frozen=True)
class NewApiKey:
    plaintext: str
    prefix: str
    key_hash: bytes


def hash_api_key(plaintext: str) -> bytes:
    return hashlib.sha256(plaintext.encode("utf-8")).digest()


def visible_prefix(plaintext: str) -> str:
    return plaintext[:VISIBLE_PREFIX_LENGTH]


def new_api_key() -> NewApiKey:
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    return from_plaintext(plaintext)


def from_plaintext(plaintext: str) -> NewApiKey:
    return NewApiKey(plaintext=plaintext, prefix=visible_prefix(plaintext), key_hash=hash_api_key(plaintext))
