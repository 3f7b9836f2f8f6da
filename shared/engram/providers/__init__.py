"""Embedding and LLM providers behind small Protocols."""
