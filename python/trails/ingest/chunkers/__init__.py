"""Chunkers: split a document into spans of its own text.

Every chunker here returns chunks with ``chunk.text == document.text[chunk.start:chunk.end]``,
positions ``0..n-1``, no empty or whitespace-only chunk, and together they cover every
non-whitespace character of the document::

    >>> from trails.ingest.document import Document
    >>> doc = Document("d", "mem", "Dr. Smith arrived. He sat down. Then he left.")
    >>> [c.text for c in SentenceChunker(max_chars=32, overlap=0).chunk(doc)]
    ['Dr. Smith arrived. He sat down.', 'Then he left.']

Which one to use: :func:`default_chunker` (sentences, capped by the embedder's token limit),
:class:`TokenChunker` (fixed token windows) or :class:`SentenceChunker` (sentences by size).

One concern per module: :mod:`.sentences` (where sentences end), :mod:`.packing`
(SentenceChunker), :mod:`.windows` (TokenChunker), :mod:`.tokens` (counting with a Hugging
Face tokenizer or tiktoken), :mod:`.choice` (the default for an embedder) and :mod:`.spans`
(helpers on character spans).
"""

from __future__ import annotations

from trails.ingest.chunkers.choice import default_chunker, token_budget, token_chunker_for
from trails.ingest.chunkers.packing import SentenceChunker
from trails.ingest.chunkers.sentences import split_sentences
from trails.ingest.chunkers.spans import SPLITTER_VERSION
from trails.ingest.chunkers.windows import TokenChunker

__all__ = [
    "SPLITTER_VERSION",
    "SentenceChunker",
    "TokenChunker",
    "default_chunker",
    "split_sentences",
    "token_budget",
    "token_chunker_for",
]
