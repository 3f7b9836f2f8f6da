"""`LLMExtractor`: the prompt, one LLM call, strict validation, and at most one repair.

A malformed or hostile answer (not JSON, schema violations, fields such as `tenant_id` or `container`)
is sent back once with the validation errors. If the second answer is no better, `ExtractionFailed` is
raised and nothing is returned: the caller writes no partial rows.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from engram.errors import ExtractionFailed, InvalidInput
from engram.memory_extraction import prompt
from engram.memory_extraction.base import ExtractionContext, resolve
from engram.memory_extraction.schema import ExtractionPayload, ExtractionResult
from engram.observability import logger
from engram.providers.llm import LLM, Completion, Message, TokenUsage

MAX_TEXT_CHARS = 200_000  # far above any chunk; a guard against feeding a whole corpus by mistake
MAX_ERRORS_SHOWN = 12
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


class LLMExtractor:
    def __init__(self, llm: LLM, *, max_text_chars: int = MAX_TEXT_CHARS) -> None:
        self.llm = llm
        self.max_text_chars = max_text_chars
        self.name = f"llm:{llm.provider}:{llm.model_id}"

    def extract(self, text: str, context: ExtractionContext) -> ExtractionResult:
        if not text.strip():
            return ExtractionResult(memories=[], extractor=self.name)
        if len(text) > self.max_text_chars:
            raise InvalidInput(
                f"text is {len(text)} characters; extract at most {self.max_text_chars} at once"
            )
        system = prompt.system_prompt(context)
        messages = [Message("user", prompt.user_message(text, context))]
        usage = TokenUsage()
        payload: ExtractionPayload | None = None
        problem = ""
        for attempt in (1, 2):
            completion = self.llm.complete(system, messages)
            usage += completion.usage
            payload, problem = parse(completion, context)
            if payload is not None:
                memories = [resolve(memory, context) for memory in payload.memories]
                return ExtractionResult(memories=memories, extractor=self.name, usage=usage, attempts=attempt)
            logger.warning(
                "llm answer rejected",
                extra={"extractor": self.name, "attempt": attempt, "problem": problem[:500]},
            )
            messages += [
                Message("assistant", completion.text[:20_000] or "(an empty answer)"),
                Message("user", prompt.repair_message(problem)),
            ]
        raise ExtractionFailed(
            f"the LLM's answer did not match the extraction schema, even after one repair: {problem}"[:2000],
            details={"usage": usage.as_dict(), "extractor": self.name},
        )


def parse(completion: Completion, context: ExtractionContext) -> tuple[ExtractionPayload | None, str]:
    """The validated payload, or None and what is wrong with the answer (for the repair request)."""
    cut_off = completion.stop_reason == "length"
    try:
        data = json.loads(_json_part(completion.text))
    except json.JSONDecodeError as exc:
        if cut_off:
            return None, "the answer was cut off at the output limit; answer with fewer, shorter memories"
        return None, f"it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    if not isinstance(data, dict):
        return (
            None,
            f"the answer must be a JSON object with a `memories` list, not a JSON {type(data).__name__}",
        )
    try:
        payload = ExtractionPayload.model_validate(
            data, context={"chunks": set(context.chunks), "max_memories": context.max_memories}
        )
    except ValidationError as exc:
        return None, _describe(exc)
    return payload, ""


def _json_part(text: str) -> str:
    """The JSON object in an answer, without code fences or prose around it."""
    stripped = _FENCE.sub("", text.strip()).strip()
    if stripped.startswith(("{", "[")):
        return stripped
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors()[:MAX_ERRORS_SHOWN]:
        where = _path(error.get("loc", ()))
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            message = "is not a field of the schema; remove it"
        lines.append(f"- {where}: {message}")
    more = exc.error_count() - MAX_ERRORS_SHOWN
    if more > 0:
        lines.append(f"- and {more} more")
    return "the JSON does not match the schema:\n" + "\n".join(lines)


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the answer)"
