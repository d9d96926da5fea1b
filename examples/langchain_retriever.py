"""trails as a LangChain retriever: a hybrid search restricted by SPARQL, in a LangChain chain.

Run with `python examples/langchain_retriever.py` (needs `pip install 'trails[langchain]'`).
It builds an in-memory context with the deterministic MockEmbedder (no model download), ingests
three dated notes, and asks LangChain's retriever interface for the notes written since 2024,
sync and async; each Document carries the chunk's text and its provenance.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from langchain_core.documents import Document as Passage
from langchain_core.runnables import RunnableLambda

from trails import HybridRetriever
from trails.ingest import Document, ingest_all
from trails.integrations.langchain import TrailsRetriever
from trails.testing import fresh_context

NOTES = [
    Document(id="rivers", source="notes/rivers.md", title="Rivers",
             text="Rivers carry sediment to their deltas.", metadata={"date": dt.date(2024, 5, 1)}),
    Document(id="deltas", source="notes/deltas.md", title="Deltas",
             text="A delta forms where a river meets the sea.",
             metadata={"date": dt.date(2023, 2, 1)}),
    Document(id="tea", source="notes/tea.md", title="Tea",
             text="Green tea is steamed, black tea is oxidised.",
             metadata={"date": dt.date(2024, 8, 9)}),
]
SINCE_2024 = """
SELECT ?iri WHERE { ?iri schema:dateCreated ?created . FILTER(?created >= ?since) }
"""


def titles_of(passages: list[Passage]) -> list[str]:
    return [str(passage.metadata["title"]) for passage in passages]


def main() -> None:
    with fresh_context() as ctx:
        ingest_all(NOTES, ctx=ctx)
        engine = HybridRetriever(ctx, sparql_filter=SINCE_2024,
                                 bindings={"since": dt.date(2024, 1, 1)}, k=5)
        retriever = TrailsRetriever(retriever=engine)

        for document in retriever.invoke("river delta sediment"):
            meta = document.metadata
            print(f"{meta['score']:.3f} {meta['date']} {meta['title']} ({meta['source']}): "
                  f"{document.page_content}")

        # A retriever is a Runnable: it composes with the rest of a chain.
        titles = retriever | RunnableLambda(titles_of)
        print("titles:", titles.invoke("tea"))
        print("async, k=1:", [d.metadata["title"] for d in
                              asyncio.run(retriever.ainvoke("tea", k=1))])


if __name__ == "__main__":
    main()
