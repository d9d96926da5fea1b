"""trails.evaluation and ``trails eval``: BEIR loading, max-pooling, metric plumbing, the CLI;
and the fusion studies' helpers in ``benchmarks/_lab.py``.

Every number here is checked against nDCG and recall computed by hand (linear gains, log2
discounts, as trec_eval's ndcg_cut and BEIR use), on a tiny BEIR-layout data set written to
tmp_path and a MockEmbedder, so nothing loads a model.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from trails.cli import app
from trails.errors import InvalidArgumentError
from trails.evaluation import (
    doc_ids_by_iri,
    documents,
    evaluate,
    find_dataset,
    format_table,
    ingest_dataset,
    load_beir,
    max_pool,
    score_run,
)
from trails.testing import fresh_context
from trails.vector.embedders.mock import MockEmbedder

# The fusion studies' helpers live beside the benchmark scripts that use them.
sys.path.insert(0, str(ROOT / "benchmarks"))
from _lab import CachedEmbedder, collect_rankings, corrupt, derived_store, fused_run

pytest.importorskip("ir_measures")

CORPUS = [
    {"_id": "ruby", "title": "Rails", "text": "Rails is a web framework for Ruby programmers."},
    {"_id": "python", "title": "Django", "text": "Django is a web framework for Python."},
    {"_id": "pg", "title": "PostgreSQL", "text": "PostgreSQL is a relational database server."},
    {"_id": "tea", "title": "", "text": "Green tea contains caffeine and catechins."},
]
QUERIES = [
    {"_id": "q1", "text": "Ruby Rails framework"},
    {"_id": "q2", "text": "relational database server PostgreSQL"},
    {"_id": "q3", "text": "caffeine in green tea"},
    {"_id": "q4", "text": "unanswered question"},
]
# Graded, with a CRLF header as in the BEIR files; q4 is in train only.
TEST_QRELS = [("q1", "ruby", 2), ("q1", "python", 1), ("q2", "pg", 1), ("q3", "tea", 1),
              ("q3", "ruby", 1)]


def _ndcg10(ranking: list[str], relevant: dict[str, int]) -> float:
    """nDCG@10 by hand: gain = relevance, discount log2(rank + 1)."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({**d, "metadata": {}}) + "\n" for d in CORPUS))
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({**q, "metadata": {}}) + "\n" for q in QUERIES))
    with (root / "qrels" / "test.tsv").open("w", newline="") as f:
        f.write("query-id\tcorpus-id\tscore\r\n")
        f.writelines(f"{q}\t{d}\t{s}\r\n" for q, d, s in TEST_QRELS)
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq4\tpg\t1\n")
    return root


def test_load_beir_reads_corpus_queries_and_every_split(beir):
    data = load_beir(beir)
    assert data.name == "tiny"
    assert list(data.corpus) == ["ruby", "python", "pg", "tea"]
    assert data.queries["q2"] == "relational database server PostgreSQL"
    assert data.splits == ["test", "train"]
    assert data.split("test")["q1"] == {"ruby": 2, "python": 1}
    assert data.split("train") == {"q4": {"pg": 1}}
    with pytest.raises(ValueError, match="no 'dev' split; it has test, train"):
        data.split("dev")


def test_load_beir_refuses_a_folder_that_is_not_beir(tmp_path):
    with pytest.raises(ValueError, match="not a BEIR data set"):
        load_beir(tmp_path)


def test_a_data_set_is_found_by_name_only_where_trails_beir_dir_says(beir, tmp_path,
                                                                      monkeypatch):
    # The library reads the user's data where the user says, never a folder it guesses
    # (a `shared/data/beir` beside the working directory was once one).
    guessed = tmp_path / "work" / "shared" / "data" / "beir"
    guessed.mkdir(parents=True)
    (guessed / "tiny").symlink_to(beir)
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("TRAILS_BEIR_DIR", raising=False)
    with pytest.raises(InvalidArgumentError, match="TRAILS_BEIR_DIR is not set"):
        find_dataset("tiny")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("TRAILS_BEIR_DIR", f"{elsewhere}:{beir.parent}")
    assert find_dataset("tiny") == beir
    assert find_dataset(beir) == beir  # a folder is taken as given
    with pytest.raises(InvalidArgumentError, match="no BEIR data set 'scifact' in"):
        find_dataset("scifact")


