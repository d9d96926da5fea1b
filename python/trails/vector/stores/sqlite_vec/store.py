"""SqliteVecStore: rows in one SQLite file, vectors in memory-mapped slot files beside it,
scored exactly."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trails.errors import TrailsError
from trails.faults import corrupt_file
from trails.recorded import Settings, Where, relative
from trails.scopes import DEFAULT_SCOPE
from trails.text import keyword_terms
from trails.vector.stores import arguments
from trails.vector.stores.arrays import (
    SEARCH_REFUSED,
    VectorLike,
    as_matrix,
    encode,
    normalize_rows,
)
from trails.vector.stores.base import BaseKeywordIndex, StoredVector, VectorHit
from trails.vector.stores.matrix import VectorMatrix
from trails.vector.stores.records import DocumentIris
from trails.vector.stores.sqlite_vec.core import reads
from trails.vector.stores.sqlite_vec.folding import ROW, unfold
from trails.vector.stores.sqlite_vec.keyword_top import top_k
from trails.vector.stores.sqlite_vec.lookups import SqliteLookups
from trails.vector.stores.sqlite_vec.slot_index import Candidates

if TYPE_CHECKING:
    from typing import Self

__all__ = ["VECTORS_FILE", "SqliteVecStore"]

VECTORS_FILE = "vectors.db"  # where a context keeps its store, unless settings say

Ranked = list[tuple[str, float]]


class SqliteVecStore(SqliteLookups, BaseKeywordIndex):
    """The embedded vector store: one SQLite file (rows, metadata, texts, keyword index) and two
    append-only vector files beside it (``<path>.f32``, ``<path>.keys``).

    SQLite is the durable record and the commit point: a row names its vector's slot, which is
    written and flushed before the row commits and never overwritten while a committed row could
    still name it. Search reads the memory-mapped vectors in place (exact float32 scoring,
    float64 re-scoring); the live slots are read at the first read, kept in step with every
    write and read again when another process commits; see ``adr/0002-exact-scoring-matrix.md``
    and ``adr/0014-vector-files.md``. Opening reads nothing per row. It is a
    :class:`~trails.vector.stores.base.VectorStore` with every capability: versioned commits
    (``sqlite_vec/versions.py``) and a BM25 keyword index on SQLite FTS5
    (``sqlite_vec/keyword.py``; scores are FTS5's ``bm25()`` negated, with Porter stemming).

    Args:
        path: a file path, or ``":memory:"`` for a store that lives as long as the object.
        dim: vector dimension; required for a new store, checked against a persisted one.
        embedder: optional identity to record (new store) or check (persisted store).
        read_only: open an existing file without writing to it.

    Every read sees one committed state of the file; :meth:`snapshot` holds one state for a
    block of reads (``retrieve`` holds one for its whole answer). Threads sharing a store take
    turns (see :mod:`~trails.vector.stores.sqlite_vec.core`). Any call after :meth:`close`
    raises a ConfigurationError saying the store is closed.

    Raises:
        ContextDamagedError: the file is not a store file, or is corrupt (truncated, garbage);
            or, at the first read, a vector file is missing, truncated, another store's, or
            holds a vector that does not match its checksum (the message names the file).
        StorageError: the file cannot be opened or written (permissions, read-only mount, full
            disk); every operation that meets one later raises it too, having written nothing.
        DimensionMismatchError: ``dim`` differs from the persisted dimension.
        EmbeddingModelMismatchError: ``embedder`` differs from the recorded identity.
        MissingExtraError: sqlite-vec (or a SQLite that can load it) is not installed.

    >>> store = SqliteVecStore(dim=3)
    >>> store.add("a", [1.0, 0.0, 0.0], {"snippet": "x"})
    >>> [hit.id for hit in store.search([1.0, 0.1, 0.0], k=1)]
    ['a']

    Keyword search ranks the live rows' text (metadata ``text``, else ``snippet``):

    >>> store = SqliteVecStore(dim=2)
    >>> store.add_many(["a", "b"], [[1, 0], [0, 1]],
    ...                [{"text": "Rails routing"}, {"text": "Ruby on Rails: a web framework"}])
    >>> [hit.id for hit in store.keyword_search("routes in rails", k=2)]
    ['a', 'b']
    """

    @reads
    def _keyword_ranked(self, terms: list[str], k: int, iris: Sequence[str] | None,
                        scopes: list[str] | None, *, with_metadata: bool) -> list[VectorHit]:
        """BM25 statistics are those of the live rows in ``scopes`` (every live row without
        them), so no scope's words move another's scores; ``iris`` then restrict the ranking."""
        match = self._keywords.match(terms)
        unique = None if iris is None else list(iris)
        given = getattr(self._local, "ids", None)  # the caller's tuple, for the memo
        if given is None or unique is None or list(given) != unique:
            given = iris
        rows, named = self._rows(given, scopes)
        try:
            ranked = self._masked(terms, k, rows, named, scopes)
            if ranked is None:
                ranked = self._ranked(match, terms, k, rows, unique, scopes,
                                      documents_only=isinstance(given, DocumentIris))
        except KeyError as exc:  # in one snapshot only a damaged file can do that
            raise corrupt_file(self.path, "the keyword index names a row the store does not "
                                          "hold") from exc
        return self._hits(ranked, with_metadata)

    def _masked(self, terms: list[str], k: int, rows: np.ndarray | None,
                named: Candidates | None, scopes: list[str] | None) -> Ranked | None:
        """The keyword ranking of the candidate slots ``rows`` through a mask over the
        postings (by rowid): the same scores and order as ranking by their names, at the cost
        of the masked vector scan whatever their number. None when the postings cannot rank
        (FTS5 ranks) or every row is a candidate."""
        postings = self._keywords.postings
        stems = postings.stems(terms) if rows is not None else None
        rowids = None if stems is None or rows is None else self._index.rowids(rows)
        if stems is None or rowids is None:
            return None
        state = postings.state()
        assert state is not None  # stems() answered
        scoped = scopes is not None and not postings.covers_all(scopes)
        mask = postings.scope_mask(state, scopes) if scoped and scopes is not None else None
        among = rowids[rowids < len(state.segment_of)]  # a row no segment reached holds no term
        if len(among) > 1 and not bool((among[1:] > among[:-1]).all()):
            among = np.unique(among)
        scores = postings.scores(stems, mask, scoped, among)[1]  # only the candidates'
        return top_k(self._db, scores, k, None, among=among,
                     admits=None if named is None else named.admits)

    def _ranked(self, match: str, terms: list[str], k: int, rows: np.ndarray | None,
                iris: list[str] | None, scopes: list[str] | None, *,
                documents_only: bool = False) -> list[tuple[str, float]]:
        confined = None
        if rows is not None and len(rows) and scopes is not None:
            allowed = None if iris is None else self._live_names(iris, scopes, documents_only)
            confined = self._keywords.confined(terms, k, scopes, allowed, self._db.state())
        if rows is None:  # rank every row
            return self._keywords.top(match, k)
        if not len(rows):
            return []
        if confined is not None:
            return confined
        if iris is None:  # scopes only: items.scope is the scope the index's rows carry
            return self._keywords.in_scopes(match, k, list(scopes or ()))
        return self._keywords.among(match, k, self._live_names(iris, scopes, documents_only))

    def _live_names(self, iris: list[str], scopes: list[str] | None,
                    documents_only: bool = False) -> list[str]:
        """The live ids ``iris`` name (themselves, or a document's chunks; only the latter
        with ``documents_only``), in ``scopes``."""
        names = json.dumps(iris)
        rows = self._db.execute(
            "SELECT id FROM items WHERE pending = 0 AND ((? IS NULL AND id IN (SELECT value "
            "FROM json_each(?))) OR doc_iri IN (SELECT value FROM json_each(?)))"
            " AND (? IS NULL OR scope IN (SELECT value FROM json_each(?)))",
            (1 if documents_only else None, names, names, None if scopes is None else 1,
             json.dumps(scopes or [])))
        return [r[0] for r in rows]

    def keyword_search(
        self, query: str, k: int = 10, ids: Iterable[str] | None = None, *,
        scopes: Sequence[str] | None = None, stopwords: Iterable[str] | None = None,
        with_metadata: bool = True,
    ) -> list[VectorHit]:
        """:meth:`BaseKeywordIndex.keyword_search`; the same ``ids`` tuple as an earlier
        search or keyword search (at the same state and scopes) is looked up once."""
        self._local.ids = ids if isinstance(ids, tuple) else None
        try:
            return super().keyword_search(query, k, ids, scopes=scopes, stopwords=stopwords,
                                          with_metadata=with_metadata)
        finally:
            self._local.ids = None

    def keyword_idf_sum(self, query: str, *, stopwords: Iterable[str] | None = None,
                        scopes: Sequence[str] | None = None) -> float:
        """The BM25 weight of ``query`` here: the sum, over its distinct terms as the keyword
        index holds them (Porter stems), of the IDF that FTS5's ``bm25()`` gives each term.

        It is about what a document holding each query term once, at average length, scores
        (BM25's term-frequency part is 1 there), so the best keyword score over it says how
        much of the query the best match covers: ``retrieve`` passes that ratio to fusion as
        the keyword ranking's quality (:class:`trails.rank.fusion.AutoFusion`). A term no row
        holds counts in full. 0.0 for a query without words.

        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b", "c"], [[1, 0], [0, 1], [1, 1]],
        ...                [{"text": "rails routing"}, {"text": "ruby"}, {"text": "go"}])
        >>> round(store.keyword_idf_sum("routes"), 4)  # "rout": 1 of 3 rows
        0.5108
        """
        terms = keyword_terms(arguments.check_text(query), stopwords)
        if not terms:
            return 0.0
        with self.snapshot():
            return self._keywords.idf_sum(terms, None if scopes is None else list(scopes),
                                          self._db.state())

    @reads
    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(arguments.check_ids(ids))
        rows = self._db.execute(
            f"SELECT id, slot, {ROW} FROM items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
        slots = np.array([r[1] for r in rows], dtype=np.int64)
        self._check_vectors(slots)
        vectors = self._index.vectors()
        found = {r[0]: StoredVector(r[0], vectors[r[1]].tolist(), unfold(r[0], *r[2:]))
                 for r in rows}
        return [found[i] for i in wanted if i in found]

    @reads
    def all_ids(self) -> list[str]:
        """Ids of live vectors, sorted."""
        return [r[0] for r in self._db.execute("SELECT id FROM items WHERE pending = 0 ORDER BY id")]

    @reads
    def scopes(self) -> list[str]:
        """The scopes that hold live vectors (a vector without one is in the default scope)."""
        rows = self._db.execute(
            "SELECT DISTINCT COALESCE(scope, ?) FROM items WHERE pending = 0", (DEFAULT_SCOPE,))
        return sorted(str(r[0]) for r in rows)

    @reads
    def knn_sqlite_vec(self, vector: VectorLike, k: int = 10) -> list[tuple[str, float]]:
        """sqlite-vec's own ``vec0`` KNN (approximately the same ranking, computed in SQL).

        Kept for comparison and for SQL users; ``search`` is the exact, faster path. The
        vectors are stored once, in the vector files, so the ``vec0`` table is built on demand
        (in this connection's temp schema, again after each change): slow for a large store.
        """
        query = encode(normalize_rows(as_matrix(vector, self._dim, refused=SEARCH_REFUSED))[0])
        if getattr(self, "_knn_generation", None) != self._index.generation:
            self._db.load_sqlite_vec("SqliteVecStore.knn_sqlite_vec")
            self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.knn_items USING"
                             f" vec0(embedding float[{self._dim}] distance_metric=cosine)")
            self._db.execute("DELETE FROM temp.knn_items")
            live, data = self._index.live(), self._index.vectors()
            for start in range(0, len(live), 10_000):
                part = live[start : start + 10_000]
                self._db.executemany("INSERT INTO temp.knn_items(rowid, embedding) VALUES (?, ?)",
                                     [(int(s), encode(data[s])) for s in part])
            self._knn_generation = self._index.generation
        rows = self._db.execute(
            "SELECT rowid, distance FROM temp.knn_items WHERE embedding MATCH ? AND k = ?"
            " ORDER BY distance", (query, k))
        names = self._names(np.array([r[0] for r in rows], dtype=np.int64))
        return [(names[r[0]][0], 1.0 - float(r[1])) for r in rows]

    @property
    def in_snapshot(self) -> bool:
        """Whether the calling thread is inside :meth:`snapshot` (where it cannot write, and
        a write from another thread waits for the block to end)."""
        return not self.closed and self._db.reading_here

    @property
    def matrix(self) -> VectorMatrix:
        """A copy of the live rows as an in-memory :class:`VectorMatrix` (for benchmarks and
        brute-force checks: a large store makes a large copy)."""
        with self.snapshot():
            live = self._index.live()
            names = self._names(live)
            copy = VectorMatrix(self._dim, capacity=len(live))
            copy.upsert([names[s][0] for s in live.tolist()], self._index.vectors()[live],
                        [names[s][1] for s in live.tolist()])
            return copy

    def __repr__(self) -> str:
        if self.closed:
            state = "closed"
        else:
            try:  # the index is read at the first read: count() takes one
                state = f"count={self.count()}"
            except TrailsError:  # a damaged file: repr still answers
                state = "damaged"
        return f"<SqliteVecStore path={self.path!r} dim={self._dim} {state}>"

    # -- trails.json (trails.recorded.Recordable) ---------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        return cls(where.path(settings.get("path"), VECTORS_FILE), dim=where.dim,
                   read_only=where.read_only)

    def recorded_settings(self, root: Path) -> Settings | None:
        return None if self.path == ":memory:" else {"path": relative(self.path, root)}
