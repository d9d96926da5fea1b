"""SqliteVecStore: vectors durable in one SQLite file (sqlite-vec), scored exactly in memory."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from trails.text import keyword_terms
from trails.vector.stores.base import BaseKeywordIndex, VectorHit
from trails.vector.stores.sqlite_vec.core import reads
from trails.vector.stores.sqlite_vec.versions import SqliteVersions

__all__ = ["SqliteVecStore"]


class SqliteVecStore(SqliteVersions, BaseKeywordIndex):
    """The embedded vector store: one SQLite file holding a sqlite-vec ``vec0`` table.

    The file is the durable record (readable by any sqlite-vec client). Search is served from
    an exact in-memory float32 matrix loaded at open and kept in step with every write, and
    reloaded when another process commits; see ``adr/0002-exact-scoring-matrix.md``. It is a
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
        ContextDamagedError: the file is not a store file, or is corrupt (truncated, garbage).
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
    def _keyword_ranked(self, terms: list[str], k: int, iris: list[str] | None,
                        scopes: list[str] | None, *, with_metadata: bool) -> list[VectorHit]:
        """BM25 statistics are those of the live rows in ``scopes`` (every live row without
        them), so no scope's words move another's scores; ``iris`` then restrict the ranking."""
        match = self._keywords.match(terms)
        rows = self._rows(iris, scopes)
        confined = None
        if rows is not None and len(rows) and scopes is not None:
            names = self._index.ids  # a property that lists every id: read it once
            allowed = None if iris is None else [names[r] for r in rows.tolist()]
            confined = self._keywords.confined(terms, k, scopes, allowed, self._db.state())
        if rows is None:  # rank every row
            ranked = self._keywords.top(match, k)
        elif not len(rows):
            ranked = []
        elif confined is not None:
            ranked = confined
        elif iris is None:  # scopes only: items.scope is the scope the index's rows carry
            ranked = self._keywords.in_scopes(match, k, list(scopes or ()))
        else:
            names = self._index.ids
            ranked = self._keywords.among(match, k, [names[r] for r in rows.tolist()])
        return self._hits(ranked, with_metadata)

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
        terms = keyword_terms(query, stopwords)
        if not terms:
            return 0.0
        with self.snapshot():
            return self._keywords.idf_sum(terms, len(self._index),
                                          None if scopes is None else list(scopes), self._db.state())

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"count={len(self._index)}"
        return f"<SqliteVecStore path={self.path!r} dim={self._dim} {state}>"
