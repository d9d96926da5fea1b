"""What decides a document's chunks, as a string that is part of its version."""

from __future__ import annotations

from dataclasses import is_dataclass

from trails.ingest.document import Chunker, Document, FingerprintedChunker, content_hash

__all__ = ["chunker_id", "chunking_of"]


def chunker_id(chunker: Chunker) -> str:
    """A stable description of a chunker's settings: part of every document version."""
    if isinstance(chunker, FingerprintedChunker) and isinstance(chunker.fingerprint, str):
        return chunker.fingerprint
    described: object = chunker  # any chunker may be a dataclass: its repr lists its fields
    if is_dataclass(described):
        return repr(chunker)
    settings = {k: v for k, v in sorted(vars(chunker).items()) if isinstance(v, (int, float, str, bool))}
    return f"{type(chunker).__qualname__}{settings}"


def chunking_of(document: Document, chunker: str) -> str:
    """What decides ``document``'s chunks: ``chunker`` (its :func:`chunker_id`), or the
    spans of the chunks the document came with."""
    if document.chunks is None:
        return chunker
    spans = ",".join(f"{getattr(c, 'start', '?')}-{getattr(c, 'end', '?')}"
                     for c in document.chunks)
    return "given:" + content_hash(spans)