def test_documents_are_title_blank_line_text_with_the_beir_id(beir):
    docs = list(documents(load_beir(beir)))
    assert [d.id for d in docs] == ["ruby", "python", "pg", "tea"]
    assert docs[0].text == "Rails\n\nRails is a web framework for Ruby programmers."
    assert docs[0].title == "Rails"
    assert docs[3].text == "Green tea contains caffeine and catechins." and docs[3].title is None


def test_score_run_matches_hand_computed_ndcg_and_recall():
    qrels = {"a": {"d1": 1, "d2": 2}, "b": {"d9": 1, "d8": 1}, "c": {"d5": 1}}
    run = {"a": ["d3", "d1", "d2"], "b": ["d8"] + [f"x{i}" for i in range(200)]}
    means, per_query = score_run(run, qrels)
    # a: DCG = 1/log2(3) + 2/log2(4) = 1.6309; IDCG = 2 + 1/log2(3) = 2.6309 -> 0.6199.
    assert per_query["a"]["nDCG@10"] == pytest.approx(1.6309298 / 2.6309298)
    assert per_query["a"]["R@100"] == 1.0
    # b: d8 first of two relevant: DCG 1, IDCG 1 + 1/log2(3) -> 0.6131; recall 1/2.
    assert per_query["b"]["nDCG@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert per_query["b"]["R@100"] == 0.5
    # c: no run at all scores 0 and still counts in the mean.
    assert per_query["c"] == {"nDCG@10": 0.0, "R@100": 0.0}
    assert means["nDCG@10"] == pytest.approx((0.6199062 + 0.6131472) / 3)
    assert means["R@100"] == pytest.approx(0.5)


def test_score_run_keeps_the_given_order_when_trec_eval_would_reorder_ties():
    # With equal scores trec_eval sorts by document id; ranks are what is scored here.
    means, _ = score_run({"q": ["b", "a"]}, {"q": {"a": 1}})
    assert means["nDCG@10"] == pytest.approx(1 / math.log2(3))


def test_recall_at_100_counts_only_the_first_100_documents():
    run = {"q": [f"x{i}" for i in range(100)] + ["rel"]}
    assert score_run(run, {"q": {"rel": 1}})[0]["R@100"] == 0.0
    assert score_run({"q": run["q"][1:]}, {"q": {"rel": 1}})[0]["R@100"] == 1.0


def test_max_pool_ranks_a_document_by_its_best_chunk():
    doc_of = {"t:doc/a": "a", "t:doc/b": "b", "t:doc/c": "c"}
    hits = [("t:doc/b/v/1/c/3", 0.9), ("t:doc/a/v/1/c/0", 0.8), ("t:doc/b/v/1/c/0", 0.7),
            ("t:doc/zzz/v/1/c/0", 0.6), ("t:doc/c/v/1/c/1", 0.5)]
    assert max_pool(hits, doc_of) == ["b", "a", "c"]
    assert max_pool(hits, doc_of, depth=2) == ["b", "a"]


def test_max_pool_finds_the_document_of_an_id_holding_a_v_segment():
    # A chunk IRI is <doc>/v/<version>/c/<n>; the document's own id may hold "/v/".
    doc_of = {"t:doc/a": "a", "t:doc/a/v/x": "a/v/x"}
    hits = [("t:doc/a/v/x/v/0123456789abcdef/c/0", 0.9), ("t:doc/a/v/0123456789abcdef/c/0", 0.8)]
    assert max_pool(hits, doc_of) == ["a/v/x", "a"]


def test_evaluate_end_to_end_agrees_with_hand_computed_scores(beir):
    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        stats = ingest_dataset(data, ctx)
        assert stats.ingested == 4
        assert ingest_dataset(data, ctx).skipped == 4  # unchanged: nothing re-embedded
        rankings: dict[str, list[str]] = {}

        def spy(system, done, total):
            assert total == 3 and 1 <= done <= 3

        results = evaluate(data, "test", ctx, systems=["vector"], progress=spy)
        from trails import retrieve

        for qid in data.split("test"):
            hits = retrieve(data.queries[qid], ctx, mode="vector", k=10)
            rankings[qid] = max_pool(hits, {h.metadata["doc_iri"]: h.metadata["doc_iri"]
                                            .rsplit("/", 1)[-1] for h in hits})
    (result,) = results
    assert result.system == "vector" and result.queries == 3
    # The bag-of-words mock puts each query's matching document first.
    assert rankings["q1"][0] == "ruby" and rankings["q2"][0] == "pg"
    assert rankings["q3"][0] == "tea"
    qrels = data.split("test")
    expected = {q: _ndcg10(rankings[q], qrels[q]) for q in qrels}
    assert expected["q2"] == 1.0
    for q in qrels:
        assert result.per_query[q]["nDCG@10"] == pytest.approx(expected[q])
        assert result.per_query[q]["R@100"] == 1.0  # 4 documents: all retrieved
    assert result["nDCG@10"] == pytest.approx(sum(expected.values()) / 3)
    assert result["R@100"] == 1.0


def test_evaluate_limit_scores_only_the_first_queries(beir):
    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        (result,) = evaluate(data, "test", ctx, systems=["vector"], limit=1)
    assert result.queries == 1 and list(result.per_query) == ["q1"]


def test_cached_embedder_is_the_inner_embedder_and_embeds_a_text_once(tmp_path):
    inner = MockEmbedder(dim=16)
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    assert cached.identity == inner.identity and cached.dim == 16
    first = cached.embed_array(["alpha", "beta", "alpha"])
    assert cached.misses == 2 and cached.hits == 1
    again = CachedEmbedder(MockEmbedder(dim=16), tmp_path / "cache.sqlite")
    assert (again.embed_array(["beta", "alpha"]) == first[[1, 0]]).all()
    assert again.misses == 0 and again.hits == 2
    assert cached.embed("alpha") == inner.embed("alpha")


def test_format_table_puts_published_figures_beside_the_same_system(beir):
    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        results = evaluate(data, "test", ctx, systems=["vector"])
    results[0].dataset = "scifact"
    table = format_table(results, extra_rows=[("rerank", {"scifact": "n/a"})])
    lines = table.splitlines()
    assert lines[0] == "| system | SciFact nDCG@10 | published | SciFact R@100 |"
    assert lines[2].startswith(f"| vector | {results[0]['nDCG@10']:.3f} | 0.645 | ")
    assert lines[3] == "| rerank | n/a |  |  |"
    assert "| *published: bge-small-en-v1.5 (MTEB)* |  | 0.713 |  |" in lines


runner = CliRunner()


def test_cli_eval_prints_the_table_and_exits_0(beir, tmp_path):
    db = tmp_path / "ctx"
    result = runner.invoke(app, ["--db", str(db), "eval", str(beir), "--model", "mock:256",
                                 "--mode", "vector", "--split", "test"])
    assert result.exit_code == 0, result.output
    assert "tiny, split test, 3 queries" in result.output
    assert "| system | tiny nDCG@10 | published | tiny R@100 |" in result.output
    assert "| vector | " in result.output
    # The second run reuses the context (recorded embedder) and prints JSON only.
    again = runner.invoke(app, ["--db", str(db), "eval", str(beir), "--mode", "vector",
                                "--json"])
    assert again.exit_code == 0, again.output
    (row,) = json.loads(again.stdout)
    assert row["system"] == "vector" and row["queries"] == 3 and row["R@100"] == 1.0
    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        (expected,) = evaluate(data, "test", ctx, systems=["vector"])
    assert row["nDCG@10"] == pytest.approx(expected["nDCG@10"])
    assert f"| vector | {expected['nDCG@10']:.3f} |" in result.output


def test_cli_eval_reports_a_missing_split_or_reranker_in_one_line(beir, tmp_path):
    missing = runner.invoke(app, ["--db", str(tmp_path / "c"), "eval", str(beir), "--model",
                                  "mock:8", "--split", "dev"])
    assert missing.exit_code == 1
    assert "no 'dev' split" in missing.stderr
    rerank = runner.invoke(app, ["--db", str(tmp_path / "c"), "eval", str(beir), "--model",
                                 "mock:8", "--mode", "rerank"])
    assert rerank.exit_code == 1 and "--reranker" in rerank.stderr
    nothing = runner.invoke(app, ["eval", str(tmp_path / "nowhere")])
    assert nothing.exit_code == 1 and "no BEIR data set" in nothing.stderr


def test_corrupt_is_deterministic_and_replaces_about_the_given_share_of_letters():
    text = "Keyword ranking over noisy text. " * 40
    once, again = corrupt(text, 0.3, seed=1), corrupt(text, 0.3, seed=1)
    assert once == again and len(once) == len(text)
    changed = sum(a != b for a, b in zip(text, once))
    letters = sum(c.isalpha() for c in text)
    assert 0.2 * letters < changed < 0.3 * letters  # 30% drawn, ~1/26 redrawn the same
    assert all(a == b for a, b in zip(text, once) if not a.isalpha())
    assert corrupt(text, 0.0) == text


def test_derived_store_damages_one_signal_and_keeps_the_other(beir):
    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        clean = {s.id: s for s in ctx.vectors.get(ctx.vectors.all_ids())}
        noisy_text = derived_store(ctx.vectors, text=lambda t: corrupt(t, 1.0))
        noisy_vectors = derived_store(ctx.vectors, vector_noise=4.0)
        for row in noisy_text.get(list(clean)):
            assert row.vector == pytest.approx(clean[row.id].vector, abs=1e-6)
            assert row.metadata["text"] != clean[row.id].metadata["text"]
            assert row.metadata["doc_iri"] == clean[row.id].metadata["doc_iri"]
        assert noisy_text.keyword_search("PostgreSQL relational database", 5) == []
        assert [h.id for h in noisy_vectors.keyword_search("PostgreSQL", 5)] == [
            h.id for h in ctx.vectors.keyword_search("PostgreSQL", 5)]
        moved = [row.vector != pytest.approx(clean[row.id].vector, abs=1e-3)
                 for row in noisy_vectors.get(list(clean))]
        assert all(moved)


def test_cli_eval_refuses_to_rechunk_a_context_built_with_other_settings(beir, tmp_path):
    db = str(tmp_path / "ctx")
    whole = runner.invoke(app, ["--db", db, "eval", str(beir), "--model", "mock:32",
                                "--chunking", "whole", "--mode", "vector"])
    assert whole.exit_code == 0, whole.output
    other = runner.invoke(app, ["--db", db, "eval", str(beir), "--mode", "vector"])
    assert other.exit_code == 1
    assert "other settings" in other.stderr and "Traceback" not in other.stderr


def test_collected_rankings_fuse_to_the_documents_retrieve_ranks(beir):
    from trails import retrieve
    from trails.rank.fusion import rrf

    data = load_beir(beir)
    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        doc_of = doc_ids_by_iri(data, ctx)
        rankings = collect_rankings(data, "test", ctx, depth=20)
        assert list(rankings) == ["q1", "q2", "q3"]
        assert {name for lists in rankings.values() for name in lists} == {"vector", "keyword"}
        fused = fused_run(rankings, rrf, doc_of)
        vector_only = fused_run(rankings, None, doc_of, only="vector")
        for query_id, lists in rankings.items():
            query = data.queries[query_id]
            hybrid = retrieve(query, ctx, mode="hybrid", k=20, fusion="rrf")
            assert fused[query_id] == max_pool(hybrid, doc_of)
            vector = retrieve(query, ctx, mode="vector", k=20)
            assert vector_only[query_id] == max_pool(vector, doc_of)
            assert lists["vector"].quality == pytest.approx(vector[0].score)
    with pytest.raises(ValueError, match="needs a fusion"):
        fused_run(rankings, None, doc_of)


def test_cli_eval_shows_a_data_set_whose_name_holds_brackets_as_it_is(beir, tmp_path):
    # On a terminal (FORCE_COLOR makes rich treat the runner's stream as one) the progress
    # lines name the data set and the context: [brackets] there are text, not markup.
    odd = beir.rename(beir.parent / "[bold]tiny [red]")
    result = runner.invoke(app, ["--db", str(tmp_path / "[italic]ctx"), "eval", str(odd),
                                 "--model", "mock:32", "--mode", "vector", "--split", "test"],
                           env={"FORCE_COLOR": "1", "COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert f"ingesting [bold]tiny [red] (4 documents) into {tmp_path / '[italic]ctx'}" in (
        result.stderr)
    assert "[bold]tiny [red], split test, 3 queries" in result.stdout


# ArguAna's shape: every query is an argument of the corpus, its relevant document the counter.
ARGUMENTS = {
    "a1": "nuclear power is clean energy for the grid",
    "a1c": "nuclear waste makes power from the grid anything but clean",
    "a2": "school uniforms reduce bullying among pupils",
    "a2c": "pupils are bullied for far more than the clothes a school asks of them",
}


def _argument_set(tmp_path: Path, queries: dict[str, str]) -> Path:
    root = tmp_path / "arguments"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in ARGUMENTS.items()))
    (root / "queries.jsonl").write_text("".join(
        json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries.items()))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na1\ta1c\t1\na2\ta2c\t1\n")
    return root


