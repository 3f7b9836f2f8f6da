"""The fuzz gate: schemathesis over every operation of /openapi.json on the local stack (__main__)."""
