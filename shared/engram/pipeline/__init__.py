"""Ingestion: extract -> chunk -> embed -> llm-extract -> graph-link, as plain functions.

The step list lives in `engram.pipeline.steps`; the Step Functions definition (infra) and the local
runner both read it, so they always run the same steps in the same order.
"""
