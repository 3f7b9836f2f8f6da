"""Memories: storage, retrieval and hybrid search."""
