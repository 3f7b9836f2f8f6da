"""The isolation gate: tenant A probes tenant B over every route (`python -m tests.gates.isolation`)."""