def test_a_query_that_is_a_document_does_not_find_itself(tmp_path):
    """BEIR's ignore_identical_ids: a query's own document is no hit, relevant or not; with
    it, the counter-argument ranks second at best and nDCG@10 could never reach 1."""
    data = load_beir(_argument_set(tmp_path, {"a1": ARGUMENTS["a1"], "a2": ARGUMENTS["a2"]}))
    assert data.queries_are_documents
    from trails import retrieve

    with fresh_context(dim=256) as ctx:
        ingest_dataset(data, ctx)
        doc_of = doc_ids_by_iri(data, ctx)
        unruled = {q: max_pool(retrieve(ARGUMENTS[q], ctx, mode="vector", k=10), doc_of)
                   for q in ("a1", "a2")}
        (result,) = evaluate(data, "test", ctx, systems=["vector"])
    for query, counter in (("a1", "a1c"), ("a2", "a2c")):
        assert unruled[query][:2] == [query, counter]  # what the rule removes: itself first
        assert result.per_query[query]["nDCG@10"] == 1.0  # the counter first, not second


def test_queries_that_only_share_ids_with_documents_are_scored_as_they_are(tmp_path):
    # SciFact's numeric ids collide with document ids by chance; their texts differ.
    data = load_beir(_argument_set(tmp_path, {"a1": "how clean is nuclear power",
                                              "a2": "do uniforms stop bullying"}))
    assert not data.queries_are_documents


