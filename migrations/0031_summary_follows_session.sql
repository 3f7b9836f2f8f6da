-- A session's summary is seen exactly when its session is.
--
-- 0016 gave session_summaries a copy of 0002's party_scope on sessions, written before 0012 changed
-- that rule: a request naming neither user nor agent reached the session and its messages by id, but
-- not its summary (GET /v1/sessions/{id} answered "summary": null, /v1/context left it out). Rather
-- than a second copy of the rule, the summary's policy now asks whether its session is visible: the
-- subquery reads sessions under sessions' own policies (the tenant's and party_scope, as 0012 defines
-- it), so the one rule decides both, and any later change to it carries over. The copied user_id and
-- agent_id stay (erasing a user finds its rows by user_id).

DROP POLICY party_scope ON session_summaries;
CREATE POLICY party_scope ON session_summaries AS RESTRICTIVE TO engram_app
    USING (EXISTS (SELECT 1 FROM sessions s
                   WHERE s.tenant_id = session_summaries.tenant_id AND s.id = session_summaries.session_id));
