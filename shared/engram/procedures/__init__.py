"""Procedural memory: rules and few-shot examples, found by how well their trigger fits a situation."""