def _qrels(beir: Path, text: str) -> Path:
    (beir / "qrels" / "test.tsv").write_text(text, encoding="utf-8")
    return beir


@pytest.mark.parametrize("text", [
    "q1\t0\truby\t2\nq1\t0\tpython\t1\nq2\t0\tpg\t1\n",  # TREC, tabs
    "q1 0 ruby 2\nq1 0 python 1\nq2 0 pg 1\n",  # TREC, as trec_eval writes it
    "q1 ruby 2\nq1 python 1\nq2 pg 1\n",  # BEIR's columns, space-separated, no header
    "query-id corpus-id score\nq1 ruby  2\nq1 python 1\n\nq2 pg 1\n",  # a header, spaces
])
def test_qrels_are_read_by_their_columns_in_beir_and_trec_layouts(beir, text):
    # A TREC line read as BEIR's judged its iteration column ("0") as the document, and a
    # space-separated first line was skipped as a header: every score over the wrong set.
    assert load_beir(_qrels(beir, text)).split("test") == {
        "q1": {"ruby": 2, "python": 1}, "q2": {"pg": 1}}


@pytest.mark.parametrize("text, line", [
    ("q1\truby\n", 1), ("q1\truby\t1\nq2\tpg\n", 2), ("q1 x ruby 1 extra\n", 1)])
