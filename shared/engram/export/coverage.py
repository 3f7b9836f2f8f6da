"""Which table each record kind carries, and what the export leaves out on purpose, with why. A test
(tests/integration/test_export_coverage.py) reads the tenant tables and their columns from the catalogue
and fails on any table or column that is neither exported nor listed here, so a new one is never
forgotten: export it (a record kind) or say here why it stays behind."""

from __future__ import annotations

# record kind -> the table it holds (its fields are the table's columns, but tenant_id). document_file
# holds the bytes of a document's stored file, which live in the blob store, not in a table.
TABLE_OF: dict[str, str | None] = {
    "container": "containers",
    "instruction": "extraction_instructions",
    "document": "documents",
    "document_file": None,
    "chunk": "chunks",
    "session": "sessions",
    "message": "session_messages",
    "summary": "session_summaries",
    "memory": "memories",
    "memory_source": "memory_sources",
    "relationship": "memory_relationships",
    "entity": "entities",
    "entity_key": "entity_keys",
    "mention": "entity_mentions",
    "relation": "entity_relations",
    "working": "working_memory",
    "procedure": "procedures",
    "plan": "plans",
    "task_context": "task_contexts",
}

NOT_EXPORTED: dict[str, str] = {
    "tenants": "the tenant itself: the import decides which tenant the records go to",
    "api_keys": "credentials of one deployment; never leave it (make keys on the target)",
    "webhooks": "a deployment's delivery settings with their signing secrets; register them on the target",
    "webhook_deliveries": "attempts to deliver to this deployment's webhooks: operational",
    "change_events": "the outbox: events waiting for delivery here; an import records none",
    "summary_queue": "sessions waiting for the relay; the summaries themselves are exported",
    "memory_periods": "derived from each memory's content, metadata and valid_from "
    "(engram.memories.periods); the import's memory writer derives them again",
    "text_postings": "the BM25 text index (migrations/0014), derived from memories' and chunks' text by "
    "triggers in the writing transaction: an import's inserts rebuild it",
    "text_stats": "the BM25 statistics per tenant, derived as text_postings is",
    "text_stat_deltas": "pending changes to text_stats, derived as text_postings is",
    "embedding_staging": "a re-embedding in progress (`engram reembed`, migrations/0024): vectors of another "
    "model not yet searched; the target re-embeds with its own model",
    "tenant_embedding_models": "which model this deployment searches the tenant with (`engram reembed`): "
    "the target embeds with its own configured model",
}

# table -> column -> why it is not in its record
COLUMNS_NOT_EXPORTED: dict[str, dict[str, str]] = {
    "documents": {
        "blob_key": "where the original bytes are in this deployment's store; they travel as a document_file "
        "record (with_files) and get a key in the target's store",
        "blob_version": "the S3 version of blob_key, meaningful in this deployment only",
    },
}
