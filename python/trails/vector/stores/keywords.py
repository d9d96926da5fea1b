"""The base class of a store's keyword ranking (:class:`~.base.KeywordIndex`)."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence

from trails.text import keyword_terms
from trails.vector.stores import arguments
from trails.vector.stores.records import VectorHit, distinct_names

__all__ = ["BaseKeywordIndex"]


class BaseKeywordIndex(abc.ABC):
    """Derives :class:`KeywordIndex`'s ``keyword_search`` (its checks, the query's terms, the
    candidates and scopes normalised, the empty cases) from :meth:`_keyword_ranked`."""

    def keyword_search(
        self, query: str, k: int = 10, ids: Iterable[str] | None = None, *,
        scopes: Sequence[str] | None = None, stopwords: Iterable[str] | None = None,
        with_metadata: bool = True,
    ) -> list[VectorHit]:
        """Top-``k`` live rows by BM25 over their text, optionally over ``ids``.

        ``ids`` and ``scopes`` restrict exactly as in ``search``: the result is the full
        ranking filtered to the admitted rows, cut to ``k``. The query is a bag of words (see
        :func:`trails.text.keyword_terms`; ``stopwords`` as there), never the index's query
        syntax; a query without words gives ``[]``. Scores are positive, higher is better,
        sorted by score descending, ties by id. ``with_metadata`` as in ``search_with_plan``.
        """
        k = arguments.check_k(k)
        self._check_keyword_support()
        terms = keyword_terms(arguments.check_text(query), stopwords)
        iris: Sequence[str] | None = None
        if ids is not None:
            iris = distinct_names(arguments.check_ids(ids))  # a DocumentIris stays one
        scope_list = None if scopes is None else list(arguments.check_scopes(scopes) or ())
        if not terms or k == 0 or (iris is not None and not iris) or scope_list == []:
            return []
        return self._keyword_ranked(terms, k, iris, scope_list, with_metadata=with_metadata)

    def _check_keyword_support(self) -> None:
        """Raise ConfigurationError when this store cannot rank keywords after all."""

    @abc.abstractmethod
    def _keyword_ranked(self, terms: list[str], k: int, iris: Sequence[str] | None,
                        scopes: list[str] | None, *, with_metadata: bool) -> list[VectorHit]:
        """``keyword_search`` for words, ``k >= 1``, non-empty unique ``iris`` (a
        ``DocumentIris`` when the caller's were: documents only) and ``scopes`` (None:
        unrestricted)."""