def test_a_qrels_line_of_another_shape_is_refused_naming_its_line(beir, text, line):
    with pytest.raises(ValueError, match=rf"test\.tsv:{line}: \d field\(s\); a qrels line is"):
        load_beir(_qrels(beir, text))


@pytest.mark.parametrize("grade", ["1.0", "yes", "1_0", "", "½"])
def test_a_relevance_that_is_no_whole_number_is_refused_naming_its_line(beir, grade):
    with pytest.raises(ValueError, match=rf"test\.tsv:3: the relevance '{grade}' is no whole"):
        load_beir(_qrels(beir, f"query-id\tcorpus-id\tscore\nq1\truby\t1\nq2\tpg\t{grade}\n"))


def test_a_pair_judged_twice_alike_is_read_once_and_otherwise_refused(beir):
    same = "q1\truby\t2\nq2\tpg\t1\nq1\truby\t2\n"
    assert load_beir(_qrels(beir, same)).split("test") == {"q1": {"ruby": 2}, "q2": {"pg": 1}}
    # The last line used to win silently: 0 here made ruby irrelevant to q1.
    with pytest.raises(ValueError, match=r"test\.tsv:3: q1 ruby is judged 0 here and 2 on "
                                         r"line 1; keep one"):
        load_beir(_qrels(beir, "q1\truby\t2\nq2\tpg\t1\nq1\truby\t0\n"))


