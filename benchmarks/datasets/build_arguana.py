"""ArguAna in BEIR layout, rebuilt from the original ArguAna Counterargs Corpus, with its
training and validation splits as ``train`` and ``dev``.

    python benchmarks/datasets/build_arguana.py [--out DIR] [--git-dir DIR]

Source: the corpus of Wachsmuth, Syed and Stein (ACL 2018), folder
``arguana-counterargs-corpus/`` as committed in cchang-vassar/Semantic-Relations-in-Vector-
Embeddings at commit 420c6ae7 (it was deleted from that repository later; the fetched git
directory keeps the history). Clone it and pass its git directory with ``--git-dir`` (or keep
it as ``$TRAILS_GIT_MIRRORS/cchang-vassar+Semantic-Relations-in-Vector-Embeddings/repo``).

Shape, as BEIR built it: a query is one debate point (``<stance>NNa``), its one relevant
document is the counter written against that point (``<stance>NNb``, score 1); the corpus is
every point and every counter, so each query is also a document of the corpus and an
evaluation must ignore a hit whose id is the query's own (BEIR and MTEB do:
``ignore_identical_ids``). Ids, text and titles follow BEIR's ArguAna files, so the test
queries and qrels are BEIR's exactly:

- id ``<split>-<theme>-<initials of the debate folder's words>-<stance><NN><a|b>``;
- text: the file's text with each line end turned into a space and every web address
  (``http...`` up to the next space) removed, stripped;
- title: the debate folder's words for the test split, empty for the others (as in BEIR).

BEIR's corpus holds 8,674 of the 13,532 arguments (its choice among the training arguments is
not published); this one holds all of them, so there are more distractors than in BEIR.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _beir_out as out

NAME = "arguana"
REPOSITORY = "cchang-vassar/Semantic-Relations-in-Vector-Embeddings"
COMMIT = "420c6ae764718840c05770926528dbecf1c3417a"
ARGUMENTS = "arguana-counterargs-corpus/02-extracted-arguments"
# The corpus's split folders, in BEIR's id spelling, and the qrels file each becomes.
SPLITS = {"test": "test", "training": "train", "validation": "dev"}
WEB_ADDRESS = re.compile(r"https?://\S+")  # BEIR's texts have the corpus's links cut out
ARGUMENT_FILE = re.compile(r"(?P<stance>pro|con)(?P<number>\d+)(?P<side>[ab])-(point|counter)\.txt")


def initials(debate_folder: str) -> str:
    """BEIR's short debate id: the first letter of each dash-separated word."""
    return "".join(word[0] for word in debate_folder.split("-") if word)


def argument_id(path: str) -> tuple[str, str, str] | None:
    """(split folder, debate folder, BEIR id) of an argument file's path, or None for the
    corpus's other files (full.txt, thesis.txt, metadata...)."""
    parts = path.split("/")
    if len(parts) != 7 or parts[2] not in SPLITS:
        return None
    _, _, split, theme, debate, stance_folder, name = parts
    match = ARGUMENT_FILE.fullmatch(name)
    if not match or match["stance"] != stance_folder:
        return None
    tail = f"{match['stance']}{match['number']}{match['side']}"
    return split, debate, f"{split}-{theme}-{initials(debate)}-{tail}"


def argument_text(raw: bytes) -> str:
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\n", " ")
    return WEB_ADDRESS.sub("", text).strip()


def build(source: out.GitSource) -> out.BeirSet:
    paths = [p for p in source.paths(ARGUMENTS) if argument_id(p)]
    contents = source.read_many(paths)
    data = out.BeirSet()
    seen: dict[str, str] = {}
    for split_folder in SPLITS:  # test first, as in BEIR's file
        for path in paths:
            split, debate, doc_id = argument_id(path) or ("", "", "")
            if split != split_folder:
                continue
            if doc_id in seen:
                raise out.SourceError(f"{path} and {seen[doc_id]} would both be {doc_id}")
            seen[doc_id] = path
            title = debate.replace("-", " ") if split == "test" else ""
            data.corpus.append({"_id": doc_id, "title": title,
                                "text": argument_text(contents[path]), "metadata": {}})
    texts = {str(d["_id"]): d["text"] for d in data.corpus}
    for split_folder, split in SPLITS.items():
        rows = []
        for doc in data.corpus:
            point = str(doc["_id"])
            counter = point[:-1] + "b"
            if point.startswith(f"{split_folder}-") and point.endswith("a") and counter in texts:
                rows.append((point, counter, 1))
                data.queries.append({"_id": point, "text": texts[point], "metadata": {}})
        data.qrels[split] = rows
    return data


def main(argv: list[str] | None = None) -> int:
    return out.build_main(argv, doc=__doc__, repository=REPOSITORY, commit=COMMIT,
                          builders={NAME: build})


if __name__ == "__main__":
    sys.exit(main())
