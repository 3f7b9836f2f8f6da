-- Session messages go through the same extraction as documents (engram.extraction), and a tenant or
-- a container can add its own instructions to the extraction prompt.
--
-- session_messages:
--   extract_mode:     light (the offline heuristic) or full (the configured LLM) for a queued message;
--                     NULL when it was never queued (and for messages queued before this migration,
--                     which the heuristic then processes, as it did when they were queued);
--   occurred_at:      when the message was said, if the client says so (an imported conversation);
--                     NULL: when it was received. Extraction resolves relative dates against it;
--   extraction_error: why extraction failed for good (the LLM's answer stayed unusable), with
--                     extraction = 'failed'. A transient failure leaves the message queued.
-- Columns of an existing table: its RLS policy and grants (0002) already cover them.

ALTER TABLE session_messages
    ADD COLUMN extract_mode text CHECK (extract_mode IN ('light', 'full')),
    ADD COLUMN occurred_at timestamptz,
    ADD COLUMN extraction_error text,
    DROP CONSTRAINT session_messages_extraction_check,
    ADD CONSTRAINT session_messages_extraction_check
        CHECK (extraction IN ('none', 'queued', 'done', 'failed'));

-- Custom extraction instructions: for the whole tenant (container NULL) or for one container, whose
-- memories then follow the tenant's, each ancestor's and its own, in that order. Deleting or archiving
-- the container removes its instructions.
CREATE TABLE extraction_instructions (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    container     text COLLATE "C",
    instructions  text NOT NULL CHECK (length(btrim(instructions)) > 0 AND length(instructions) <= 2000),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (tenant_id, container),
    FOREIGN KEY (tenant_id, container) REFERENCES containers (tenant_id, name) ON DELETE CASCADE
);

ALTER TABLE extraction_instructions ENABLE ROW LEVEL SECURITY;
ALTER TABLE extraction_instructions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON extraction_instructions
    USING (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('engram.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON extraction_instructions TO engram_app;
