"""Hypothesis strategies for property tests of code built on trails (docs/testing.md).

- :func:`documents`: :class:`~trails.ingest.Document` values with a title, a ``topic`` and a
  ``rank`` in their metadata and (mostly) a ``date``;
- :func:`chunked_documents`: a document with chunks that cover its text, as a chunker must
  return them (``chunk.text == document.text[chunk.start:chunk.end]``);
- :func:`corpora`: lists of documents with distinct ids;
- :func:`filter_cases`: a corpus, a SPARQL filter over it (with its bindings) and the exact set
  of document IRIs the filter selects, computed here in plain Python, so a test can check
  any retrieval path against it: ``set(hit.document for hit in hits) == case.expected``.

Values are small and drawn from a small vocabulary, so that filters select some of the corpus
and not all of it (a case's :attr:`FilterCase.selectivity` says how much), and shrunk
examples stay readable. Needs ``hypothesis`` (``pip install 'trails[testing]'``).

>>> from hypothesis import Phase, find, settings
>>> case = find(filter_cases(), lambda case: 0 < case.selectivity < 1,
...             settings=settings(phases=[Phase.generate]))  # the first found, not shrunk
>>> case.expected < {case.iri(document) for document in case.documents}
True
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trails._lazy import require

# Before hypothesis is imported: without it, the error names the extra that installs it.
require("hypothesis", "trails.testing.strategies")

from hypothesis import strategies as st

from trails.config import DEFAULT_BASE_IRI
from trails.errors import InvalidArgumentError
from trails.ingest.document import Chunk, Document
from trails.ingest.minting import doc_iri
from trails.scopes import DEFAULT_SCOPE

__all__ = [
    "FIRST_DATE", "LAST_DATE", "TOPICS", "WORDS", "FilterCase", "chunked_documents", "corpora",
    "dates", "documents", "filter_cases", "texts",
]

WORDS = ("graph", "vector", "elephant", "rails", "ruby", "kernel", "scope", "filter", "river",
         "mountain", "protein", "contract", "tariff", "über", "naïve", "日本")
TOPICS = ("legal", "biology", "travel", "software")
FIRST_DATE, LAST_DATE = dt.date(2000, 1, 1), dt.date(2030, 12, 31)

_words = st.sampled_from(WORDS)


def texts(min_words: int = 1, max_words: int = 30) -> st.SearchStrategy[str]:
    """Sentences of words from :data:`WORDS`, ``min_words`` to ``max_words`` words in all,
    each sentence ending with a full stop.

    Raises:
        InvalidArgumentError: ``min_words`` is below 1 (a document's text is never empty)
            or ``max_words`` below ``min_words``.
    """
    if min_words < 1 or max_words < min_words:
        raise InvalidArgumentError(f"texts() needs 1 <= min_words <= max_words, got "
                                   f"min_words={min_words}, max_words={max_words}")
    return _sentences(st.lists(_words, min_size=min_words, max_size=max_words))


@st.composite
def _sentences(draw: st.DrawFn, words: st.SearchStrategy[list[str]]) -> str:
    """The words, split into sentences of one to eight words at drawn places."""
    drawn = draw(words)
    ends = [0]
    while ends[-1] < len(drawn):
        ends.append(min(len(drawn), ends[-1] + draw(st.integers(1, 8))))
    return " ".join(" ".join(drawn[start:end]) + "." for start, end in itertools.pairwise(ends))


def dates() -> st.SearchStrategy[dt.date]:
    """Dates from :data:`FIRST_DATE` to :data:`LAST_DATE`."""
    return st.dates(min_value=FIRST_DATE, max_value=LAST_DATE)


_ids = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)


@st.composite
def documents(draw: st.DrawFn, *, doc_id: st.SearchStrategy[str] = _ids,
              dated: float = 0.8) -> Document:
    """A document: text, title, ``topic`` (one of :data:`TOPICS`), ``rank`` (0-9) and, in a
    share ``dated`` of them, a ``date`` (a :class:`datetime.date`)."""
    identifier = draw(doc_id)
    metadata: dict[str, Any] = {"topic": draw(st.sampled_from(TOPICS)),
                                "rank": draw(st.integers(0, 9))}
    if draw(st.floats(0, 1, exclude_max=True)) < dated:
        metadata["date"] = draw(dates())
    return Document(id=identifier, source=f"test://{identifier}", text=draw(texts()),
                    title=draw(st.none() | _words.map(str.title)), metadata=metadata)


@st.composite
def chunked_documents(draw: st.DrawFn,
                      document: st.SearchStrategy[Document] | None = None
                      ) -> tuple[Document, list[Chunk]]:
    """A document and chunks that cover its text end to end, split at spaces, in order."""
    doc = draw(document if document is not None else documents())
    spaces = [i for i, char in enumerate(doc.text) if char == " "]
    cuts = sorted(draw(st.sets(st.sampled_from(spaces), max_size=6))) if spaces else []
    bounds = [0, *cuts, len(doc.text)]
    chunks = [Chunk(text=doc.text[start:end], start=start, end=end, position=position)
              for position, (start, end) in enumerate(itertools.pairwise(bounds))]
    return doc, chunks


def corpora(min_size: int = 1, max_size: int = 12) -> st.SearchStrategy[list[Document]]:
    """Lists of documents with distinct ids (so each is its own document once ingested)."""
    return st.lists(documents(), min_size=min_size, max_size=max_size,
                    unique_by=lambda document: document.id)


@dataclass(frozen=True)
class FilterCase:
    """A corpus, a filter over it and what the filter selects.

    Attributes:
        documents: the corpus; ingest it into an empty context (default scope).
        sparql_filter: a SELECT of document IRIs (``?iri``), for ``retrieve(sparql_filter=)``.
        bindings: the filter's values (``retrieve(bindings=)``).
        expected: the IRIs of exactly the documents the filter selects.
        description: the filter in words, for failure messages.
        base_iri: the base the IRIs are minted under (the context's).
    """

    documents: list[Document]
    sparql_filter: str
    bindings: Mapping[str, Any]
    expected: frozenset[str]
    description: str
    base_iri: str = field(default=DEFAULT_BASE_IRI)

    def iri(self, document: Document) -> str:
        """The IRI ``document`` gets when ingested into the default scope."""
        return doc_iri(self.base_iri, document.id, DEFAULT_SCOPE)

    @property
    def selectivity(self) -> float:
        """The share of the corpus the filter selects (0: none, 1: all; 0 for no corpus,
        which ``filter_cases(min_size=0)`` may draw)."""
        return len(self.expected) / len(self.documents) if self.documents else 0.0


_Kind = tuple[str, str, dict[str, Any], Callable[[Document], bool]]


def _date_of(document: Document) -> dt.date | None:
    value = document.metadata.get("date")
    return value if isinstance(value, dt.date) else None


@st.composite
def _kinds(draw: st.DrawFn) -> _Kind:
    """One filter: (description, WHERE body, bindings, the same test in Python)."""
    topic = draw(st.sampled_from(TOPICS))
    since, until = sorted(draw(st.lists(dates(), min_size=2, max_size=2)))
    rank = draw(st.integers(0, 10))

    def dated_between(document: Document) -> bool:
        date = _date_of(document)
        return date is not None and since <= date < until

    options: list[_Kind] = [
        (f"topic = {topic!r}", "?iri meta:topic ?topic . FILTER(?topic = ?want)",
         {"want": topic}, lambda d: d.metadata["topic"] == topic),
        (f"dated in [{since}, {until})",
         "?iri schema:dateCreated ?date . FILTER(?date >= ?since && ?date < ?until)",
         {"since": since, "until": until}, dated_between),
        (f"rank < {rank}", "?iri meta:rank ?rank . FILTER(?rank < ?limit)",
         {"limit": rank}, lambda d: d.metadata["rank"] < rank),
        (f"topic = {topic!r} or undated",
         ("?iri a trails:Document . OPTIONAL { ?iri meta:topic ?topic } "
         "OPTIONAL { ?iri schema:dateCreated ?date } "
         "FILTER(?topic = ?want || !BOUND(?date))"),
         {"want": topic}, lambda d: d.metadata["topic"] == topic or _date_of(d) is None),
    ]
    return draw(st.sampled_from(options))


@st.composite
def filter_cases(draw: st.DrawFn, *, min_size: int = 1, max_size: int = 12,
                 base_iri: str = DEFAULT_BASE_IRI) -> FilterCase:
    """A corpus, a filter (by topic, by date range, by rank, or a disjunction with OPTIONAL)
    and the exact set of document IRIs it selects (possibly none, possibly all)."""
    corpus = draw(corpora(min_size, max_size))
    description, body, bindings, selects = draw(_kinds())
    expected = frozenset(doc_iri(base_iri, d.id, DEFAULT_SCOPE) for d in corpus if selects(d))
    return FilterCase(documents=corpus, sparql_filter=f"SELECT ?iri WHERE {{ {body} }}",
                      bindings=bindings, expected=expected, description=description,
                      base_iri=base_iri)
