"""A small corpus with known titles, sources and dates, for the framework adapters' tests."""

from __future__ import annotations

import datetime as dt

from trails.ingest import Document, ingest_all
from trails.ingest.chunkers import SentenceChunker

# One chunk per document (the chunker's cap is above every text), so a chunk's text is its
# document's text. LONG is longer than a hit's 280-character snippet.
LONG = " ".join(f"Graph river sentence number {i} about vector search." for i in range(12))
DOCS = {
    "rivers": ("Rivers", dt.date(2024, 5, 1), "Graph river deltas and vector fields."),
    "rails": ("Rails", dt.date(2023, 1, 9), "Ruby on Rails is a web framework."),
    "tea": ("Tea", None, "Tea and cats on a quiet afternoon."),
    "long": ("Long", dt.date(2022, 12, 31), LONG),
    "kernels": ("Kernels", dt.date(2021, 7, 4), "Graph kernels compare vector embeddings."),
}


def ingest_corpus(ctx) -> None:
    documents = [Document(id=name, source=f"notes/{name}.md", text=text, title=title,
                          metadata={} if date is None else {"date": date})
                 for name, (title, date, text) in DOCS.items()]
    stats = ingest_all(documents, ctx=ctx, chunker=SentenceChunker(max_chars=4000))
    assert stats.failed == 0 and stats.chunks == len(DOCS), stats.summary()
