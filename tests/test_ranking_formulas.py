"""Every ranking retrieve() returns equals its documented formula, computed here on its own.

Random corpora in two scopes (duplicate texts, so identical vectors and equal BM25 scores;
documents deleted and ingested again with new text), random filters over documents (selecting
none, some or all of them), every ``k`` from 1 to more than the candidates. The references:

- vector: numpy float64 cosine of the candidates' stored vectors, ties by IRI;
- keyword: BM25 from its textbook definition (k1 1.2, b 0.75, IDF floored at 1e-6) with the
  statistics of the searched scopes' rows, restricted to the candidates afterwards (a filter
  restricts which rows rank, never how they score; docs/retrieval.md, ADR 9);
- ``rrf``: ``sum 1 / (60 + rank)`` over both lists (``FUSION_DEPTH`` deep);
- ``weighted``: each list min-max normalised, summed;
- ``auto``: ``sum weight * score / best`` with the weights the result reports.

The vocabulary has no two words with one stem and no stopword, so a word is its own term.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.retrieval.retrieve import FUSION_DEPTH
from trails.testing import fresh_context
from trails.vector import MockEmbedder

DIM = 8
WORDS = ["apple", "boat", "camel", "dune", "eagle", "fjord", "grape", "harbour"]
BY_DOCUMENTS = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:bucket ?b "
                "FILTER(?b < ?limit) }")
# The same question in a form the planner does not lift (LIMIT): it runs as written.
AS_WRITTEN = BY_DOCUMENTS + " LIMIT 1000000"

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
documents = st.lists(st.tuples(texts, st.sampled_from(["a", "b"]), st.integers(0, 3)),
                     min_size=2, max_size=12)


def bm25(query: str, rows: dict[str, str]) -> dict[str, float]:
    """BM25 by the book over exactly ``rows`` (words are their own terms)."""
    n = len(rows)
    if not n:
        return {}
    lengths = {i: len(t.split()) for i, t in rows.items()}
    average = sum(lengths.values()) / n
    scores: dict[str, float] = {}
    for i, text in rows.items():
        words, total = text.split(), 0.0
        for term in dict.fromkeys(query.split()):
            tf = words.count(term)
            if tf:
                df = sum(term in t.split() for t in rows.values())
                idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
                total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / average))
        if total:
            scores[i] = total
    return scores


def ordered(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def rrf(*lists: list[tuple[str, float]]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, (doc, _) in enumerate(ranked, 1):
            fused[doc] = fused.get(doc, 0.0) + 1 / (60 + rank)
    return fused


def minmax(*lists: list[tuple[str, float]]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranked in lists:
        if ranked:
            high, low = ranked[0][1], ranked[-1][1]
            for doc, score in ranked:
                value = 1.0 if high == low else (score - low) / (high - low)
                fused[doc] = fused.get(doc, 0.0) + value
    return fused


def by_best(weights: dict[str, float], **lists: list[tuple[str, float]]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for name, ranked in lists.items():
        best = ranked[0][1] if ranked else 0.0
        for doc, score in ranked:
            if best > 0:
                value = max(0.0, score / best)
            else:
                high, low = max(s for _, s in ranked), min(s for _, s in ranked)
                value = 1.0 if high == low else (score - low) / (high - low)
            fused[doc] = fused.get(doc, 0.0) + weights[name] * value
    return fused


def same(result, expected: list[tuple[str, float]], k: int) -> None:
    got = [(hit.iri, hit.score) for hit in result]
    assert [iri for iri, _ in got] == [iri for iri, _ in expected[:k]]
    for (_, score), (_, want) in zip(got, expected):
        assert math.isfinite(score)
        assert abs(score - want) <= 1e-9 * max(1.0, abs(want))


def build(docs, changes):
    """A context holding ``docs`` ({name: (text, scope, bucket)}) after ``changes``."""
    ctx = fresh_context(dim=DIM)
    table = {f"d{i}.md": doc for i, doc in enumerate(docs)}
    for scope in ("a", "b"):
        ingest_all([Document(n, n, t, metadata={"bucket": b})
                    for n, (t, s, b) in table.items() if s == scope], ctx=ctx, scope=scope)
    for name, change in zip(list(table), changes):
        scope = table[name][1]
        if change == "delete":
            ctx.delete_document(f"trails://local/scope/{scope}/doc/{name}")
            del table[name]
        elif change is not None:  # ingested again: a new version with new text
            ingest_all([Document(name, name, change[0], metadata={"bucket": change[1]})],
                       ctx=ctx, scope=scope)
            table[name] = (change[0], scope, change[1])
    return ctx, table


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=documents,
       changes=st.lists(st.none() | st.just("delete") | st.tuples(texts, st.integers(0, 3)),
                        max_size=12),
       searches=st.lists(st.tuples(st.sampled_from([("a",), ("b",), ("a", "b")]),
                                   st.none() | st.integers(0, 4), st.sampled_from([1, 2, 3, 40]),
                                   st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
                         min_size=1, max_size=3))
def test_every_fusion_equals_its_formula_over_the_candidates(docs, changes, searches):
    ctx, table = build(docs, changes)
    embedder = MockEmbedder(dim=DIM, seed=0)
    try:
        for scopes, limit, k, words in searches:
            scopes = [s for s in scopes if any(d[1] == s for d in table.values())]
            if not scopes:
                continue
            query = " ".join(words)
            rows = [r for s in scopes for r in ctx.vectors.find({"scope": s}, limit=1000)]
            text = {r.id: r.metadata["text"] for r in rows}
            bucket = {r.id: table[r.metadata["doc_iri"].rsplit("/", 1)[1]][2] for r in rows}
            candidates = [i for i in text if limit is None or bucket[i] < limit]
            q = np.asarray(embedder.embed(query), dtype=np.float64)
            stored = {s.id: np.asarray(s.vector, dtype=np.float64)
                      for s in ctx.vectors.get(candidates)}
            cosine = {i: float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))
                      for i, v in stored.items()}
            vector = ordered(cosine)[:FUSION_DEPTH]
            keyword = [(i, s) for i, s in ordered(bm25(query, text)) if i in set(candidates)]
            keyword = keyword[:FUSION_DEPTH]
            options: dict = {"scope": list(scopes), "k": k}
            if limit is not None:
                options.update(sparql_filter=BY_DOCUMENTS, bindings={"limit": limit})

            plain = retrieve(query, ctx, fusion=None, **options)
            same(plain, vector, k)
            assert len(plain) == min(k, len(candidates)) and plain.exhaustive
            if limit is not None:
                assert plain.candidates == len(candidates)
            same(retrieve(query, ctx, fusion="rrf", **options), ordered(rrf(vector, keyword)), k)
            same(retrieve(query, ctx, fusion="weighted", **options),
                 ordered(minmax(vector, keyword)), k)
            fused = retrieve(query, ctx, **options)
            if fused.fusion_weights:
                same(fused, ordered(by_best(fused.fusion_weights, vector=vector,
                                            keyword=keyword)), k)
                assert all(0.0 <= hit.score <= 1.0 + 1e-12 for hit in fused)
            else:  # nothing to weigh: no candidate ranked
                assert not fused
            again = retrieve(query, ctx, **options)
            assert [(h.iri, h.score) for h in again] == [(h.iri, h.score) for h in fused]
            assert again.fusion_weights == fused.fusion_weights
            if limit is not None:  # planned from columns or run as written: one answer
                written = retrieve(query, ctx, **{**options, "sparql_filter": AS_WRITTEN})
                assert written.filter_path == "as-written"
                assert [(h.iri, h.score) for h in written] == [(h.iri, h.score) for h in fused]
                assert written.candidates == fused.candidates
    finally:
        ctx.close()


def test_a_filter_admitting_no_vector_of_the_scope_reports_no_fusion_weights():
    """The filter selects a chunk of another scope: nothing is ranked, so there is no weight
    to report (it read ``weights vector 0.117, keyword 0.883`` for rankings that listed no
    hit), as with every other fusion."""
    with fresh_context(dim=DIM) as ctx:
        ingest_all([Document("a.md", "a.md", "apple boat")], ctx=ctx, scope="a")
        ingest_all([Document("b.md", "b.md", "grape")], ctx=ctx, scope="b")
        other = ctx.vectors.find({"scope": "b"}, limit=1)[0].id
        result = retrieve("grape", ctx, scope="a", k=5,
                          sparql_filter=f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{other}> }} }}")
        assert (len(result), result.candidates) == (0, 0)
        assert result.fusion_weights == {}
        assert "weights" not in result.explain()
