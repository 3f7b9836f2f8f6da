"""Multi-agent plans and the context of their tasks."""
