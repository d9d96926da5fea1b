"""Search dated notes by topic and date, on trails."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from trails import HybridRetriever, RetrievalHit
from trails.context import Context
from trails.ingest import Document, ingest_all

# The notes this project ingests carry a topic; SPARQL reads it as meta:topic.
BY_TOPIC_SINCE = """
SELECT ?iri WHERE {
  ?iri meta:topic ?topic ; schema:dateCreated ?created .
  FILTER(?topic = ?want && ?created >= ?since)
}
"""


def add_notes(ctx: Context, notes: Iterable[Document]) -> int:
    """Ingest ``notes``; the number of chunks written."""
    return ingest_all(list(notes), ctx=ctx).chunks


def search(ctx: Context, query: str, *, topic: str, since: dt.date, k: int = 10
           ) -> list[RetrievalHit]:
    """The best chunks of notes on ``topic`` written on or after ``since``."""
    retriever = HybridRetriever(ctx, sparql_filter=BY_TOPIC_SINCE,
                                bindings={"want": topic, "since": since}, k=k)
    return list(retriever.retrieve(query))
