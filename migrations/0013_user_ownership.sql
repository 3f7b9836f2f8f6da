-- Whose rows are whose: a user's data can be found, and erased, whatever kind it is.
--
-- Memories, sessions (and their messages) and plans already name their user (user_id). Working state,
-- procedures and documents now may too: the user a working key, a rule or an uploaded document
-- belongs to. DELETE /v1/users/{user_id} (engram.users) removes every row of the user in one
-- transaction; each index below lets it find them without reading the tenant's other rows.
-- Who may read the rows does not change: the columns only say whose they are.

ALTER TABLE working_memory ADD COLUMN user_id text CHECK (length(user_id) BETWEEN 1 AND 255);
CREATE INDEX working_memory_tenant_user_idx ON working_memory (tenant_id, user_id) WHERE user_id IS NOT NULL;

ALTER TABLE procedures ADD COLUMN user_id text CHECK (length(user_id) BETWEEN 1 AND 255);
CREATE INDEX procedures_tenant_user_idx ON procedures (tenant_id, user_id) WHERE user_id IS NOT NULL;

ALTER TABLE documents ADD COLUMN user_id text CHECK (length(user_id) BETWEEN 1 AND 255);
CREATE INDEX documents_tenant_user_idx ON documents (tenant_id, user_id) WHERE user_id IS NOT NULL;
