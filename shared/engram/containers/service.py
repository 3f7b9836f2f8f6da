"""Container logic: the tree with counts, creation, deletion with confirmation, archiving. No SQL."""

from __future__ import annotations

import re
from uuid import UUID

from engram.containers import repo
from engram.containers.models import (
    Container,
    ContainerArchived,
    ContainerCreate,
    ContainerDeleted,
    ContainerNode,
    ContainerTree,
)
from engram.db.database import EVERYONE, Database
from engram.documents.blobs import BlobStore, work_prefix_of
from engram.errors import Conflict, InvalidInput, NotFound
from engram.graph import repo as graph_repo
from engram.memories.models import CONTAINER_PATTERN
from engram.memories.predicates import ContainerScope
from engram.observability import logger


class ConfirmationRequired(Conflict):
    code = "confirmation_required"


class ContainerService:
    def __init__(self, db: Database, blobs: BlobStore, *, work_prefix: str) -> None:
        self.db = db
        self.blobs = blobs  # the deleted documents' stored files
        self.work_prefix = work_prefix

    def tree(self, tenant_id: UUID) -> ContainerTree:
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            rows = repo.tree_rows(cur, tenant_id)
        nodes = {row["name"]: ContainerNode(**row, total_count=0, children=[]) for row in rows}
        roots: list[ContainerNode] = []
        for node in nodes.values():  # ordered by name: a parent always comes before its children
            if node.parent is not None and node.parent in nodes:
                nodes[node.parent].children.append(node)
            else:
                roots.append(node)
        for root in roots:
            _total(root)
        return ContainerTree(containers=roots, total_memories=sum(r.total_count for r in roots))

    def create(self, tenant_id: UUID, request: ContainerCreate) -> tuple[Container, bool]:
        name = request.full_name()
        if not re.fullmatch(CONTAINER_PATTERN, name):
            raise InvalidInput(
                f"{name!r} is not a valid container name: at most 8 dot-separated parts of letters, digits, "
                "'_' and '-'",
                details={"field": "name"},
            )
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            if request.parent is not None and repo.get(cur, tenant_id, request.parent) is None:
                raise NotFound(f"parent container {request.parent!r} not found")
            row, created = repo.create(cur, tenant_id, name, request.description_sent())
        return Container(**row), created

    def delete(self, tenant_id: UUID, name: str, *, confirm: bool) -> ContainerDeleted:
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            if repo.get(cur, tenant_id, name) is None:
                raise _not_found(name)
            memories, children, held = repo.count_contents(cur, tenant_id, name)
            if (memories or children or held) and not confirm:
                raise ConfirmationRequired(
                    f"container {name!r} holds {memories} memories, {held} documents and {children} "
                    "sub-containers; repeat with ?confirm=true to delete them all",
                    details={"memories": memories, "documents": held, "containers": children},
                )
            # What DELETE of a memory or a document does to the entities extraction made from them
            # (graph.repo.delete_orphaned), for every memory of the subtree (its documents' included).
            mentioned = graph_repo.mentioned_in(cur, tenant_id, ContainerScope.subtree(name))
            containers, deleted, documents = repo.delete_subtree(cur, tenant_id, name)
            graph_repo.delete_orphaned(cur, tenant_id, mentioned)
        for document_id in documents:
            try:
                self.blobs.delete_prefix(work_prefix_of(self.work_prefix, tenant_id, document_id))
            except Exception:  # the rows are gone; files left behind are logged, as for one document
                logger.exception(
                    "could not delete a document's stored files", extra={"document_id": str(document_id)}
                )
        return ContainerDeleted(
            deleted=name, containers=containers, memories=deleted, documents=len(documents)
        )

    def archive(self, tenant_id: UUID, name: str) -> ContainerArchived:
        parent = name.rpartition(".")[0]
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            if repo.get(cur, tenant_id, name) is None:
                raise _not_found(name)
            if not parent:
                raise Conflict(f"container {name!r} is top-level: there is no parent to archive it into")
            removed, moved, documents = repo.archive_subtree(cur, tenant_id, name, parent)
        return ContainerArchived(
            archived=name, into=parent, containers=removed, memories=moved, documents=documents
        )


def _total(node: ContainerNode) -> int:
    node.total_count = node.memory_count + sum(_total(child) for child in node.children)
    return node.total_count


def _not_found(name: str) -> NotFound:
    return NotFound(f"container {name!r} not found")
