-- How a document's memories are extracted, when its content was written, and what extraction cost.
--   extract_mode:  none (chunks only), light (the offline heuristic) or full (the configured LLM);
--   document_date: the content's own time (sent with the document); extraction resolves relative
--                  dates against it and uses it as valid_from when the text states none. NULL: the
--                  time the document was received;
--   extraction:    what the llm-extract step used and spent: {"extractor", "input_tokens",
--                  "output_tokens", "llm_calls"}. Empty until the step has run.
-- Columns of an existing table: its RLS policy and grants (0003) already cover them.

ALTER TABLE documents
    ADD COLUMN extract_mode text NOT NULL DEFAULT 'light' CHECK (extract_mode IN ('none', 'light', 'full')),
    ADD COLUMN document_date timestamptz,
    ADD COLUMN extraction jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(extraction) = 'object');
