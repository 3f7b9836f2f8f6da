"""The server's 503 and 429 answers: how long a client should wait before it sends the request again (the
Retry-After header, in whole seconds), one value per cause, and the code that says a request was
refused before anything handled it. Every front sends these: the handlers (engram.api.app), the local
front (engram.local.run, engram.local.gateway) and API Gateway's gateway responses (infra.api; the 429s
come from its usage plan alone: engram local meters no key).

Retry-After alone says nothing about what was done: a handler's 503 may come after it committed (the
connection to the database dropped during the commit, a document was registered but its pipeline could
not be started). Only NOT_HANDLED says that nothing was applied."""

from __future__ import annotations

# error.code of a 503 answered before any handler ran (the authorizer failed; the local front is
# stopping, or no API worker came free for the request): nothing was applied, so any request, a write
# too, may be sent again (engram-client does).
NOT_HANDLED = "not_handled"

# The database could not be reached during the request: the pool reconnects, and engram local starts
# its PostgreSQL again within a second or so (an Aurora failover takes longer: clients retry again).
DATABASE_SECONDS = 2
# A dependency is briefly down (engram.errors.ServiceUnavailable: the pipeline's starter, a provider
# after its own retries with backoff).
DEPENDENCY_SECONDS = 5
# The authorizer could not check the API key (its database query failed or timed out).
AUTHORIZER_SECONDS = 2
# engram local: no API worker came free while the request waited (it already waited up to 29 s).
WORKERS_BUSY_SECONDS = 1
# engram local is stopping: a restart takes some seconds, if it is restarted at all.
STOPPING_SECONDS = 5

# 429 `throttled`: the API key's requests came faster than its usage plan's rate (or burst); its
# allowance refills continuously, by the rate each second.
THROTTLED_SECONDS = 1
# 429 `quota_exceeded`: the API key's daily quota is used up until the usage plan's day ends, a time a
# gateway response cannot count down to (its headers are fixed at deploy): an hour, then ask again.
QUOTA_EXCEEDED_SECONDS = 3600


def retry_after(seconds: int) -> dict[str, str]:
    """The response header asking a client to wait `seconds` before it sends the request again."""
    return {"Retry-After": str(seconds)}
