"""No document stays unfinished: the sweeper fails stale ones, the execution-ended event fails one whose
execution timed out, `engram local` resumes what a previous run left, and superseded runs write nothing."""

from __future__ import annotations

import json
from uuid import UUID

from engram import deps
from engram.local.functions import invoke_pipeline_step
from engram.local.stack import LocalDatabase
from engram.pipeline.finish import run_finish
from engram.pipeline.runner import LocalRunner
from engram.pipeline.sweep import resume, sweep
from engram.tenants.service import IssuedKey
from tests.integration.pipeline_helpers import RecordingStarter, document, leftovers, register


def _age(local_db: LocalDatabase, tenant_id: UUID, document_id: UUID, minutes: int) -> None:
    with local_db.app.tenant(tenant_id) as cur:
        cur.execute(
            "UPDATE documents SET updated_at = now() - make_interval(mins => %s) WHERE id = %s",
            (minutes, document_id),
        )


def test_the_sweeper_fails_documents_stuck_for_too_long(
    tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    stuck = register(tenant.tenant_id, b"Never started because the trigger crashed.", "a.txt")
    recent = register(other_tenant.tenant_id, b"Queued a moment ago and still fine.", "b.txt")
    _age(local_db, tenant.tenant_id, stuck.document_id, 500)

    failed = sweep(local_db.app, older_than_minutes=120)

    assert failed >= 1
    row = document(local_db.app, stuck)
    assert (row["status"], row["error_code"]) == ("failed", "stale")
    assert "send it again" in row["error"]
    assert document(local_db.app, recent)["status"] == "queued"


def test_a_timed_out_execution_fails_its_document(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref = register(tenant.tenant_id, b"The execution of this one timed out halfway through.", "c.txt")
    event = {
        "source": "aws.states",
        "detail-type": "Step Functions Execution Status Change",
        "detail": {"status": "TIMED_OUT", "input": json.dumps(ref.to_event())},
    }

    result = run_finish(deps.pipeline_context(), event)
    again = run_finish(deps.pipeline_context(), event)  # EventBridge may deliver twice

    row = document(local_db.app, ref)
    assert (result["changed"], again["changed"]) == (True, False)
    assert (row["status"], row["error_code"], row["error"]) == (
        "failed",
        "execution_timed_out",
        "the pipeline execution timed out",
    )


def test_local_start_resumes_unfinished_documents(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref = register(
        tenant.tenant_id, b"The local stack stopped while this document was being chunked.", "d.txt"
    )
    with local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute("UPDATE documents SET status = 'chunking' WHERE id = %s", (ref.document_id,))
    starter = RecordingStarter()

    resume(local_db.app, starter)
    (resumed,) = [r for r, _ in starter.started if r.document_id == ref.document_id]
    status = LocalRunner(invoke_pipeline_step, sleep=lambda s: None).run(resumed)

    assert status == "done"
    assert document(local_db.app, ref)["status"] == "done"


def test_a_superseded_run_writes_nothing(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref = register(tenant.tenant_id, b"First revision of a document that is replaced mid-run.", "e.txt")
    with local_db.app.tenant(tenant.tenant_id) as cur:  # queued again meanwhile (an upsert)
        cur.execute("UPDATE documents SET revision = revision + 1 WHERE id = %s", (ref.document_id,))

    status = LocalRunner(invoke_pipeline_step, sleep=lambda s: None).run(ref)

    row = document(local_db.app, ref)
    assert status == "failed"  # this run stops ...
    assert (row["status"], row["revision"]) == ("queued", ref.revision + 1)  # ... the newer one is untouched
    assert leftovers(local_db.app, ref) == {"chunks": 0, "sources": 0, "memories": 0}
