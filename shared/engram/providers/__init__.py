"""Embedding (and, later, LLM) providers behind small Protocols."""
