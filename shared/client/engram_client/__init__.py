"""engram-client: the Python SDK for Engram, long-term memory for AI agents.

from engram_client import Engram
engram = Engram()                      # ENGRAM_URL, ENGRAM_API_KEY
engram.create_memory(content="Alice lives in Paris", container="crm")
engram.search(query="where does Alice live?")
"""

from engram_client import models
from engram_client._base import NOT_GIVEN, NotGiven, RetryPolicy
from engram_client.client import AsyncEngram, Engram
from engram_client.errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    EngramError,
    IngestionFailed,
    InvalidInputError,
    MaybeApplied,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnexpectedResponse,
    WaitTimeout,
)

__version__ = "0.1.0"
__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "AsyncEngram",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "Engram",
    "EngramError",
    "IngestionFailed",
    "InvalidInputError",
    "MaybeApplied",
    "NotFoundError",
    "NotGiven",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RetryPolicy",
    "ServerError",
    "UnexpectedResponse",
    "WaitTimeout",
    "models",
]
