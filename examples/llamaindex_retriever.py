"""trails as a LlamaIndex retriever: a hybrid search restricted by SPARQL, as NodeWithScore.

Run with `python examples/llamaindex_retriever.py` (needs `pip install 'trails[llamaindex]'`).
It builds an in-memory context with the deterministic MockEmbedder (no model download), ingests
three dated notes, and retrieves the notes written since 2024, sync and async; each node
carries the chunk's text, the hit's score and its provenance.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from llama_index.core.schema import MetadataMode

from trails import HybridRetriever
from trails.ingest import Document, ingest_all
from trails.integrations.llamaindex import TrailsLlamaRetriever
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


def main() -> None:
    with fresh_context() as ctx:
        ingest_all(NOTES, ctx=ctx)
        engine = HybridRetriever(ctx, sparql_filter=SINCE_2024,
                                 bindings={"since": dt.date(2024, 1, 1)}, k=5)
        retriever = TrailsLlamaRetriever(engine)

        for node in retriever.retrieve("river delta sediment"):
            meta = node.node.metadata
            print(f"{node.score:.3f} {meta['date']} {meta['title']} ({meta['source']}): "
                  f"{node.node.get_content()}")

        # What a LlamaIndex prompt would contain for the best node: text, title, source, date.
        best = retriever.retrieve("tea")[0]
        print("for the model:", best.node.get_content(metadata_mode=MetadataMode.LLM)
              .replace("\n", " | "))
        nodes = asyncio.run(TrailsLlamaRetriever(engine, similarity_top_k=1).aretrieve("tea"))
        print("async, top 1:", [n.node.metadata["title"] for n in nodes])


if __name__ == "__main__":
    main()
