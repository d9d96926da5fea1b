"""A LlamaIndex retriever over any trails retriever (``pip install 'trails[llamaindex]'``).

>>> from trails import HybridRetriever
>>> from trails.integrations.llamaindex import TrailsLlamaRetriever
>>> from trails.testing import fresh_context
>>> with fresh_context() as ctx:
...     TrailsLlamaRetriever(HybridRetriever(ctx, k=4)).retrieve("anything")
[]

Each result is a ``NodeWithScore``: a ``TextNode`` whose ``id_`` is the chunk's IRI (``<iri> (2)``
for a second hit of it: another row whose ``metadata["iri"]`` names it), whose
``text`` is the chunk's full text and whose ``metadata`` is the hit's provenance (``iri``,
``score``, ``components``, ``document``, ``source``, ``title``, ``date``, ``run_id``:
:mod:`trails.integrations.hits`), with the hit's score (None in graph mode). The provenance
stays out of what LlamaIndex sends to models (``excluded_llm_metadata_keys``,
``excluded_embed_metadata_keys``) except the title, source and date.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from trails._lazy import require

require("llama_index.core", "trails.integrations.llamaindex")

# (The framework is imported after the check above, which names the extra to install.)
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from trails.integrations import hits
from trails.keywords import named_keywords
from trails.records import RetrievalHit
from trails.retrieval.arguments import check_k
from trails.retrieval.retrievers import Retriever

__all__ = ["TrailsLlamaRetriever", "to_nodes"]

# Metadata a model has no use for: LlamaIndex leaves these out of prompts and embeddings.
_MACHINE_KEYS = ["iri", "score", "components", "document", "run_id", "admitted_by"]


def to_nodes(found: hits.Retrieved) -> list[NodeWithScore]:
    """LlamaIndex nodes for a trails search's hits, in rank order."""
    return [NodeWithScore(node=TextNode(id_=node_id, text=text,
                                        metadata=hits.hit_metadata(hit, found.run_id),
                                        excluded_llm_metadata_keys=list(_MACHINE_KEYS),
                                        excluded_embed_metadata_keys=list(_MACHINE_KEYS)),
                          score=hit.score)
            for hit, text, node_id in zip(found.hits, found.texts, _node_ids(found.hits))]


def _node_ids(found: Sequence[RetrievalHit]) -> list[str]:
    """Each hit's IRI, the n-th hit of an IRI met before as ``<iri> (n)``: LlamaIndex keeps
    one node per id, and rows standing for one IRI (``metadata["iri"]``) are distinct hits."""
    seen: Counter[str] = Counter()
    ids = []
    for hit in found:
        seen[hit.iri] += 1
        ids.append(hit.iri if seen[hit.iri] == 1 else f"{hit.iri} ({seen[hit.iri]})")
    return ids


class TrailsLlamaRetriever(BaseRetriever):
    """LlamaIndex's ``BaseRetriever`` over a trails retriever.

    Args:
        retriever: any trails retriever (an object with ``retrieve(query)`` returning hits).
        similarity_top_k: how many nodes to return (None: the wrapped retriever's own ``k``).
        callback_manager, verbose: as for any LlamaIndex retriever.

    Raises:
        InvalidArgumentError: ``similarity_top_k`` is not None or an int from 1 to ``MAX_K``.
        InvalidArgumentTypeError: ``retriever`` has no ``retrieve`` (a ``Context``...).

    Raises (when retrieving):
        TrailsError: whatever the wrapped retriever raises (a bad filter, a closed context...).
    """

    @named_keywords({"top_k": "similarity_top_k", "k": "similarity_top_k"})
    def __init__(self, retriever: Retriever, *, similarity_top_k: int | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        if similarity_top_k is not None:  # said now, not at the first search
            check_k(similarity_top_k, "similarity_top_k")
        self.retriever = hits.check_retriever(retriever)
        self.similarity_top_k = similarity_top_k
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(hits.retrieve(self.retriever, query_bundle.query_str,
                                      self.similarity_top_k, "similarity_top_k"))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(await hits.aretrieve(self.retriever, query_bundle.query_str,
                                             self.similarity_top_k, "similarity_top_k"))
