"""What a search gives a prompt (``inject_mode``), the same over HTTP and MCP: the
``prompt_append`` evidence block is :meth:`RetrievalResult.to_context`'s, so a request answers
what Python answers for it."""

from __future__ import annotations

from typing import Any, Literal

from trails.errors import InvalidArgumentError
from trails.records import RetrievalResult

__all__ = ["INJECT_MODES", "InjectMode", "check_injection", "injected"]

InjectMode = Literal["prompt_append", "metadata_only", "none"]
INJECT_MODES: tuple[InjectMode, ...] = ("prompt_append", "metadata_only", "none")


def check_injection(mode: str, max_tokens: int | None, template: str | None) -> None:
    """Refuse a mode trails does not know, and ``max_tokens`` or ``template`` for a mode that
    builds no prompt (they would be ignored: the caller meant something else).

    Raises:
        InvalidArgumentError: naming what to change.
    """
    if mode not in INJECT_MODES:
        raise InvalidArgumentError(f"inject_mode {mode!r} is not one of {list(INJECT_MODES)}")
    given = [name for name, value in (("max_tokens", max_tokens), ("template", template))
             if value is not None]
    if given and mode != "prompt_append":
        raise InvalidArgumentError(
            f"{' and '.join(given)} shape the prompt text, which inject_mode={mode!r} does not "
            "build; use inject_mode='prompt_append', or leave them out")


def injected(result: RetrievalResult, answer: dict[str, Any], mode: str,
             max_tokens: int | None = None, template: str | None = None) -> dict[str, Any]:
    """``answer`` (the result as JSON) as ``mode`` wants it: with ``context`` (the evidence
    block, its tokens, the hits it holds and how many it left out, for the budget and as
    repeated passages) for ``prompt_append``; as
    it is for ``metadata_only``; without its hits for ``none``, with a note saying so.

    Raises:
        InvalidArgumentError: options that do not apply, or that ``to_context`` refuses.
    """
    check_injection(mode, max_tokens, template)
    if mode == "prompt_append":
        block = result.to_context(max_tokens=max_tokens, template=template)
        return {**answer, "context": {"text": str(block), "tokens": block.tokens,
                                      "hits": [hit.iri for hit in block.hits],
                                      "omitted": block.omitted, "repeated": block.repeated,
                                      "truncated": block.truncated}}
    if mode == "none":
        found = len(answer["hits"])
        return {**answer, "hits": [], "notes": [
            *answer["notes"], f"inject_mode='none': {found} hits found, none returned"]}
    return answer
