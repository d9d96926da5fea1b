"""benchmarks/datasets/build_*.py: the BEIR folders they write from a pinned commit of a real
git repository. Each test builds a small repository with ``git`` itself, lays out files the
way the public sources do, and checks the written folder against values written out here by
hand (BEIR's own id and text conventions), or against trails' BEIR loader.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks" / "datasets"))

import _beir_out as out
import build_arguana
import build_dbpedia_entity
import build_multihop

from trails.evaluation.beir import load_beir

ARGS = "arguana-counterargs-corpus/02-extracted-arguments"
VEGGIE = "animals-environment-general-health-health-general-weight-philosophy-ethics"


def commit_files(repo: Path, files: dict[str, str]) -> str:
    """A git repository at ``repo`` whose one commit holds ``files``; its commit id."""
    repo.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], check=True, capture_output=True,
                              text=True).stdout
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "data")
    return git("rev-parse", "HEAD").strip()


def arguana_files() -> dict[str, str]:
    debate = f"{ARGS}/test/environment/{VEGGIE}"
    return {
        f"{debate}/pro/pro02a-point.txt":
            "Being vegetarian helps the environment\n\nBecoming a vegetarian is green. "
            "[1] http://example.org/a?b=c\n\n[1] Someone, 2008\n",
        f"{debate}/pro/pro02b-counter.txt": "You don’t have to be vegetarian to be green.\n",
        f"{debate}/con/con06a-point.txt": "A point nobody answered\n\nIts body.\n",
        f"{debate}/thesis.txt": "This House would go vegetarian\n",
        f"{debate}/full.txt": "# PRO02A-POINT\nnot an argument file\n",
        f"{ARGS}/training/free-speech-debate/media-house-would-ban-x/con/con01a-point.txt":
            "Banning helps\n",
        f"{ARGS}/training/free-speech-debate/media-house-would-ban-x/con/con01b-counter.txt":
            "It does not, see https://example.org/x\n",
        f"{ARGS}/validation/economy/tax-house-would-tax/pro/pro01a-point.txt": "Tax it\n",
        f"{ARGS}/validation/economy/tax-house-would-tax/pro/pro01b-counter.txt": "Do not\n",
    }


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_arguana_follows_beir_ids_texts_titles_and_pairs(tmp_path):
    commit = commit_files(tmp_path / "src", arguana_files())
    data = build_arguana.build(out.GitSource(tmp_path / "src" / ".git", commit))
    written = out.write(data, tmp_path / "beir" / "arguana")

    docs = {d["_id"]: d for d in lines(tmp_path / "beir" / "arguana" / "corpus.jsonl")}
    assert set(docs) == {
        "test-environment-aeghhgwpe-pro02a", "test-environment-aeghhgwpe-pro02b",
        "test-environment-aeghhgwpe-con06a", "training-free-speech-debate-mhwbx-con01a",
        "training-free-speech-debate-mhwbx-con01b", "validation-economy-thwt-pro01a",
        "validation-economy-thwt-pro01b"}
    point = docs["test-environment-aeghhgwpe-pro02a"]
    # Line ends become spaces, the web address goes with nothing in its place (BEIR's text).
    assert point["text"] == ("Being vegetarian helps the environment  Becoming a vegetarian is "
                             "green. [1]   [1] Someone, 2008")
    assert point["title"] == VEGGIE.replace("-", " ")
    assert docs["training-free-speech-debate-mhwbx-con01b"]["text"] == "It does not, see"
    assert docs["validation-economy-thwt-pro01a"]["title"] == ""

    loaded = load_beir(tmp_path / "beir" / "arguana")
    assert loaded.split("test") == {
        "test-environment-aeghhgwpe-pro02a": {"test-environment-aeghhgwpe-pro02b": 1}}
    assert loaded.split("train") == {
        "training-free-speech-debate-mhwbx-con01a": {"training-free-speech-debate-mhwbx-con01b": 1}}
    assert loaded.split("dev") == {
        "validation-economy-thwt-pro01a": {"validation-economy-thwt-pro01b": 1}}
    # A point without a counter stays a document but is no query.
    queries = {q["_id"] for q in lines(tmp_path / "beir" / "arguana" / "queries.jsonl")}
    assert "test-environment-aeghhgwpe-con06a" not in queries
    assert set(written) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv",
                            "qrels/train.tsv", "qrels/dev.tsv"}


def test_arguana_build_is_byte_for_byte_repeatable(tmp_path):
    commit = commit_files(tmp_path / "src", arguana_files())
    first = out.write(build_arguana.build(out.GitSource(tmp_path / "src" / ".git", commit)),
                      tmp_path / "a")
    second = out.write(build_arguana.build(out.GitSource(tmp_path / "src" / ".git", commit)),
                       tmp_path / "b")
    assert first == second
    for rel in first:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_arguana_refuses_two_debates_whose_initials_collide(tmp_path):
    files = {f"{ARGS}/test/law/a-b/pro/pro01a-point.txt": "one\n",
             f"{ARGS}/test/law/apple-banana/pro/pro01a-point.txt": "two\n"}
    commit = commit_files(tmp_path / "src", files)
    with pytest.raises(out.SourceError, match="would both be test-law-ab-pro01a"):
        build_arguana.build(out.GitSource(tmp_path / "src" / ".git", commit))


def test_qrels_file_is_beirs_header_tab_rows_and_crlf(tmp_path):
    data = out.BeirSet(
        corpus=[{"_id": "d1", "title": "", "text": "x", "metadata": {}}],
        queries=[{"_id": "q1", "text": "y", "metadata": {}}],
        qrels={"test": [("q1", "d1", 2)]})
    out.write(data, tmp_path)
    assert (tmp_path / "qrels" / "test.tsv").read_bytes() == (
        b"query-id\tcorpus-id\tscore\r\nq1\td1\t2\r\n")
    assert (tmp_path / "corpus.jsonl").read_bytes() == (
        b'{"_id": "d1", "title": "", "text": "x", "metadata": {}}\n')


@pytest.mark.parametrize(("qrels", "message"), [
    ({"test": [("q1", "missing", 1)]}, "names document 'missing'"),
    ({"test": [("nobody", "d1", 1)]}, "names query 'nobody'"),
    ({"test": [("q1", "d1", 1)], "train": [("q1", "d1", 1)]}, "in both"),
    ({"test": [("q1", 'd"1', 1)]}, "cannot be written"),
    ({"test": [("q1", "d\t1", 1)]}, "cannot be written"),
    ({"test": [("q1", " d1", 1)]}, "cannot be written"),
])
def test_write_refuses_inconsistent_sets_and_writes_nothing(tmp_path, qrels, message):
    doc_ids = {d for rows in qrels.values() for _, d, _ in rows} - {"missing"}
    data = out.BeirSet(corpus=[{"_id": d, "title": "", "text": "x", "metadata": {}}
                               for d in sorted(doc_ids | {"d1"})],
                       queries=[{"_id": "q1", "text": "y", "metadata": {}}], qrels=qrels)
    with pytest.raises(ValueError, match=message):
        out.write(data, tmp_path / "set")
    assert not (tmp_path / "set").exists()


def test_missing_source_names_the_clone_to_make(tmp_path):
    with pytest.raises(out.SourceError, match="clone the repository and pass its git directory with --git-dir"):
        out.GitSource(tmp_path / "absent", "0" * 40)
    commit_files(tmp_path / "src", {"a.txt": "a"})
    with pytest.raises(out.SourceError, match="has no commit"):
        out.GitSource(tmp_path / "src" / ".git", "1" * 40)


def test_build_script_exits_1_with_a_message_when_the_mirror_is_absent(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "datasets" /
                                              "build_arguana.py"),
                          "--git-dir", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1
    assert "clone the repository and pass its git directory" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "o").exists()


def dbpedia_files(qrels_tail: str = "") -> dict[str, str]:
    folder = build_dbpedia_entity.FOLDER
    corpus = [{"_id": "<dbpedia:A>", "title": "A", "text": "Ä text", "metadata": {}},
              {"_id": "<dbpedia:B>", "title": "B", "text": "b", "metadata": {}}]
    return {
        f"{folder}/corpus.jsonl": "".join(json.dumps(d, ensure_ascii=False) + "\n"
                                          for d in corpus),
        f"{folder}/queries.jsonl": '{"_id": "Q-1", "text": "a thing"}\n'
                                   '{"_id": "Q-2", "text": "unjudged"}\n',
        f"{folder}/qrels/test.tsv": "query-id\tcorpus-id\tscore\nQ-1\t<dbpedia:A>\t2\n"
                                    "Q-1\t<dbpedia:B>\t0\n" + qrels_tail,
    }


def test_dbpedia_keeps_judged_queries_and_reserialises_as_beir(tmp_path):
    commit = commit_files(tmp_path / "src", dbpedia_files())
    data = build_dbpedia_entity.build(out.GitSource(tmp_path / "src" / ".git", commit))
    out.write(data, tmp_path / "set")
    assert (tmp_path / "set" / "queries.jsonl").read_text() == (
        '{"_id": "Q-1", "text": "a thing", "metadata": {}}\n')
    assert (tmp_path / "set" / "corpus.jsonl").read_text().splitlines()[0] == (
        '{"_id": "<dbpedia:A>", "title": "A", "text": "\\u00c4 text", "metadata": {}}')
    assert load_beir(tmp_path / "set").split("test") == {
        "Q-1": {"<dbpedia:A>": 2, "<dbpedia:B>": 0}}


def anserini_files(row: str, topic: str) -> dict[str, str]:
    return {"qrels/q.txt": row, "topics/t.tsv": topic}


def test_anserini_check_passes_on_equal_rows_and_texts(tmp_path):
    commit = commit_files(tmp_path / "src", dbpedia_files())
    data = build_dbpedia_entity.build(out.GitSource(tmp_path / "src" / ".git", commit))
    commit_files(tmp_path / "ans", anserini_files(
        "Q-1 0 <dbpedia:A> 2\nQ-1 0 <dbpedia:B> 0\nQ-9 0 <dbpedia:Z> 1\n",
        "Q-1\ta thing\nQ-9\tother\n"))
    said = out.anserini_check(tmp_path / "ans" / ".git", data, "test", "qrels/q.txt",
                              "topics/t.tsv")
    assert said.startswith("test: 2 qrels rows and 1 query texts equal")


@pytest.mark.parametrize(("row", "topic", "message"), [
    ("Q-1 0 <dbpedia:A> 1\nQ-1 0 <dbpedia:B> 0\n", "Q-1\ta thing\n", "qrels differ"),
    ("Q-1 0 <dbpedia:A> 2\n", "Q-1\ta thing\n", "qrels differ"),
    ("Q-1 0 <dbpedia:A> 2\nQ-1 0 <dbpedia:B> 0\n", "Q-1\ta different thing\n", "text differs"),
])
def test_anserini_check_names_the_first_difference(tmp_path, row, topic, message):
    commit = commit_files(tmp_path / "src", dbpedia_files())
    data = build_dbpedia_entity.build(out.GitSource(tmp_path / "src" / ".git", commit))
    commit_files(tmp_path / "ans", anserini_files(row, topic))
    with pytest.raises(ValueError, match=message):
        out.anserini_check(tmp_path / "ans" / ".git", data, "test", "qrels/q.txt",
                           "topics/t.tsv")


# Any printable id without spaces or a double quote (write() refuses those: see the next test).
ID = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Zs"),
                           blacklist_characters='"'), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.dictionaries(st.tuples(ID, ID), st.integers(0, 3), min_size=1, max_size=8))
def test_written_qrels_read_back_unchanged_by_trails_loader(tmp_path_factory, rows):
    """Whatever ids a source uses (no whitespace), trails' loader reads back exactly the rows
    that were written."""
    folder = tmp_path_factory.mktemp("set")
    triples = [(q, d, s) for (q, d), s in rows.items()]
    data = out.BeirSet(
        corpus=[{"_id": d, "title": "", "text": "t", "metadata": {}} for d in
                sorted({d for _, d, _ in triples})],
        queries=[{"_id": q, "text": "q", "metadata": {}}
                 for q in sorted({q for q, _, _ in triples})],
        qrels={"test": triples})
    out.write(data, folder)
    expected: dict[str, dict[str, int]] = {}
    for q, d, s in triples:
        expected.setdefault(q, {})[d] = s
    assert load_beir(folder).qrels["test"] == expected  # as read; split() also judges them


def multihop_files() -> dict[str, str]:
    """The shapes of the HippoRAG commit's files: HotpotQA keeps ``supporting_facts`` as the
    repr of a Python list and its corpus as {title: sentences}; MuSiQue keeps ``paragraphs``
    as a repr too, its corpus as a list of {title, text}."""
    hotpot_questions = [
        {"_id": "h1", "question": " Are Ed Wood and Scott Derrickson both directors? ",
         "supporting_facts": "[['Ed Wood', 0], ['Scott Derrickson', 0], ['Ed Wood', 1]]"},
        {"_id": "h2", "question": "Who wrote \"Sinister\"?",
         "supporting_facts": [["Sinister (film)", 0]]},
    ]
    hotpot_corpus = {"Scott Derrickson": ["Scott Derrickson is a director.", " He lives in LA."],
                     "Ed Wood": ["Ed Wood was a filmmaker."],
                     "Sinister (film)": ["Sinister is a 2012 film. "]}
    musique_questions = [
        {"id": "2hop__1_2", "question": "Who founded the publisher of X?",
         "paragraphs": repr([
             {"idx": 0, "title": "X", "paragraph_text": "X is published by Y.",
              "is_supporting": True},
             {"idx": 1, "title": "Z", "paragraph_text": "Z is unrelated.",
              "is_supporting": False},
             {"idx": 2, "title": "Y", "paragraph_text": "Y was founded by W.",
              "is_supporting": True}])},
    ]
    musique_corpus = [{"title": "Z", "text": "Z is unrelated."},
                      {"title": "Y", "text": "Y was founded by W."},
                      {"title": "X", "text": "X is published by Y."},
                      {"title": "X", "text": "Another paragraph titled X."}]
    return {"data/hotpotqa_train.json": json.dumps(hotpot_questions),
            "data/hotpotqa_train_corpus.json": json.dumps(hotpot_corpus),
            "data/musique_train.json": json.dumps(musique_questions),
            "data/musique_train_corpus.json": json.dumps(musique_corpus)}


def test_multihop_sets_keep_the_source_order_and_the_supporting_paragraphs(tmp_path):
    commit = commit_files(tmp_path / "src", multihop_files())
    source = out.GitSource(tmp_path / "src" / ".git", commit)
    for name in ("hotpotqa", "musique"):
        out.write(build_multihop.build(source, name=name), tmp_path / "beir" / name)

    hotpot = tmp_path / "beir" / "hotpotqa"
    assert lines(hotpot / "corpus.jsonl") == [
        {"_id": "hotpotqa-0", "title": "Scott Derrickson",
         "text": "Scott Derrickson is a director. He lives in LA.", "metadata": {}},
        {"_id": "hotpotqa-1", "title": "Ed Wood", "text": "Ed Wood was a filmmaker.",
         "metadata": {}},
        {"_id": "hotpotqa-2", "title": "Sinister (film)", "text": "Sinister is a 2012 film.",
         "metadata": {}}]
    assert lines(hotpot / "queries.jsonl") == [
        {"_id": "h1", "text": "Are Ed Wood and Scott Derrickson both directors?", "metadata": {}},
        {"_id": "h2", "text": 'Who wrote "Sinister"?', "metadata": {}}]
    # One row per supporting paragraph, however many of its sentences are supporting facts.
    assert (hotpot / "qrels" / "train.tsv").read_bytes() == (
        b"query-id\tcorpus-id\tscore\r\nh1\thotpotqa-1\t1\r\nh1\thotpotqa-0\t1\r\n"
        b"h2\thotpotqa-2\t1\r\n")

    musique = tmp_path / "beir" / "musique"
    assert [d["_id"] for d in lines(musique / "corpus.jsonl")] == [
        "musique-0", "musique-1", "musique-2", "musique-3"]
    # Found by title *and* text: the other paragraph titled X is not relevant.
    assert (musique / "qrels" / "train.tsv").read_bytes() == (
        b"query-id\tcorpus-id\tscore\r\n2hop__1_2\tmusique-2\t1\r\n"
        b"2hop__1_2\tmusique-1\t1\r\n")
    loaded = load_beir(musique)
    assert loaded.splits == ["train"]
    assert loaded.split("train") == {"2hop__1_2": {"musique-2": 1, "musique-1": 1}}


def test_multihop_script_exits_1_naming_the_missing_mirror(tmp_path, capsys):
    assert build_multihop.main(["--git-dir", str(tmp_path / "absent"),
                                "--out", str(tmp_path / "beir")]) == 1
    assert "clone the repository and pass its git directory" in capsys.readouterr().err
    assert not (tmp_path / "beir").exists()