@pytest.mark.parametrize("text, says", [
    ("", "judges no document relevant"),
    ("query-id\tcorpus-id\tscore\n", "judges no document relevant"),
    ("q1\truby\t0\nq2\tpg\t-1\n", "judges no document relevant"),
    ("q1\tdoc-17\t1\nq2\tdoc-4\t2\nq2\tpg\t0\n",
     r"none of the 2 documents .*test\.tsv judges relevant is in .*corpus\.jsonl \(e\.g\. 'doc-17'\)"),
])
def test_a_split_that_can_only_score_0_is_refused_before_anything_runs(beir, tmp_path, text,
                                                                        says):
    # It was scored: nDCG@10 0.000 over 0 queries (or every query), as if the system failed.
    data = load_beir(_qrels(beir, text))
    with pytest.raises(InvalidArgumentError, match=says):
        data.split("test")
    result = runner.invoke(app, ["--db", str(tmp_path / "c"), "eval", str(beir), "--model",
                                 "mock:8", "--mode", "vector"])
    assert result.exit_code == 1 and "so every score would be 0" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "c").exists()


def _corpus(beir: Path, *extra: bytes) -> Path:
    lines = [json.dumps(d).encode() for d in CORPUS]
    (beir / "corpus.jsonl").write_bytes(b"\n".join([*lines, *extra]) + b"\n")
    return beir


