"""``trails:similarity(?chunk, "query text")``: vector similarity inside SPARQL.

A Context registers the function on its embedded graph (:class:`~trails.kg.OxigraphGraph`), so
one query can filter, join and order by meaning::

    SELECT ?c WHERE { ?c schema:isPartOf ?doc . ?doc schema:dateCreated ?d
                      FILTER(?d >= "2024-01-01"^^xsd:date) }
    ORDER BY DESC(trails:similarity(?c, "rails routing")) LIMIT 10

The value is an ``xsd:double``: the cosine similarity of the chunk's stored vector with the
embedded text, computed exactly as ``retrieve()`` scores it. A chunk's vector is the row that
names it in ``metadata["iri"]``, whatever the row's id (its id, when it names none). It is
unbound for anything that is
not a live vector of the query's scopes (a document IRI, a chunk still being written, another
scope's chunk). Each distinct text is embedded once per query, each chunk's vector read once.
A remote SPARQL endpoint cannot call back into Python: there the function is refused.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.base import FunctionGraph
from trails.kg.sparql import SIMILARITY
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores.arrays import SEARCH_REFUSED
from trails.vector.stores.base import as_matrix, check_compatible, unit_rows
from trails.vector.stores.rows import rows_standing_for

if TYPE_CHECKING:
    from trails.parts import ContextParts

__all__ = ["register_similarity"]



def register_similarity(ctx: ContextParts) -> None:
    """Register ``trails:similarity`` on ``ctx.kg`` if the graph takes custom functions.

    The function reads ``ctx.vectors`` and ``ctx.embedder`` when a query runs (the context is
    held weakly: a graph does not keep its context alive).
    """
    if not isinstance(ctx.kg, FunctionGraph):
        return  # a remote endpoint cannot call back into this process
    owner = weakref.ref(ctx)
    ctx.kg.register_function(SIMILARITY, lambda scopes: _Similarity(owner, scopes), per_query=True)


class _Similarity:
    """The function for one query: caches text embeddings and chunk vectors for its duration."""

    def __init__(self, owner: Callable[[], ContextParts | None], scopes: Sequence[str] | None) -> None:
        self._owner = owner
        self._scopes = None if scopes is None else set(scopes)
        self._queries: dict[str, np.ndarray] = {}
        self._vectors: dict[str, np.ndarray | None] = {}

    def __call__(self, *terms: Any) -> ox.Literal | None:
        if len(terms) != 2:
            raise SparqlError(
                f"trails:similarity takes 2 arguments (?chunk, \"query text\"), got {len(terms)}")
        chunk, text = terms
        if not isinstance(text, ox.Literal):
            raise SparqlError(
                f"the second argument of trails:similarity must be the query text (a string "
                f"literal, or a variable bound to one), got {text}")
        if not isinstance(chunk, ox.NamedNode):
            return None
        vector = self._vector(chunk.value)
        if vector is None:
            return None
        query = self._query(text.value)
        # As VectorMatrix scores: float64 cosine of the float32 row with the unit query.
        score = float(np.dot(vector, query) / np.linalg.norm(vector))
        return ox.Literal(min(1.0, max(-1.0, score)))

    def _context(self) -> ContextParts:
        ctx = self._owner()
        if ctx is None:
            raise SparqlError("trails:similarity needs the Context it was registered by, which no "
                              "longer exists; keep the Context (not only ctx.kg) alive")
        return ctx

    def _query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            ctx = self._context()
            embedder = ctx.embedder
            check_compatible(embedder, ctx.vectors)  # the same checks as retrieve()
            vector = as_matrix([embedder.embed(text)], embedder.dim, refused=SEARCH_REFUSED).astype(np.float64)
            self._queries[text] = unit_rows(vector)[0]
        return self._queries[text]

    def _vector(self, iri: str) -> np.ndarray | None:
        if iri not in self._vectors:
            self._vectors[iri] = self._live_vector(iri)
        return self._vectors[iri]

    def _live_vector(self, iri: str) -> np.ndarray | None:
        # The row of these scopes standing for the chunk: named by its metadata["iri"]
        # whatever its id (the back-reference, ADR 0028); none for a document, or a chunk
        # with no live row.
        row = next((row for _, row in rows_standing_for(self._context().vectors, [iri])
                    if self._scopes is None
                    or str(row.metadata.get("scope") or DEFAULT_SCOPE) in self._scopes), None)
        if row is None:
            return None
        return np.asarray(row.vector, dtype=np.float32).astype(np.float64)
