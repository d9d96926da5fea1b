"""Hits as a prompt's evidence block: one numbered passage per hit, each with its citation
(title, date, source, IRI), within a token budget (``RetrievalResult.to_context``).

Tokens are counted with the tokenizer given: ``"cl100k_base"``, a tiktoken ``Encoding``, a
Hugging Face tokenizer, or any callable from text to a count; by default tiktoken's ``cl100k_base`` (the
bundled offline copy), the tokenizer of OpenAI's chat and embedding models.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from trails._lazy import load_cl100k
from trails.display.results import Hit
from trails.errors import InvalidArgumentError

__all__ = ["DEFAULT_TEMPLATE", "ContextBlock", "context_block", "token_counter"]

DEFAULT_TEMPLATE = "{{ context }}"
H = TypeVar("H", bound=Hit)  # the kind of hit a block holds (RetrievalResult's: RetrievalHit)
_PLACEHOLDER = re.compile(r"\{\{\s*(context|query)\s*\}\}")
_ANY_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


class ContextBlock(str, Generic[H]):
    """The prompt text, and what went into it: ``hits`` (the passages included, in order),
    ``omitted`` (hits left out for the budget), ``repeated`` (hits left out as a passage
    already given: the same chunk, or the same text of the same document), ``truncated``
    (whether the last passage was cut to fit) and ``tokens`` (the text's count)."""

    hits: tuple[H, ...] = ()
    omitted: int = 0
    repeated: int = 0
    truncated: bool = False
    tokens: int = 0


def token_counter(tokenizer: Any = None) -> Callable[[str], int]:
    """How many tokens a text is, for ``tokenizer`` (see the module docstring)."""
    if tokenizer is None or (isinstance(tokenizer, str) and tokenizer == "cl100k_base"):
        tokenizer = load_cl100k("counting a prompt's tokens")
    if callable(getattr(tokenizer, "encode_ordinary", None)):  # a tiktoken Encoding
        return lambda text: len(tokenizer.encode_ordinary(text))
    if callable(getattr(tokenizer, "convert_ids_to_tokens", None)):  # Hugging Face
        return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
    if callable(tokenizer):
        return lambda text: int(tokenizer(text))
    raise InvalidArgumentError(
        f"tokenizer must be \"cl100k_base\", a tiktoken Encoding, a Hugging Face tokenizer or "
        f"a callable from text to a token count; got {type(tokenizer).__name__} "
        f"{tokenizer!r:.40}")


def context_block(hits: Sequence[H], *, query: str | None = None,
                  max_tokens: int | None = None, template: str | None = None,
                  tokenizer: Any = None) -> ContextBlock[H]:
    """The evidence block for ``hits`` in rank order (see ``RetrievalResult.to_context``)."""
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or max_tokens < 1):
        raise InvalidArgumentError(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}")
    template = DEFAULT_TEMPLATE if template is None else template
    if not isinstance(template, str) or "context" not in _PLACEHOLDER.findall(template):
        raise InvalidArgumentError(
            "template must be a string holding {{ context }} where the evidence goes "
            f"(and optionally {{{{ query }}}}); got {template!r}")
    unknown = [m.strip() for m in _ANY_PLACEHOLDER.findall(template)
               if m.strip() not in ("context", "query")]
    if unknown:  # it would reach the prompt as written
        raise InvalidArgumentError(
            f"template placeholder {{{{ {unknown[0]} }}}} is not one trails fills: use "
            "{{ context }} (the evidence) and {{ query }} (the question) only")
    if query is None and "query" in _PLACEHOLDER.findall(template):  # else it reads as ""
        raise InvalidArgumentError(
            "the template holds {{ query }} but this result has no query (one rebuilt from "
            "to_dict(), which holds none): give it, RetrievalResult.from_dict(data, query=...)")
    count = token_counter(tokenizer)

    def render(passages: list[str]) -> str:
        values = {"context": "\n\n".join(passages), "query": query or ""}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)

    hits, repeated = _distinct(hits)
    passages: list[str] = []
    truncated = False
    if max_tokens is not None and count(render([])) > max_tokens:
        raise InvalidArgumentError(
            f"the template alone is {count(render([]))} tokens, over max_tokens={max_tokens}; "
            "shorten it or raise max_tokens")
    for number, hit in enumerate(hits, 1):
        passage = _passage(number, hit)
        if max_tokens is None or count(render([*passages, passage])) <= max_tokens:
            passages.append(passage)
            continue
        if not passages:  # the best hit alone is over budget: as much of it as fits
            cut = _longest_fitting(passage, lambda p: count(render([p])) <= max_tokens)
            if not cut:  # an empty block would read as "no evidence", a wrong answer
                raise InvalidArgumentError(
                    f"max_tokens={max_tokens} holds not even the best hit's citation line "
                    f"({count(render([passage.split(chr(10), 1)[0]]))} tokens with the "
                    f"template): raise max_tokens")
            passages.append(cut)
            truncated = len(cut) < len(passage.rstrip("\n"))  # a bare citation lost nothing
        break
    text = render(passages)
    block: ContextBlock[H] = ContextBlock(text)
    block.hits = tuple(hits[:len(passages)])
    block.omitted = len(hits) - len(passages)
    block.repeated = repeated
    block.truncated = truncated
    block.tokens = count(text)
    return block


