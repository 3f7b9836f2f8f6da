"""Request and response models of the extraction-instructions API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints

from engram.fields import NoNul, not_blank
from engram.lazymodel import LazyModel
from engram.limits import MAX_INSTRUCTION_CHARS
from engram.memories.models import ContainerName

# Kept exactly as sent (whitespace included); blank instructions are refused.
InstructionText = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_INSTRUCTION_CHARS), *NoNul, AfterValidator(not_blank)
]


class InstructionsSet(LazyModel):
    model_config = ConfigDict(extra="forbid")

    container: ContainerName | None = Field(
        default=None, description="the container (and everything below it); null for the whole tenant"
    )
    instructions: InstructionText = Field(
        description="added to the LLM extraction prompt (extract=full) for memories of this scope, "
        "e.g. 'Record dietary restrictions as preferences.' They refine what is extracted; they cannot "
        "change the output format, the rules, or where memories are stored"
    )


class Instructions(LazyModel):
    container: str | None = Field(description="null: the whole tenant")
    instructions: str
    created_at: datetime
    updated_at: datetime


class InstructionsList(LazyModel):
    instructions: list[Instructions] = Field(
        description="without ?container=: every scope's instructions; with it: the ones that apply to "
        "that container, in the order the prompt lists them (the tenant's, each ancestor's, its own)"
    )
