"""Containers: the dot-separated namespaces memories live in, as a tree."""
