"""The environment every function's process starts with: in AWS (infra/functions.py sets it on each Lambda)
and in `engram local`'s worker processes, which stand in for them."""

from __future__ import annotations

# Engram uses no pydantic plugins: without this, the first model a process builds makes pydantic read the
# entry points of every distribution on sys.path (the runtime's and the layers') to look for some, in every
# cold start (and in every worker `engram local` starts or restarts).
FUNCTION_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
