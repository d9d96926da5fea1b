"""BEIR-layout data sets: find one, load its corpus, queries and qrels, turn records into Documents.

A BEIR data set is a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``,
``score``).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trails.errors import InvalidArgumentError
from trails.ingest import Document

__all__ = ["BeirDataset", "Qrels", "documents", "find_dataset", "load_beir"]

# query id -> {document id: graded relevance}
Qrels = dict[str, dict[str, int]]


@dataclass
class BeirDataset:
    """A BEIR-layout data set, loaded: corpus and queries in file order, qrels per split."""

    name: str
    path: Path
    corpus: dict[str, tuple[str, str]]  # _id -> (title, text)
    queries: dict[str, str]  # _id -> text
    qrels: dict[str, Qrels] = field(default_factory=dict)  # split -> qrels

    @property
    def queries_are_documents(self) -> bool:
        """Whether the queries are documents of the corpus (ArguAna: a query is an argument,
        its relevant document the counter-argument): most queries' ids are corpus ids whose
        text is the query's. An evaluation then ignores the hit of the query's own document
        (BEIR's and MTEB's ``ignore_identical_ids``), which would otherwise come first."""
        same = sum(1 for q, text in self.queries.items()
                   if q in self.corpus and self.corpus[q][1].strip() == text.strip())
        return bool(self.queries) and same * 2 > len(self.queries)

    @property
    def splits(self) -> list[str]:
        """The names of the splits that have a ``qrels/<split>.tsv`` file, sorted."""
        return sorted(self.qrels)

    def split(self, name: str) -> Qrels:
        """The qrels of one split: query id -> {document id: relevance}.

        Raises:
            ValueError: the data set has no such split (the message lists those it has).
        """
        if name not in self.qrels:
            raise ValueError(f"{self.name} has no {name!r} split; it has "
                             f"{', '.join(self.splits) or 'none'} (files qrels/<split>.tsv)")
        return self.qrels[name]

    def first_queries(self, split: str, limit: int | None) -> BeirDataset:
        """This data set with ``split`` cut to its first ``limit`` queries (all when None)."""
        if limit is None:
            return self
        kept = dict(list(self.split(split).items())[:limit])
        return BeirDataset(self.name, self.path, self.corpus, self.queries,
                           {**self.qrels, split: kept})


def load_beir(path: str | Path) -> BeirDataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and every ``qrels/*.tsv`` of a BEIR folder.

    Raises:
        ValueError: a file is missing or a line is not a JSON object with ``_id``.
    """
    root = Path(path)
    for needed in ("corpus.jsonl", "queries.jsonl", "qrels"):
        if not (root / needed).exists():
            raise ValueError(f"{root} is not a BEIR data set: it has no {needed} (expected "
                             "corpus.jsonl, queries.jsonl and qrels/<split>.tsv)")
    corpus = {str(r["_id"]): (str(r.get("title") or ""), str(r.get("text") or ""))
              for r in _jsonl(root / "corpus.jsonl")}
    queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(root / "queries.jsonl")}
    qrels = {p.stem: _read_qrels(p) for p in sorted((root / "qrels").glob("*.tsv"))}
    return BeirDataset(root.resolve().name, root, corpus, queries, qrels)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(record, dict) or "_id" not in record:
                raise ValueError(f"{path}:{number}: expected a JSON object with an _id")
            yield record


def _read_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        for number, raw in enumerate(rows, start=1):
            row = [cell.strip() for cell in raw]
            if not row or not any(row):
                continue
            if number == 1 and not row[-1].lstrip("-").isdigit():
                continue  # the header: query-id corpus-id score
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected query-id, corpus-id, score")
            qrels.setdefault(row[0], {})[row[1]] = int(row[-1])
    return qrels


def documents(dataset: BeirDataset,
              transform: Callable[[str], str] | None = None) -> Iterator[Document]:
    """One Document per corpus record: id ``_id``, text ``title + "\\n\\n" + text``."""
    for doc_id, (title, text) in dataset.corpus.items():
        body = f"{title}\n\n{text}" if title else text
        if transform is not None:
            body = transform(body)
        yield Document(id=doc_id, source=f"{dataset.name}/corpus.jsonl#{doc_id}", text=body,
                       title=title or None)


def find_dataset(name_or_path: str | Path) -> Path:
    """A BEIR folder from a path, or from a name (``scifact``) looked up in the folders of
    ``$TRAILS_BEIR_DIR`` (``os.pathsep``-separated). trails looks nowhere else: data sets are
    the user's, wherever they keep them.

    Raises:
        InvalidArgumentError: no such folder, and no data set of that name in those folders.
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    roots = [Path(p) for p in os.environ.get("TRAILS_BEIR_DIR", "").split(os.pathsep) if p]
    for root in roots:
        if (root / str(name_or_path) / "corpus.jsonl").is_file():
            return root / str(name_or_path)
    where = (f"in $TRAILS_BEIR_DIR ({os.pathsep.join(map(str, roots))})" if roots
             else "($TRAILS_BEIR_DIR is not set)")
    raise InvalidArgumentError(
        f"no BEIR data set {str(name_or_path)!r} {where}: give the folder holding its "
        "corpus.jsonl, queries.jsonl and qrels/, or set TRAILS_BEIR_DIR to the folder that "
        "holds it by name")