@pytest.mark.parametrize("extra, says", [
    # the last record of an id used to win silently, in the first one's place
    (json.dumps({"_id": "ruby", "text": "Ruby gems are red."}).encode(),
     r"corpus\.jsonl:5: the _id 'ruby' again, with other content"),
    (b'{"_id": "cafe", "text": "caf\xe9"}', r"corpus\.jsonl:5: not UTF-8"),
    (json.dumps({"_id": None, "text": "x"}).encode(),  # was the document 'None'
     r"corpus\.jsonl:5: expected a JSON object with an _id"),
    (json.dumps({"_id": "", "text": "x"}).encode(), r"corpus\.jsonl:5: expected"),
    (json.dumps({"_id": "x", "text": ["a", "b"]}).encode(),  # was searched as "['a', 'b']"
     r"corpus\.jsonl:5: text must be text, not list"),
])
def test_a_corpus_record_that_cannot_be_read_as_written_is_refused_naming_its_line(
        beir, extra, says):
    with pytest.raises(InvalidArgumentError, match=says):
        load_beir(_corpus(beir, extra))


def test_a_record_given_twice_alike_a_byte_order_mark_and_an_integer_id_are_read(beir):
    again = json.dumps(CORPUS[0]).encode()
    data = load_beir(_corpus(beir, again, json.dumps({"_id": 7, "text": "seven"}).encode()))
    assert list(data.corpus) == ["ruby", "python", "pg", "tea", "7"]
    (beir / "queries.jsonl").write_text("\ufeff" + json.dumps(QUERIES[0]) + "\n",
                                        encoding="utf-8")
    assert load_beir(beir).queries == {"q1": "Ruby Rails framework"}


def test_an_empty_corpus_or_query_file_is_refused_naming_it(beir):
    (beir / "queries.jsonl").write_text("\n\n")
    with pytest.raises(InvalidArgumentError, match=r"queries\.jsonl holds no records"):
        load_beir(beir)


def test_every_refusal_of_a_data_set_is_a_trails_error(beir, tmp_path):
    with pytest.raises(InvalidArgumentError, match="no 'dev' split"):
        load_beir(beir).split("dev")
    with pytest.raises(InvalidArgumentError, match="not a BEIR data set"):
        load_beir(tmp_path / "nowhere")


@pytest.mark.parametrize("measure", ["Foo@10", "nDCG@x", "P_5", "ndcg_cut.10", ""])
def test_a_measure_ir_measures_does_not_know_is_refused_by_name(measure):
    # It was ir-measures' own NameError or ValueError ("problem parsing measure ...").
    with pytest.raises(InvalidArgumentError, match=rf"measure '{re.escape(measure)}' is none "):
        score_run({"q": ["d1"]}, {"q": {"d1": 1}}, measures=["nDCG@10", measure])


def test_two_names_of_one_measure_each_get_its_value():
    # "R(rel=1)@100" is "R@100": the first name was left at 0.0, the second given the value.
    means, per_query = score_run({"q": ["x", "d1"]}, {"q": {"d1": 1, "d2": 1}},
                                 measures=["R@100", "R(rel=1)@100", "P@2"])
    assert means == {"R@100": 0.5, "R(rel=1)@100": 0.5, "P@2": 0.5}
    assert per_query["q"] == means


@pytest.mark.parametrize("record", [{"_id": "q9", "query": "tea and caffeine"},
                                    {"_id": "q9", "text": "  "}, {"_id": "q9", "text": None}])
def test_a_query_without_text_is_refused_naming_its_line(beir, record):
    # It was searched as "" and scored: a queries file whose key is "query" scored every
    # query on whatever an empty search finds.
    with (beir / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps(record) + "\n")
    with pytest.raises(InvalidArgumentError, match=r"queries\.jsonl:5: the query 'q9' has no "
                                                   r"text( but a 'query')?: a query record is"):
        load_beir(beir)


