"""HotpotQA and MuSiQue training samples in BEIR layout: questions that name people, places
and works, against Wikipedia paragraphs pooled from each question's own candidates (the gold
paragraphs and the distractors the data set chose for it), split ``train`` only.

    python benchmarks/datasets/build_multihop.py [--out DIR] [--git-dir DIR]

Source: ``data/hotpotqa_train.json`` and ``data/musique_train.json`` with their
``*_corpus.json`` as committed in OSU-NLP-Group/HippoRAG at commit 3d95d25 (clone it and pass
its git directory with ``--git-dir``, or keep it as
``$TRAILS_GIT_MIRRORS/OSU-NLP-Group+HippoRAG/repo``): 100 questions of each data set's
training split.

Why these two: the guard study (docs/fusion-study.md) needs tuning data of the entity regime.
DBpedia-Entity has only a test sample here; these are *training* splits of two other
Wikipedia sets whose corpora are, like that sample, pools of candidates that share the
question's words (HotpotQA's distractors were retrieved by bigram TF-IDF on the question;
MuSiQue's are chosen to look related), so a keyword ranking finds matches everywhere.

- ``hotpotqa``: 994 paragraphs, ids ``hotpotqa-<n>`` in the source's order, the title as
  title, the sentences joined as text; each question's relevant documents are the
  paragraphs its supporting facts name (score 1).
- ``musique``: 1,890 paragraphs, ids ``musique-<n>``; relevant: the question's paragraphs
  marked supporting (score 1), found in the corpus by title and text.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _beir_out as out

REPOSITORY = "OSU-NLP-Group/HippoRAG"
COMMIT = "3d95d255a8db0c1699b853cfb4fbe5056708162d"
FILES = {"hotpotqa": ("data/hotpotqa_train.json", "data/hotpotqa_train_corpus.json"),
         "musique": ("data/musique_train.json", "data/musique_train_corpus.json")}


def literal(value: Any) -> Any:
    """A field the source keeps as Python's repr of a list (or as the list itself)."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def hotpotqa(questions: list[dict[str, Any]], corpus: dict[str, list[str]]) -> out.BeirSet:
    data = out.BeirSet()
    ids = {}
    for n, (title, sentences) in enumerate(corpus.items()):
        ids[title] = f"hotpotqa-{n}"
        data.corpus.append({"_id": ids[title], "title": title, "text": "".join(sentences).strip(),
                            "metadata": {}})
    rows = []
    for question in questions:
        data.queries.append({"_id": question["_id"], "text": question["question"].strip(),
                             "metadata": {}})
        gold = dict.fromkeys(title for title, _ in literal(question["supporting_facts"]))
        rows += [(question["_id"], ids[title], 1) for title in gold]
    data.qrels["train"] = rows
    return data


def musique(questions: list[dict[str, Any]], corpus: list[dict[str, str]]) -> out.BeirSet:
    data = out.BeirSet()
    ids = {}
    for n, paragraph in enumerate(corpus):
        ids[(paragraph["title"], paragraph["text"])] = f"musique-{n}"
        data.corpus.append({"_id": f"musique-{n}", "title": paragraph["title"],
                            "text": paragraph["text"], "metadata": {}})
    rows = []
    for question in questions:
        data.queries.append({"_id": question["id"], "text": question["question"].strip(),
                             "metadata": {}})
        gold = [ids[(p["title"], p["paragraph_text"])] for p in literal(question["paragraphs"])
                if p.get("is_supporting")]
        rows += [(question["id"], doc, 1) for doc in dict.fromkeys(gold)]
    data.qrels["train"] = rows
    return data


BUILDERS = {"hotpotqa": hotpotqa, "musique": musique}


def build(source: out.GitSource, *, name: str) -> out.BeirSet:
    questions_path, corpus_path = FILES[name]
    files = source.read_many([questions_path, corpus_path])
    return BUILDERS[name](json.loads(files[questions_path]), json.loads(files[corpus_path]))


def main(argv: list[str] | None = None) -> int:
    return out.build_main(argv, doc=__doc__, repository=REPOSITORY, commit=COMMIT,
                          builders={name: functools.partial(build, name=name) for name in FILES})


if __name__ == "__main__":
    sys.exit(main())
