"""Rendering the extraction prompt (prompt.md, the one place its wording lives) and the messages."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from engram.limits import MAX_INSTRUCTION_CHARS
from engram.memory_extraction.base import ExtractionContext

# The example shown to the model. A test validates it against ExtractionPayload, so the prompt and
# the schema cannot drift apart.
EXAMPLE: dict[str, Any] = {
    "memories": [
        {
            "content": "Alice Smith moved from Paris to Berlin.",
            "memory_type": "fact",
            "confidence": 0.9,
            "entities": [
                {"name": "Alice Smith", "type": "person", "aliases": ["Alice"]},
                {"name": "Berlin", "type": "place", "aliases": []},
                {"name": "Paris", "type": "place", "aliases": []},
            ],
            "subject": "Alice Smith",
            "relations": [
                {
                    "source": "Alice Smith",
                    "relation": "lives_in",
                    "target": "Berlin",
                    "valid_from": "2025-03-03",
                    "valid_to": None,
                    "confidence": 0.9,
                }
            ],
            "valid_from": "2025-03-03",
            "expires_at": None,
            "source_chunk": 0,
        }
    ]
}
NO_INSTRUCTIONS = "None."


@cache
def template() -> str:
    return resources.files("engram.memory_extraction").joinpath("prompt.md").read_text(encoding="utf-8")


def system_prompt(context: ExtractionContext) -> str:
    instructions = [
        " ".join(text.replace("\x00", "").split())[:MAX_INSTRUCTION_CHARS]
        for text in context.instructions
        if text and text.strip()
    ]
    slots = {
        "example": json.dumps(EXAMPLE, indent=2),
        "max_memories": str(context.max_memories),
        "custom_instructions": "\n".join(f"- {text}" for text in instructions) or NO_INSTRUCTIONS,
    }
    rendered = template()
    for name, value in slots.items():
        rendered = rendered.replace("{{" + name + "}}", value)
    return rendered


def user_message(text: str, context: ExtractionContext) -> str:
    when = context.reference_time.isoformat() if context.reference_time else "unknown"
    kind = "the document's date" if context.source == "document" else "the message's time"
    lines = [f"Reference time: {when} ({kind})", f"Source: a {context.source}"]
    if context.title:
        lines[-1] += f" titled {json.dumps(' '.join(context.title.split())[:200], ensure_ascii=False)}"
    if context.chunks:
        lines.append(f"Sections: {', '.join(map(str, context.chunks))}")
    # Closing tags inside the text cannot end the data section early.
    body = text.replace("</text", "<_/text")
    return "\n".join(lines) + f"\n\n<text>\n{body}\n</text>"


def repair_message(problem: str) -> str:
    return (
        "Your answer could not be used: "
        + problem
        + "\nAnswer again with only the corrected JSON object, in exactly the documented shape."
    )
