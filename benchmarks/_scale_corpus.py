"""The generated corpus of the scale benchmark (benchmarks/scale.py), deterministic from a seed.

Documents of ~7.7 chunks of ~900 characters, words drawn from a Zipf vocabulary of pseudo-words,
with the metadata compliance users filter on: a date spread evenly over ten years (2015-2024),
a jurisdiction, a privileged flag, a topic from a small taxonomy (loaded as the user's own RDF,
``rdfs:subClassOf`` between topics) and classifications; jurisdictions, broad topics and
classifications have designed shares, so each filter shape runs at 0.1%, 1%, 10% and 50%.

Two ways in:

- :func:`documents` yields ``trails.ingest.Document``s for ``ingest_all`` (the whole pipeline);
- :func:`store_batches` yields rows for a vector store alone (ids, unit vectors, metadata with
  text), for measuring a store without building a graph.

Importable by the benchmark scripts (their folder is on ``sys.path``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from trails.ingest import Document

__all__ = [
    "CHUNKS_PER_DOC",
    "CHUNK_CHARS",
    "CLASSIFICATIONS",
    "JURISDICTION_SHARES",
    "TOPIC_NS",
    "TOPIC_SHARES",
    "date_for_fraction",
    "documents",
    "store_batches",
    "taxonomy_turtle",
    "vocabulary",
]

CHUNK_CHARS = 900
WORDS = 100  # per paragraph (one chunk): ~900 characters
CHUNKS_PER_DOC = 7.7
START = dt.date(2015, 1, 1)
DAYS = 3652  # ten years
TOPIC_NS = "https://example.org/topics/"
# Six broad topics, each with ten narrower ones: T0..T5, T0_0..T5_9.
BROAD, NARROW = 6, 10
PRIVILEGED_FRACTION = 0.10


@functools.cache  # the same words every call: built once per process, not per corpus pass
def vocabulary(size: int = 30_000, seed: int = 7) -> list[str]:
    """Pronounceable pseudo-words, distinct, 2-4 syllables (the same list object each call:
    do not change it)."""
    rng = np.random.default_rng(seed)
    onsets = list("bcdfghjklmnprstvwz") + ["br", "ch", "cl", "st", "tr", "sh", "pl", "gr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.integers(2, 5)
        word = "".join(onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))]
                       for _ in range(syllables))
        words.setdefault(word)
    return list(words)


def _zipf_words(rng: np.random.Generator, vocab: list[str], count: int) -> list[str]:
    cdf = _zipf_cdf(len(vocab))
    picks = np.searchsorted(cdf, rng.random(count) * cdf[-1])
    return [vocab[i] for i in picks]


_CDFS: dict[int, np.ndarray] = {}


def _zipf_cdf(size: int) -> np.ndarray:
    if size not in _CDFS:
        _CDFS[size] = np.cumsum(1.0 / np.arange(1, size + 1, dtype=np.float64) ** 1.07)
    return _CDFS[size]


def date_for_fraction(fraction: float) -> dt.date:
    """The date whose ``>=`` filter keeps about ``fraction`` of the documents (dates are
    uniform over the ten years)."""
    return START + dt.timedelta(days=round(DAYS * (1.0 - fraction)))


# Values with designed shares of the documents, so each filter shape can be run at 0.1%, 1%, 10%
# and 50% of them: (value, share); the rest share what is left.
JURISDICTION_SHARES = [("us", 0.5), ("eu", 0.1), ("uk", 0.01), ("sg", 0.001)]
OTHER_JURISDICTIONS = ["de", "fr", "jp", "ca"]
TOPIC_SHARES = [(0, 0.5), (1, 0.1), (2, 0.01), (3, 0.001)]  # broad topic T<n>; T4, T5 the rest
# Each classification a document carries independently with this probability: a filter
# "FILTER NOT EXISTS { ?doc meta:classification ?c }" keeps 0.1%, 1%, 10% and 50% of them.
CLASSIFICATIONS = [("cleared", 0.999), ("internal", 0.99), ("confidential", 0.9),
                   ("restricted", 0.5)]


def _shared(rng: np.random.Generator, shares: list[tuple[Any, float]], rest: list[Any]) -> Any:
    draw = rng.random()
    for value, share in shares:
        if draw < share:
            return value
        draw -= share
    return rest[int(rng.integers(len(rest)))]


def _metadata(rng: np.random.Generator, index: int) -> dict[str, Any]:
    broad = _shared(rng, TOPIC_SHARES, [4, 5])
    meta: dict[str, Any] = {
        "date": (START + dt.timedelta(days=int(rng.integers(DAYS)))).isoformat(),
        "jurisdiction": _shared(rng, JURISDICTION_SHARES, OTHER_JURISDICTIONS),
        "privileged": bool(rng.random() < PRIVILEGED_FRACTION),
        "topic": f"<{TOPIC_NS}T{broad}_{int(rng.integers(NARROW))}>",
        "classification": [name for name, p in CLASSIFICATIONS if rng.random() < p],
    }
    return meta


def documents(count: int, seed: int = 1, vocab: list[str] | None = None) -> Iterator[Document]:
    """``count`` documents of ~7.7 chunks each (paragraphs of ~900 characters)."""
    rng = np.random.default_rng(seed)
    vocab = vocab or vocabulary()
    for index in range(count):
        paragraphs = max(1, int(rng.poisson(CHUNKS_PER_DOC - 1)) + 1)
        words = _zipf_words(rng, vocab, paragraphs * WORDS)
        text = "\n\n".join(_paragraph(words[p * WORDS:(p + 1) * WORDS]) for p in range(paragraphs))
        yield Document(id=f"gen/{index:07d}", source=f"gen/{index:07d}.md", text=text,
                       title=f"Document {index}", metadata=_metadata(rng, index))


def _paragraph(words: list[str]) -> str:
    """Sentences of ~13 words, each capitalised and ended with a full stop."""
    sentences = [" ".join(words[i:i + 13]) for i in range(0, len(words), 13)]
    return " ".join(s[:1].upper() + s[1:] + "." for s in sentences)


def store_batches(chunks: int, dim: int = 384, batch: int = 10_000, seed: int = 1,
                  ) -> Iterator[tuple[list[str], np.ndarray, list[dict[str, Any]]]]:
    """Rows for a vector store alone: ``(ids, unit float32 vectors, metadata)`` per batch.

    Metadata carries what ingestion writes (iri, doc_iri, scope, text, snippet, date), with
    ~7.7 chunks per document."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    doc, left = 0, 0
    doc_meta: dict[str, Any] = {}
    for start in range(0, chunks, batch):
        size = min(batch, chunks - start)
        vectors = rng.standard_normal((size, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        words = _zipf_words(rng, vocab, size * WORDS)
        ids, metas = [], []
        for i in range(size):
            if left == 0:
                doc += 1
                left = max(1, int(rng.poisson(CHUNKS_PER_DOC - 1)) + 1)
                doc_meta = _metadata(rng, doc)
            left -= 1
            text = _paragraph(words[i * WORDS:(i + 1) * WORDS])
            iri = f"https://example.org/gen/{doc:07d}#chunk-{start + i}"
            ids.append(iri)
            metas.append({"iri": iri, "doc_iri": f"https://example.org/gen/{doc:07d}",
                          "scope": "default", "text": text, "snippet": text[:200],
                          "date": doc_meta["date"]})
        yield ids, vectors, metas


def taxonomy_turtle() -> str:
    """The topic taxonomy as Turtle: each narrow topic ``rdfs:subClassOf`` its broad topic, the
    broad topics ``rdfs:subClassOf`` one root (``T``)."""
    lines = ["@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             f"@prefix t: <{TOPIC_NS}> ."]
    for broad in range(BROAD):
        lines.append(f"t:T{broad} rdfs:subClassOf t:T .")
        lines.extend(f"t:T{broad}_{narrow} rdfs:subClassOf t:T{broad} ." for narrow in range(NARROW))
    return "\n".join(lines) + "\n"