def test_a_corpus_document_that_fails_to_ingest_is_named_not_called_a_bug(beir, tmp_path):
    # A RuntimeError: trails eval printed "internal error ... this is a bug in trails" (exit 4).
    with (beir / "corpus.jsonl").open("a") as corpus:
        corpus.write('{"_id": "bad", "text": "caf\\ud800"}\n')
    with fresh_context(dim=8) as ctx, pytest.raises(
            InvalidArgumentError, match=r"1 document\(s\) of .*corpus\.jsonl failed to ingest "
                                        r"\(tiny/corpus\.jsonl#bad: document 'bad': text holds"):
        ingest_dataset(load_beir(beir), ctx)
    result = runner.invoke(app, ["--db", str(tmp_path / "c"), "eval", str(beir), "--model",
                                 "mock:8", "--mode", "vector"])
    assert result.exit_code == 1 and "failed to ingest" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("key", ["body", "contents"])
def test_a_document_whose_text_is_under_another_key_is_refused_naming_it(beir, key):
    # It was ingested with no chunk (0 chunks, no failure), never found, and scored 0.
    with pytest.raises(InvalidArgumentError, match=rf"corpus\.jsonl:5: the document 'x' has "
                                                   rf"no title or text but a '{key}'"):
        load_beir(_corpus(beir, json.dumps({"_id": "x", key: "Apples are red."}).encode()))
    # A record with nothing to say at all is the data set's own business.
    empty = json.dumps({"_id": "x", "text": "", "metadata": {"url": "u"}}).encode()
    assert load_beir(_corpus(beir, empty)).corpus["x"] == ("", "")


def test_a_document_listed_twice_in_a_run_keeps_its_first_rank():
    # Its later, lower score replaced the first: d1 ranked second, nDCG@10 0.63 instead of 1.
    means, _ = score_run({"q": ["d1", "d2", "d1"]}, {"q": {"d1": 1}})
    assert means["nDCG@10"] == 1.0
    # d2 then d1 twice: d1 at rank 2, as if listed once.
    assert score_run({"q": ["d2", "d1", "d3", "d1"]}, {"q": {"d1": 1}})[0]["nDCG@10"] == (
        pytest.approx(1 / math.log2(3)))


def test_a_first_line_with_a_bad_relevance_is_refused_not_taken_for_a_header(beir):
    # "q1 ruby 1.0" on line 1 was skipped as a header: ruby was silently not relevant.
    with pytest.raises(InvalidArgumentError, match=r"test\.tsv:1: the relevance '1\.0'"):
        load_beir(_qrels(beir, "q1\truby\t1.0\nq2\tpg\t1\n"))
    assert load_beir(_qrels(beir, "qid iter docno rel\nq2 0 pg 1\n")).split("test") == {
        "q2": {"pg": 1}}


def test_relevant_documents_the_corpus_lacks_are_scored_and_said(beir, tmp_path):
    # They were scored as unfindable (as BEIR does) without a word: recall capped below 1.
    _qrels(beir, "q1\truby\t1\nq1\tgone-1\t1\nq2\tpg\t1\nq2\tgone-2\t0\n")
    assert load_beir(beir).unfindable("test") == ["gone-1"]
    result = runner.invoke(app, ["--db", str(tmp_path / "c"), "eval", str(beir), "--model",
                                 "mock:64", "--mode", "keyword", "--json"])
    assert result.exit_code == 0, result.output
    assert ("note: 1 document(s) qrels/test.tsv judges relevant are not in corpus.jsonl "
            "(e.g. 'gone-1'): no system can find them") in result.stderr
    (row,) = json.loads(result.stdout)
    assert row["R@100"] == pytest.approx((1 / 2 + 1) / 2)  # q1 finds ruby of its two


def test_a_query_utf8_cannot_hold_is_refused_naming_its_line(beir, tmp_path):
    # It was read, the corpus ingested, and the evaluation stopped at that query with
    # "query holds a lone surrogate", naming no query and no line.
    with (beir / "queries.jsonl").open("a") as queries:
        queries.write('{"_id": "q9", "text": "caf\\ud800"}\n')
    with pytest.raises(InvalidArgumentError, match=r"queries\.jsonl:5: the query 'q9' holds a "
                                                   r"lone surrogate"):
        load_beir(beir)
