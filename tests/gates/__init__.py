"""CI gates that drive the local stack over HTTP, as a client would: `make isolation` (tenant A
probing tenant B's data). Each gate is a module run with `python -m tests.gates.<gate>` and shares
the stack it starts (`tests.gates.stack`)."""
