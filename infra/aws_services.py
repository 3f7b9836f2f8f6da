"""The AWS APIs each function's code calls at run time: declared here, in one place.

The deploy gate (infra/gate) holds these declarations against two things:
- the code: every boto3 client a function's code creates (a static scan, infra/gate/clients.py) must be
  declared for that function, as a call or as a client it creates but never sends a request with;
- the template: every declared call that the function's settings switch on needs a network path (an
  interface endpoint its security group reaches, the S3 gateway endpoint with prefix-list egress, or a
  NAT route) and an IAM grant for that service.

A function added later (a new endpoint group in engram.api.routes, a new pipeline step) gets the rules
of its group; one whose code creates a client nobody declared fails the gate with the site named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engram.pipeline import steps
from infra.build import (
    ADMIN_FUNCTION,
    EXPORT_WORKER_FUNCTION,
    MIGRATE_FUNCTION,
    PIPELINE_PREFIX,
    RELAY_FUNCTION,
)

# Functions that embed text with Bedrock: memories (also those graph observations and session extraction
# create), queries (search, profile `q`), messages, procedure triggers, chunks, LLM-extracted memories.
EMBEDDING_FUNCTIONS = frozenset(
    {
        "memories",
        "search",
        "sessions",
        "procedures",
        "profile",
        "graph",
        PIPELINE_PREFIX + "embed",
        PIPELINE_PREFIX + "llm_extract",
    }
)
# The media family's extract function: images (Textract, the vision model) and audio (Transcribe).
MEDIA_EXTRACT = PIPELINE_PREFIX + steps.EXTRACT_FAMILIES["media"].function
# Functions that call the LLM: the pipeline's llm-extract step, sessions (messages with extract=full),
# memories (direct writes with extract=full, their default when the stack has an LLM), the media
# extract function when it describes images (ENGRAM_VISION), and the relay (conversation summaries).
LLM_FUNCTIONS = frozenset(
    {PIPELINE_PREFIX + "llm_extract", "sessions", "memories", MEDIA_EXTRACT, RELAY_FUNCTION}
)
# Functions that log in to the cluster as its owner with the master secret (the others: RDS Proxy).
OWNER_FUNCTIONS = frozenset({MIGRATE_FUNCTION, ADMIN_FUNCTION})
# The step functions and finish share one context (engram.deps.pipeline_context), which can build every
# client a step may need (each when a step first asks for it); only the step named uses each.
PIPELINE_CONTEXT_FUNCTIONS = frozenset(
    PIPELINE_PREFIX + f for f in (*(s.function for s in steps.STEPS), "finish")
)
# The extract functions that OCR: scanned PDF pages (documents) and images (media); media transcribes.
OCR_FUNCTIONS = frozenset(
    PIPELINE_PREFIX + steps.EXTRACT_FAMILIES[family].function for family in ("documents", "media")
)
TRANSCRIBE_FUNCTIONS = frozenset({MEDIA_EXTRACT})
TRIGGER = PIPELINE_PREFIX + steps.TRIGGER_FUNCTION

# boto3 client name -> the IAM action prefix its calls need, and the VPC endpoint service name.
IAM_PREFIX = {
    "bedrock-runtime": "bedrock:",
    "stepfunctions": "states:",
    "s3": "s3:",
    "secretsmanager": "secretsmanager:",
    "textract": "textract:",
    "transcribe": "transcribe:",
    "lambda": "lambda:",
    "sqs": "sqs:",
    "rds": "rds-db:",
    "events": "events:",
}
ENDPOINT_SERVICE = {"stepfunctions": "states"}  # where the endpoint's name is not the client's


def endpoint_service(client: str) -> str:
    return ENDPOINT_SERVICE.get(client, client)


@dataclass(frozen=True)
class ServiceUse:
    service: str  # boto3 client name
    why: str
    # Setting (engram.settings.Settings field) -> values under which the code calls the service; the
    # gate reads the function's ENGRAM_<FIELD> from the template, or the setting's default.
    when: Mapping[str, frozenset[str]] | None = None
    calls: bool = True  # False: the client is created, but this function sends no request with it


RDS_TOKEN = ServiceUse(
    "rds", "signs its IAM login token for RDS Proxy locally (generate_db_auth_token): no request", calls=False
)
MASTER_SECRET = ServiceUse("secretsmanager", "reads the master secret for each new connection")
EMBED = ServiceUse("bedrock-runtime", "embeds text", when={"embedding_provider": frozenset({"bedrock"})})
LLM = ServiceUse("bedrock-runtime", "calls the LLM", when={"llm_provider": frozenset({"bedrock"})})
BEDROCK_UNUSED = ServiceUse(
    "bedrock-runtime",
    "its collaborators build the embedder and LLM clients; it never calls them",
    calls=False,
)
DOCUMENTS = ServiceUse("s3", "reads and writes the documents bucket")
OCR = ServiceUse(
    "textract", "OCR of images and scanned PDF pages", when={"ocr_provider": frozenset({"auto", "textract"})}
)
VISION = ServiceUse(
    "bedrock-runtime",
    "describes images with the LLM",
    when={"llm_provider": frozenset({"bedrock"}), "vision": frozenset({"True", "true", "1"})},
)
TRANSCRIBE = ServiceUse(
    "transcribe", "transcribes audio", when={"transcription_provider": frozenset({"transcribe"})}
)
OCR_UNUSED = ServiceUse(
    "textract",
    "the pipeline context builds the OCR client; only the OCR extract functions call it",
    calls=False,
)
TRANSCRIBE_UNUSED = ServiceUse(
    "transcribe",
    "the pipeline context builds the transcriber; only the media extract function calls it",
    calls=False,
)
START_PIPELINE = ServiceUse("stepfunctions", "starts the ingestion state machine")
RESTORES_VECTORS = ServiceUse(
    "bedrock-runtime",
    "the import's memory writer is built with the embedder; an import restores vectors and never calls it",
    calls=False,
)

# API functions whose service is built with an embedder they never use (MemoryService for stats).
BUILDS_UNUSED_BEDROCK_CLIENT = frozenset({"stats"})

EXTRA: dict[str, tuple[ServiceUse, ...]] = {
    "documents": (DOCUMENTS, START_PIPELINE),
    "containers": (ServiceUse("s3", "deletes the stored files of the documents a deleted container held"),),
    "export": (
        ServiceUse(
            "s3",
            "records export and import requests, reads their status, presigns the files; an import's "
            "documents' files go to the documents bucket",
        ),
        RESTORES_VECTORS,
    ),
    EXPORT_WORKER_FUNCTION: (
        ServiceUse(
            "s3",
            "reads requests and uploads, writes export files and statuses; reads and writes documents' files",
        ),
        RESTORES_VECTORS,
    ),
    RELAY_FUNCTION: (ServiceUse("events", "puts change events on the stack's event bus"),),
    TRIGGER: (ServiceUse("s3", "reads each dropped object's checksum"), START_PIPELINE),
}


def declared_services(function: str) -> tuple[ServiceUse, ...]:
    """What `function` (a folder under functions/: "memories", "pipeline/extract") calls, by the rules
    of its group."""
    uses = [MASTER_SECRET] if function in OWNER_FUNCTIONS else [RDS_TOKEN]
    if function in EMBEDDING_FUNCTIONS:
        uses.append(EMBED)
    if function in LLM_FUNCTIONS:
        uses.append(VISION if function == MEDIA_EXTRACT else LLM)
    if function in PIPELINE_CONTEXT_FUNCTIONS:
        uses.append(DOCUMENTS)
        uses.append(OCR if function in OCR_FUNCTIONS else OCR_UNUSED)
        uses.append(TRANSCRIBE if function in TRANSCRIBE_FUNCTIONS else TRANSCRIBE_UNUSED)
    if function in BUILDS_UNUSED_BEDROCK_CLIENT or (
        function in PIPELINE_CONTEXT_FUNCTIONS and function not in EMBEDDING_FUNCTIONS | LLM_FUNCTIONS
    ):
        uses.append(BEDROCK_UNUSED)
    uses.extend(EXTRA.get(function, ()))
    return tuple(uses)
