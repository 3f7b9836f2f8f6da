"""One scenario per operation group, through the generated client: every operation of the API is
called at least once, every success status it documents is produced, and the answers are what a
user would expect. The contract tests run them against the local stack over HTTP."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import boto3
from moto import mock_aws

from engram import deps
from tests.contract.generated import GeneratedApi

REGION = "eu-west-1"


@contextmanager
def aws(**settings: Any) -> Iterator[Any]:
    """The functions' settings as in AWS, against moto's S3 (for the two answers only AWS gives)."""
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in ("engram-documents", "engram-exports"):
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        previous = deps.current()
        changed = previous.settings.model_copy(update={"aws_region": REGION, **settings})
        deps.install(
            deps.Deps(
                settings=changed,
                database=previous.database,
                embedder=previous.embedder,
                invoke_step=previous.invoke_step,
            )
        )
        try:
            yield s3
        finally:
            deps.install(previous)


def health_and_stats(api: GeneratedApi) -> None:
    assert api.expect(200, "Health", "get_health").status == "ok"
    api.expect(
        201, "CreatedMemory", "create_memory", body=api.body("MemoryCreate", {"content": "Tea at five"})
    )
    stats = api.expect(200, "Stats", "get_stats")
    assert stats.total == 1


def memories(api: GeneratedApi) -> None:
    first = api.expect(
        201,
        "CreatedMemory",
        "create_memory",
        body=api.body(
            "MemoryCreate", {"content": "Alice lives in Paris", "container": "crm", "tags": ["people"]}
        ),
    )
    newer = api.expect(
        201,
        "CreatedMemory",
        "create_memory",
        body=api.body(
            "MemoryCreate",
            {"content": "Alice lives in Rome", "container": "crm", "supersedes": str(first.id)},
        ),
    )
    assert newer.superseded == [first.id]
    batch = api.expect(
        201,
        "MemoryBatchResult",
        "create_memories",
        body=api.body(
            "MemoryBatch",
            {"memories": [{"content": "Carol plays chess"}, {"content": "Dan sings", "user_id": "dan"}]},
        ),
    )
    assert [m.content for m in batch.memories] == ["Carol plays chess", "Dan sings"]
    api.expect(
        201, "UpsertResult", "upsert_memory", body=api.body("MemoryUpsert", {"content": "Bob likes jazz"})
    )
    same = api.expect(
        200, "UpsertResult", "upsert_memory", body=api.body("MemoryUpsert", {"content": "Bob likes jazz"})
    )
    assert same.status.value == "unchanged"
    page = api.expect(200, "MemoryPage", "list_memories", body=api.body("ListRequest", {"container": "crm"}))
    assert [m.id for m in page.memories] == [newer.id]
    found = api.expect(
        200, "SearchResponse", "search", body=api.body("SearchRequest", {"query": "where does Alice live"})
    )
    assert found.results[0].id == newer.id
    assert api.expect(200, "Memory", "get_memory", str(newer.id)).content == "Alice lives in Rome"
    patched = api.expect(
        200,
        "CreatedMemory",
        "update_memory",
        str(newer.id),
        body=api.body("MemoryPatch", {"tags": ["moved"]}),
    )
    assert patched.tags == ["moved"] and patched.superseded == []
    history = api.expect(200, "MemoryHistory", "get_memory_history", str(newer.id))
    assert [v.id for v in history.versions] == [first.id, newer.id]
    related = api.expect(200, "RelatedMemories", "get_related_memories", str(newer.id))
    assert first.id in {r.id for r in related.related}
    reverted = api.expect(200, "Memory", "revert_memory", str(first.id))
    assert reverted.is_latest is True
    api.expect(204, None, "delete_memory", str(newer.id))
    api.expect(404, "ErrorResponse", "get_memory", str(newer.id))


def sessions(api: GeneratedApi) -> None:
    session = api.expect(201, "Session", "create_session", body=api.body("SessionCreate", {"user_id": "ann"}))
    sid = str(session.id)
    appended = api.expect(
        201,
        "AppendResult",
        "add_messages",
        sid,
        user_id="ann",
        body=api.body(
            "MessagesAppend",
            {
                "messages": [
                    {"role": "user", "content": "I moved to Oslo."},
                    {"role": "assistant", "content": "Noted."},
                ]
            },
        ),
    )
    assert [m.seq for m in appended.messages] == [1, 2]
    conversation = api.expect(200, "Conversation", "get_session", sid, user_id="ann")
    assert [m.content for m in conversation.messages] == ["I moved to Oslo.", "Noted."]
    listed = api.expect(200, "SessionPage", "list_sessions", user_id="ann")
    assert [s.id for s in listed.sessions] == [session.id]
    recent = api.expect(200, "RecentMessages", "get_recent_messages", sid, user_id="ann", limit=1)
    assert [m.content for m in recent.messages] == ["Noted."]
    report = api.expect(200, "ExtractionReport", "extract_session", sid, user_id="ann")
    assert report.status.value == "nothing_queued"
    api.expect(204, None, "delete_session", sid, user_id="ann")
    api.expect(404, "ErrorResponse", "get_session", sid, user_id="ann")


def documents(api: GeneratedApi) -> None:
    accepted = api.expect(
        202,
        "DocumentAccepted",
        "create_document",
        body=api.body(
            "DocumentCreate", {"content": "# Runbook\n\nDeploys happen on Mondays.", "filename": "r.md"}
        ),
    )
    upload = api.models.UploadDocumentFilesBody(
        file=api.types.File(payload=io.BytesIO(b"name,city\nAnn,Oslo\n"), file_name="people.csv"),
        container="crm",
    )
    uploaded = api.expect(202, "DocumentAccepted", "upload_document", body=upload)
    document = api.expect(200, "Document", "get_document", str(accepted.id))
    assert document.id == accepted.id
    page = api.expect(200, "DocumentPage", "list_documents", body=api.body("DocumentListRequest", {}))
    assert {d.id for d in page.documents} == {accepted.id, uploaded.id}
    with aws(documents_bucket="engram-documents"):
        ticket = api.expect(
            200, "UploadTicket", "upload_document", body=api.body("UploadRequest", {"filename": "a.pdf"})
        )
    assert ticket.url.startswith("https://") and ticket.key.endswith("/default/a.pdf")
    api.expect(204, None, "delete_document", str(accepted.id))
    api.expect(404, "ErrorResponse", "get_document", str(accepted.id))


def graph(api: GeneratedApi) -> None:
    ann = api.expect(
        201,
        "Entity",
        "create_entity",
        body=api.body("EntityCreate", {"name": "Ann Lee", "entity_type": "person"}),
    )
    again = api.expect(
        200,
        "Entity",
        "create_entity",
        body=api.body("EntityCreate", {"name": "Ann Lee", "entity_type": "person"}),
    )
    assert again.id == ann.id
    memory = api.expect(
        201, "CreatedMemory", "create_memory", body=api.body("MemoryCreate", {"content": "Ann Lee likes tea"})
    )
    api.expect(
        201,
        "Observation",
        "add_observation",
        str(ann.id),
        body=api.body("ObservationCreate", {"memory_id": str(memory.id)}),
    )
    relation_body = {
        "source": str(ann.id),
        "relation_type": "lives_in",
        "target": {"name": "Oslo", "entity_type": "place"},
    }
    relation = api.expect(201, "Relation", "create_relation", body=api.body("RelationCreate", relation_body))
    api.expect(200, "Relation", "create_relation", body=api.body("RelationCreate", relation_body))
    found = api.expect(200, "EntityPage", "list_entities", q="Ann")
    assert ann.id in {e.id for e in found.entities}
    detail = api.expect(200, "EntityDetail", "get_entity", str(ann.id))
    assert detail.entity.id == ann.id
    subgraph = api.expect(200, "Subgraph", "get_graph", entity="Ann Lee")
    assert subgraph.root == ann.id and len(subgraph.nodes) >= 2
    api.expect(204, None, "delete_observation", str(ann.id), str(memory.id))
    api.expect(204, None, "delete_relation", str(relation.id))
    api.expect(204, None, "delete_entity", str(ann.id))


def working(api: GeneratedApi) -> None:
    body = api.body("WorkingPut", {"value": {"step": 1}})
    created = api.expect(201, "WorkingItem", "set_working", "plan-1", "state", body=body)
    updated = api.expect(
        200,
        "WorkingItem",
        "set_working",
        "plan-1",
        "state",
        body=api.body("WorkingPut", {"value": {"step": 2}}),
        if_match=str(created.version),
    )
    stale = api.expect(
        409, "ErrorResponse", "set_working", "plan-1", "state", body=body, if_match=str(created.version)
    )
    assert stale.error.code == "version_conflict" and stale.error.current_version == updated.version
    assert api.expect(200, "WorkingItem", "get_working", "plan-1", "state").version == updated.version
    api.expect(201, "WorkingItem", "set_working", "plan-1", "other", body=body)
    listed = api.expect(200, "WorkingScope", "list_working", "plan-1")
    assert [i.key for i in listed.items] == ["other", "state"]
    api.expect(204, None, "delete_working", "plan-1", "other", if_match="1")
    cleared = api.expect(200, "ScopeCleared", "clear_working", "plan-1")
    assert cleared.deleted == 1


def procedures(api: GeneratedApi) -> None:
    created = api.expect(
        201,
        "Procedure",
        "create_procedure",
        body=api.body(
            "ProcedureCreate", {"trigger": "a refund is requested", "content": "check the order date"}
        ),
    )
    pid = str(created.id)
    assert api.expect(200, "ProcedurePage", "list_procedures").procedures[0].id == created.id
    matched = api.expect(
        200,
        "MatchResponse",
        "match_procedures",
        body=api.body("MatchRequest", {"situation": "customer wants a refund"}),
    )
    assert matched.matches[0].id == created.id
    assert api.expect(200, "Procedure", "get_procedure", pid).trigger == "a refund is requested"
    patched = api.expect(
        200, "Procedure", "update_procedure", pid, body=api.body("ProcedurePatch", {"tags": ["billing"]})
    )
    assert patched.tags == ["billing"]
    api.expect(204, None, "delete_procedure", pid)


def profile(api: GeneratedApi) -> None:
    api.expect(
        201,
        "CreatedMemory",
        "create_memory",
        body=api.body("MemoryCreate", {"content": "Ann prefers tea", "user_id": "ann"}),
    )
    built = api.expect(200, "Profile", "get_profile", user_id="ann")
    assert "Ann prefers tea" in built.context
    turn = api.expect(
        200,
        "AgentContext",
        "get_context",
        body=api.body("ContextRequest", {"query": "what does Ann drink?", "user_id": "ann"}),
    )
    assert "Ann prefers tea" in turn.context and turn.items[0].source == "memory"


def webhooks(api: GeneratedApi) -> None:
    created = api.expect(
        201,
        "WebhookCreated",
        "create_webhook",
        body=api.body("WebhookCreate", {"url": "https://example.com/hook", "events": ["memory.created"]}),
    )
    assert created.secret.startswith("whsec_")
    assert [w.id for w in api.expect(200, "WebhookList", "list_webhooks").webhooks] == [created.id]
    detail = api.expect(200, "WebhookDetail", "get_webhook", created.id)
    assert detail.deliveries.failed == 0 and detail.recent_failures == []
    api.expect(204, None, "delete_webhook", created.id)
    api.expect(404, "ErrorResponse", "get_webhook", created.id)
    with aws(event_bus_name="engram-dev-events"):
        api.expect(
            409,
            "ErrorResponse",
            "create_webhook",
            body=api.body("WebhookCreate", {"url": "https://example.com/h", "events": ["document.done"]}),
        )


def containers(api: GeneratedApi) -> None:
    api.expect(201, "Container", "create_container", body=api.body("ContainerCreate", {"name": "crm"}))
    api.expect(200, "Container", "create_container", body=api.body("ContainerCreate", {"name": "crm"}))
    api.expect(
        201,
        "Container",
        "create_container",
        body=api.body("ContainerCreate", {"name": "old", "parent": "crm"}),
    )
    tree = api.expect(200, "ContainerTree", "list_containers")
    assert [c.name for c in tree.containers] == ["crm"]
    api.expect(200, "ContainerArchived", "archive_container", "crm.old")
    api.expect(200, "ContainerDeleted", "delete_container", "crm", confirm=True)
    instructions = api.body("InstructionsSet", {"instructions": "Keep dates."})
    api.expect(201, "Instructions", "set_extraction_instructions", body=instructions)
    api.expect(200, "Instructions", "set_extraction_instructions", body=instructions)
    assert len(api.expect(200, "InstructionsList", "list_extraction_instructions").instructions) == 1
    api.expect(204, None, "delete_extraction_instructions")
    api.expect(
        201,
        "CreatedMemory",
        "create_memory",
        body=api.body("MemoryCreate", {"content": "Eve likes figs", "user_id": "eve"}),
    )
    preview = api.expect(409, "ErrorResponse", "erase_user", "eve")
    assert preview.error.code == "confirmation_required"
    erased = api.expect(200, "UserErasure", "erase_user", "eve", confirm=True)
    assert (erased.erased, erased.memories) == (True, 1)


def export(api: GeneratedApi) -> None:
    api.expect(
        201, "CreatedMemory", "create_memory", body=api.body("MemoryCreate", {"content": "Exported fact"})
    )
    lines = api.expect(200, "bytes", "export").decode().splitlines()
    assert '"record":"header"' in lines[0] and any("Exported fact" in line for line in lines)
    api.expect(404, "ErrorResponse", "get_export", "0" * 32)
    with aws(export_bucket="engram-exports") as s3:
        job = api.expect(202, "ExportJob", "export", body=api.body("ExportRequest", {}))
        running = api.expect(200, "ExportJob", "get_export", job.id)
        listed = s3.list_objects_v2(Bucket="engram-exports")["Contents"]
        request = next(o["Key"] for o in listed if o["Key"].endswith(f"/{job.id}.request.json"))
        jobs = deps.export_jobs()
        assert jobs is not None
        jobs.run(deps.export_service(), request)  # what the export worker does with the request
        done = api.expect(200, "ExportJob", "get_export", job.id)
    assert running.status == "running" and done.status == "done"
    assert done.counts.additional_properties["memory"] == 1


def import_tenant(api: GeneratedApi) -> None:
    api.expect(
        201, "CreatedMemory", "create_memory", body=api.body("MemoryCreate", {"content": "Imported fact"})
    )
    lines = api.expect(200, "bytes", "export")
    body = SimpleNamespace(payload=lines)  # the generated client sends `body.payload` as it is
    again = api.expect(200, "ImportReport", "import_tenant", body=body)
    copied = api.expect(200, "ImportReport", "import_tenant", body=body, new_ids=True)
    assert again.inserted.additional_properties == {} and again.skipped.additional_properties["memory"] == 1
    assert copied.inserted.additional_properties["memory"] == 1 and copied.new_ids
    api.expect(422, "ErrorResponse", "import_tenant", body=SimpleNamespace(payload=b""))
    api.expect(409, "ErrorResponse", "import_tenant", upload=True)  # uploads are AWS's
    api.expect(404, "ErrorResponse", "get_import", "0" * 32)
    with aws(export_bucket="engram-exports") as s3:
        job = api.expect(202, "ImportJob", "import_tenant", upload=True)
        waiting = api.expect(200, "ImportJob", "get_import", job.id)
        listed = s3.list_objects_v2(Bucket="engram-exports")["Contents"]
        tenant_prefix = next(o["Key"] for o in listed if job.id in o["Key"]).rsplit("/", 1)[0]
        key = f"{tenant_prefix}/{job.id}.jsonl"
        s3.put_object(Bucket="engram-exports", Key=key, Body=lines)  # the client's PUT
        jobs = deps.import_jobs()
        assert jobs is not None
        jobs.run(deps.import_service(), key)  # what the export worker does with the upload
        done = api.expect(200, "ImportJob", "get_import", job.id)
    assert waiting.status == "awaiting_upload" and done.status == "done"


def plans(api: GeneratedApi) -> None:
    plan = api.expect(
        201,
        "Plan",
        "create_plan",
        body=api.body("PlanCreate", {"plan_id": "trip-1", "goal_event": "trip.requested"}),
    )
    api.expect(
        409,
        "ErrorResponse",
        "create_plan",
        body=api.body("PlanCreate", {"plan_id": "trip-1", "goal_event": "x"}),
    )
    updated = api.expect(
        200,
        "Plan",
        "update_plan",
        "trip-1",
        body=api.body("PlanUpdate", {"status": "running"}),
        if_match=str(plan.version),
    )
    assert api.expect(200, "Plan", "get_plan", "trip-1").version == updated.version == 2
    created = api.expect(
        201,
        "Plan",
        "update_plan",
        "trip-2",
        body=api.body("PlanUpdate", {"goal_event": "trip.requested"}),
        if_match="0",
    )
    assert created.version == 1
    assert [p.plan_id for p in api.expect(200, "PlanPage", "list_plans", status="running").plans] == [
        "trip-1"
    ]
    task = api.expect(
        201,
        "TaskContext",
        "create_task_context",
        body=api.body(
            "TaskContextCreate",
            {"task_id": "book-1", "plan_id": "trip-1", "event_type": "book", "sub_tasks": ["f-1"]},
        ),
    )
    assert api.expect(200, "TaskContext", "find_task_context_by_subtask", "f-1").task_id == "book-1"
    assert api.expect(200, "TaskContext", "get_task_context", "book-1").version == task.version
    api.expect(
        200,
        "TaskContext",
        "update_task_context",
        "book-1",
        body=api.body("TaskContextUpdate", {"state": "waiting"}),
    )
    api.expect(
        201,
        "TaskContext",
        "update_task_context",
        "book-2",
        body=api.body("TaskContextUpdate", {"event_type": "book"}),
        if_match="0",
    )
    assert len(api.expect(200, "TaskContextPage", "list_task_contexts", plan_id="trip-1").task_contexts) == 1
    api.expect(204, None, "delete_task_context", "book-1")
    api.expect(204, None, "delete_plan", "trip-1", if_match="2")


SCENARIOS: dict[str, Callable[[GeneratedApi], None]] = {
    "health_and_stats": health_and_stats,
    "memories": memories,
    "sessions": sessions,
    "documents": documents,
    "graph": graph,
    "working": working,
    "procedures": procedures,
    "profile": profile,
    "containers": containers,
    "export": export,
    "import_tenant": import_tenant,
    "plans": plans,
    "webhooks": webhooks,
}
