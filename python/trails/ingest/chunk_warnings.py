"""What is kept of a document's chunks but not understood: chunks longer than the embedder
reads (the model embeds their start only, so the rest of such a chunk is never found),
named whether the caller gave the chunks or the chunker that made them (the default chunker
cuts at the limit, so its chunks are not counted again); and chunks of whitespace only
(embedded as no words, a hit on one shows nothing); and text that no chunk holds, which no
search finds (only the chunks are embedded and indexed)."""

from __future__ import annotations

from collections.abc import Sequence

from trails.ingest.checks import record_prefix
from trails.ingest.chunkers.choice import token_budget
from trails.ingest.chunkers.tokens import tokens_of
from trails.ingest.document import Chunk, Document
from trails.vector.embedders.base import Embedder

__all__ = ["chunk_warnings"]


def chunk_warnings(document: Document, chunks: Sequence[Chunk], embedder: Embedder | None,
                   chunker_given: bool) -> list[str]:
    """At most one warning of each kind for the chunks of ``document`` (checked by
    ``chunk_problem`` already): its given chunks, or those of a chunker the caller gave
    (``chunker_given``). An embedder without a tokenizer has no limit to check."""
    own = "" if document.chunks is not None else "chunker: "
    found = (_over_the_model(document, chunks, embedder, chunker_given), _blank(chunks),
             _uncovered(document, chunks) if document.chunks is not None or chunker_given
             else None)
    return [f"{record_prefix(document)}{own}{warning}" for warning in found
            if warning is not None]


def _listed(names: list[str], count: int) -> str:
    return (f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''} "
            f"({len(names)} of {count} chunks)")


def _over_the_model(document: Document, chunks: Sequence[Chunk], embedder: Embedder | None,
                    chunker_given: bool) -> str | None:
    if (document.chunks is None and not chunker_given) or (
            budget := token_budget(embedder)) is None:
        return None
    count, most = tokens_of(budget[0]).count, budget[1]
    over = [f"chunk {c.position} ({n} tokens)" for c in chunks
            if c.vector is None and (n := count(c.text)) > most]
    if not over:
        return None
    fix = ("Give shorter chunks, or leave chunks=None for the default chunker"
           if document.chunks is not None else
           f"Make the chunker cut at {most} tokens (token_chunker_for(embedder) does), or "
           "leave chunker=None for the default chunker")
    return (f"{_listed(over, len(chunks))}: longer than the {most} tokens the embedder reads; "
            f"only the start is embedded. {fix}")


def _blank(chunks: Sequence[Chunk]) -> str | None:
    blank = [f"chunk {c.position}" for c in chunks if c.text.isspace()]
    if not blank:
        return None
    return (f"{_listed(blank, len(chunks))}: whitespace only, so it is stored and embedded but "
            "holds no word to find, and a hit on it shows no text; leave blank stretches out "
            "of the chunks")


def _uncovered(document: Document, chunks: Sequence[Chunk]) -> str | None:
    """The stretches of text, other than whitespace, in no chunk (the chunks follow the text:
    ``chunk_problem`` checked that each starts and ends no earlier than the one before)."""
    text, gaps, covered = document.text, [], 0
    for start, end in [(c.start, c.end) for c in chunks] + [(len(text), len(text))]:
        if start > covered and not text[covered:start].isspace():
            gaps.append((covered, start))
        covered = max(covered, end)
    if not gaps:
        return None
    missing = sum(end - start for start, end in gaps)
    shown = ", ".join(f"[{start}, {end})" for start, end in gaps[:3])
    return (f"characters {shown}{' ...' if len(gaps) > 3 else ''} ({missing} of {len(text)}) "
            "are in no chunk, so no search finds them; make the chunks cover the text")
