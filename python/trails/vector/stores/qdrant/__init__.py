"""QdrantStore: the scale vector store, on a Qdrant server or cluster, or in qdrant-client's
local mode (in-process, in memory or in a folder) for tests and small data.

How it keeps the promises of ``SqliteVecStore`` (ADR 0001, 0002, 0005):

- **Point ids.** A vector id (a chunk IRI) is not a valid Qdrant point id, so each point's id is
  ``uuid5(POINT_NAMESPACE, id)`` (:func:`point_id`): the same in every process. The payload keeps
  the string ``id``, the user ``metadata`` and promoted, indexed fields ``doc_iri``, ``scope``,
  ``version``, ``pending`` (plus ``versioned``, set on points written through staging).
- **Same vectors, same scores.** Vectors are validated and unit-normalised exactly as
  SqliteVecStore does and stored as those float32 values in a ``Dot`` collection. (A ``Cosine``
  collection would normalise them a second time in float32, moving ~10% of them by an ulp and
  scores by up to ~2e-8; on unit vectors the two distances are the same similarity.) Every hit is
  re-scored in float64 from its stored vector with the same code as ``VectorMatrix`` and sorted by
  ``(-score, id)``, so both stores return bit-identical scores and the same ties-by-id order.
- **Filter first, exactly.** Candidate IRIs go into the query's filter (``HasId`` on the point
  ids, ``MatchAny`` on ``doc_iri`` for document IRIs), with ``pending`` excluded and scopes as a
  ``MatchAny`` on ``scope``. Qdrant is asked for ``k + OVERFETCH`` points and for more while
  the k-th float64 score is within the float32 error bound of the last one returned, so a point
  Qdrant left out can never belong to the top k. Up to ``EXACT_THRESHOLD`` eligible points the
  query runs with ``SearchParams(exact=True)`` (exhaustive); above it a server uses its HNSW
  index (``exhaustive=False``) and falls back to exact search when the index returns a short
  list. qdrant-client's local mode always searches by brute force, so it is always exhaustive.
- **Local mode filters in numpy.** qdrant-client's local mode checks a filter in Python, point
  by point, walking the candidate lists for each point (seconds per pass at 100,000 points).
  There the store reads the in-process collection's payloads and float32 vectors itself,
  applies the same rules, scores every eligible point with one BLAS product and re-scores the
  possible top k in float64: the same hits, scores and plans as the filter path
  (tests/test_qdrant_local.py), in milliseconds. A server still gets the filter. Only
  ``local.py`` relies on qdrant-client's internals, and falls back to the filter path when they
  are not as expected.
- **Versions.** ``<collection>__versions`` holds one point per document (its current version)
  and one for the store itself (dimension, embedder identity). See
  :meth:`~trails.vector.stores.qdrant.versions.QdrantVersions.publish`.

One concern per module: ``schema`` (point ids, payloads, collections), ``lock`` (the store's
lock, folders shared in a process), ``local`` (qdrant-client's local-mode internals), ``core``
(connection, writes, reads by id), ``versions`` (versioned commits), ``search`` (exact search),
``keyword`` (BM25) and ``store``.
"""

from trails.vector.stores.qdrant.schema import KEYWORD_FIELD, POINT_NAMESPACE, point_id
from trails.vector.stores.qdrant.search import EXACT_THRESHOLD, OVERFETCH
from trails.vector.stores.qdrant.store import QdrantStore

__all__ = ["EXACT_THRESHOLD", "KEYWORD_FIELD", "OVERFETCH", "POINT_NAMESPACE", "QdrantStore",
           "point_id"]