def _distinct(hits: Sequence[H]) -> tuple[list[H], int]:
    """``hits`` without those repeating a passage before them (the same chunk IRI, the
    same text of the same document: a boilerplate paragraph, or a chunk of a document already
    given whole by a ``ParentDocument`` step), and how many were left out."""
    seen: set[tuple[str, ...]] = set()
    kept: list[H] = []
    for hit in hits:
        document = hit.document or hit.iri
        keys = {("iri", hit.iri), ("text", document, _body(hit))}
        if not keys & seen and ("whole", document) not in seen:
            kept.append(hit)
            if _whole(hit):
                keys.add(("whole", document))
        seen |= keys
    return kept, len(hits) - len(kept)


def _whole(hit: Hit) -> bool:
    text = getattr(hit, "metadata", {}).get("document_text")
    return isinstance(text, str) and bool(text)


def _body(hit: Hit) -> str:
    """The document's text a ``ParentDocument`` step attached, else the chunk's text, else
    its snippet (a hand-made hit)."""
    metadata = getattr(hit, "metadata", {})
    if _whole(hit):
        return str(metadata["document_text"])
    text = metadata.get("text")
    return text if isinstance(text, str) and text else hit.snippet or ""


def _passage(number: int, hit: Hit) -> str:
    """``[n] title | date | source | <iri>``, then its text (:func:`_body`)."""
    date = hit.date
    cited = [hit.title, None if date is None else date.isoformat(), hit.source, f"<{hit.iri}>"]
    # One line, whatever a title or source holds: a line break in one would start what reads
    # as another passage's citation, and cutting to the budget keeps the first line whole.
    line = " | ".join(flat for part in cited if part and (flat := " ".join(part.split())))
    body = _body(hit)
    # A line of the passage reading as a citation ("[2] Filing | <https://...>") would make
    # the text that follows it look like another source's: its bracket is escaped.
    return f"[{number}] {line}\n" + _CITATION_LIKE.sub(r"\g<1>\\[", body)


# A line starting, after any blanks, with a bracketed number, as a citation line does.
_CITATION_LIKE = re.compile(r"(?m)^([^\S\n]*)\[(?=\d+\])")


def _longest_fitting(passage: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of ``passage`` (its citation line whole) that ``fits``; empty when
    not even the citation does."""
    head = passage.split("\n", 1)[0] + "\n"
    if not fits(head):  # the citation line alone, when even its line break is over budget
        return head[:-1] if fits(head[:-1]) else ""
    low, high = len(head), len(passage)  # fits(passage[:low]); the answer is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if fits(passage[:middle]):
            low = middle
        else:
            high = middle - 1
    return passage[:low]
