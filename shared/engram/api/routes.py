"""Every API route and the function that serves it: read by the local HTTP front and by the CDK app,
so both always agree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    function: str  # folder under functions/
    method: str
    path: str  # API Gateway resource path, with {param} placeholders
    authorized: bool = True


ROUTES: tuple[Route, ...] = (
    Route("health", "GET", "/health", authorized=False),
    Route("memories", "POST", "/v1/memories"),
    Route("memories", "POST", "/v1/memories/list"),
    Route("memories", "POST", "/v1/memories/upsert"),
    Route("memories", "GET", "/v1/memories/{id}"),
    Route("memories", "PATCH", "/v1/memories/{id}"),
    Route("memories", "DELETE", "/v1/memories/{id}"),
    Route("memories", "GET", "/v1/memories/{id}/history"),
    Route("memories", "POST", "/v1/memories/{id}/revert"),
    Route("memories", "GET", "/v1/memories/{id}/related"),
    Route("search", "POST", "/v1/search"),
    Route("sessions", "POST", "/v1/sessions"),
    Route("sessions", "GET", "/v1/sessions"),
    Route("sessions", "GET", "/v1/sessions/{id}"),
    Route("sessions", "DELETE", "/v1/sessions/{id}"),
    Route("sessions", "POST", "/v1/sessions/{id}/messages"),
    Route("sessions", "POST", "/v1/sessions/{id}/extract"),
    Route("sessions", "POST", "/v1/sessions/{id}/recent"),
    Route("stats", "GET", "/v1/stats"),
    Route("documents", "POST", "/v1/documents"),
    Route("documents", "POST", "/v1/documents/upload"),
    Route("documents", "POST", "/v1/documents/list"),
    Route("documents", "GET", "/v1/documents/{id}"),
    Route("documents", "DELETE", "/v1/documents/{id}"),
    Route("graph", "GET", "/v1/entities"),
    Route("graph", "POST", "/v1/entities"),
    Route("graph", "GET", "/v1/entities/{id}"),
    Route("graph", "DELETE", "/v1/entities/{id}"),
    Route("graph", "POST", "/v1/entities/{id}/observations"),
    Route("graph", "DELETE", "/v1/entities/{id}/observations/{memory_id}"),
    Route("graph", "POST", "/v1/relations"),
    Route("graph", "DELETE", "/v1/relations/{id}"),
    Route("graph", "GET", "/v1/graph"),
    Route("working", "PUT", "/v1/working/{scope}/{key}"),
    Route("working", "GET", "/v1/working/{scope}/{key}"),
    Route("working", "DELETE", "/v1/working/{scope}/{key}"),
    Route("working", "GET", "/v1/working/{scope}"),
    Route("working", "DELETE", "/v1/working/{scope}"),
    Route("procedures", "POST", "/v1/procedures"),
    Route("procedures", "GET", "/v1/procedures"),
    Route("procedures", "POST", "/v1/procedures/match"),
    Route("procedures", "GET", "/v1/procedures/{id}"),
    Route("procedures", "PATCH", "/v1/procedures/{id}"),
    Route("procedures", "DELETE", "/v1/procedures/{id}"),
    Route("profile", "GET", "/v1/profile"),
    Route("containers", "GET", "/v1/containers"),
    Route("containers", "POST", "/v1/containers"),
    Route("containers", "DELETE", "/v1/containers/{name}"),
    Route("containers", "POST", "/v1/containers/{name}/archive"),
    Route("containers", "GET", "/v1/extraction-instructions"),
    Route("containers", "PUT", "/v1/extraction-instructions"),
    Route("containers", "DELETE", "/v1/extraction-instructions"),
    Route("export", "POST", "/v1/export"),
    Route("export", "GET", "/v1/export/{id}"),
)

API_FUNCTIONS: tuple[str, ...] = tuple(dict.fromkeys(route.function for route in ROUTES))
AUTHORIZER_FUNCTION = "authorizer"
