"""Chunks longer than the embedder reads: the model embeds their start only, so the rest of
such a chunk is never found. Named in a warning whether the caller gave the chunks or the
chunker that made them; the default chunker never makes one (it cuts at the limit)."""

from __future__ import annotations

from collections.abc import Sequence

from trails.ingest.checks import record_prefix
from trails.ingest.chunkers.choice import token_budget
from trails.ingest.chunkers.tokens import tokens_of
from trails.ingest.document import Chunk, Document
from trails.vector.embedders.base import Embedder

__all__ = ["over_the_model"]


def over_the_model(document: Document, chunks: Sequence[Chunk], embedder: Embedder | None,
                   chunker_given: bool) -> list[str]:
    """One warning naming the chunks of ``document`` to embed that hold more tokens than
    ``embedder`` reads, or none: its given chunks, or those of a chunker the caller gave
    (``chunker_given``). An embedder without a tokenizer has no limit to check."""
    if (document.chunks is None and not chunker_given) or (
            budget := token_budget(embedder)) is None:
        return []
    count, most = tokens_of(budget[0]).count, budget[1]
    over = [f"chunk {c.position} ({n} tokens)" for c in chunks if isinstance(c, Chunk)
            and c.vector is None and isinstance(c.text, str) and (n := count(c.text)) > most]
    if not over:
        return []
    given = document.chunks is not None
    fix = ("Give shorter chunks, or leave chunks=None for the default chunker" if given else
           f"Make the chunker cut at {most} tokens (token_chunker_for(embedder) does), or "
           "leave chunker=None for the default chunker")
    return [(f"{record_prefix(document)}{'' if given else 'chunker: '}{', '.join(over[:5])}"
            f"{' ...' if len(over) > 5 else ''} ({len(over)} of {len(chunks)} chunks): longer "
            f"than the {most} tokens the embedder reads; only the start is embedded. {fix}")]
