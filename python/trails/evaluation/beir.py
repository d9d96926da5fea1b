"""BEIR-layout data sets: find one, load its corpus, queries and qrels, turn records into Documents.

A BEIR data set is a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``,
``score``; TREC's ``query-id iteration doc-id relevance`` is read too).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from trails.errors import InvalidArgumentError
from trails.ingest import Document
from trails.kg.terms import check_text

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
            InvalidArgumentError: the data set has no such split (the message lists those it
                has), or the split judges no document of the corpus relevant, so
                every score would be 0 whatever the ranking (an empty file, the qrels of
                another corpus).
        """
        if name not in self.qrels:
            raise InvalidArgumentError(
                f"{self.name} has no {name!r} split; it has {', '.join(self.splits) or 'none'} "
                "(files qrels/<split>.tsv)")
        qrels = self.qrels[name]
        relevant = {d for judged in qrels.values() for d, grade in judged.items() if grade > 0}
        where = f"{self.path / 'qrels' / name}.tsv"
        if not relevant:
            raise InvalidArgumentError(
                f"{where} judges no document relevant (no line with a relevance above 0), so "
                "every score would be 0: give a qrels file with judgements")
        if relevant.isdisjoint(self.corpus):
            raise InvalidArgumentError(
                f"none of the {len(relevant)} documents {where} judges relevant is in "
                f"{self.path / 'corpus.jsonl'} (e.g. {min(relevant)!r}), so every score would "
                "be 0: are these the qrels of another corpus?")
        return qrels

    def unfindable(self, split: str) -> list[str]:
        """The documents ``split`` judges relevant that the corpus does not hold, sorted: no
        system can find them, so recall cannot reach 1 (BEIR scores them so too)."""
        return sorted({d for judged in self.split(split).values()
                       for d, grade in judged.items() if grade > 0} - self.corpus.keys())

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
        InvalidArgumentError: a file is missing, or holds nothing, or one of its lines is
            not what it takes (the message names the file and the line).
    """
    root = Path(path)
    for needed in ("corpus.jsonl", "queries.jsonl", "qrels"):
        if not (root / needed).exists():
            raise InvalidArgumentError(
                f"{root} is not a BEIR data set: it has no {needed} (expected corpus.jsonl, "
                "queries.jsonl and qrels/<split>.tsv)")
    corpus = _records(root / "corpus.jsonl", _document_text)
    queries = _records(root / "queries.jsonl", _query_text)
    qrels = {p.stem: _read_qrels(p) for p in sorted((root / "qrels").glob("*.tsv"))}
    return BeirDataset(root.resolve().name, root, corpus, queries, qrels)


_T = TypeVar("_T")


def _document_text(record: dict[str, str]) -> tuple[str, str]:
    """A document's title and text; one with neither but text under another key (``body``,
    ``contents``) is refused: it would be ingested with no chunk and never found."""
    if not (record["title"] or record["text"]) and record.get("elsewhere"):
        raise ValueError(f'the document {record["_id"]!r} has no title or text but a '
                         f'{record["elsewhere"]!r}: a corpus record is {{"_id": "d1", "title": '
                         '"...", "text": "..."}')
    return record["title"], record["text"]


def _query_text(record: dict[str, str]) -> str:
    """A query's text; a query without one (another key, such as ``"query"``) is refused: it
    would be searched as the empty string and scored, whatever that finds."""
    if not record["text"].strip():
        beside = f' but a {record["elsewhere"]!r}' if record["elsewhere"] else ""
        raise ValueError(f'the query {record["_id"]!r} has no text{beside}: a query record is '
                         '{"_id": "q1", "text": "..."}')
    # A lone surrogate (a JSON \ud800 escape) would stop the evaluation at that query,
    # after the corpus is ingested, naming no line.
    return check_text(record["text"], f"the query {record['_id']!r}")


def _records(path: Path, value: Callable[[dict[str, str]], _T]) -> dict[str, _T]:
    """``_id`` -> ``value`` of each record of a JSON Lines file. An id met again with other
    content is refused: which one counts is no choice to make silently (the last used to)."""
    found: dict[str, _T] = {}
    for number, record in _jsonl(path):
        try:
            kept = value(record)
        except ValueError as exc:
            raise InvalidArgumentError(f"{path}:{number}: {exc}") from None
        key = record["_id"]
        if found.setdefault(key, kept) != kept:
            raise InvalidArgumentError(
                f"{path}:{number}: the _id {key!r} again, with other content; give each "
                "record its own _id")
    if not found:
        raise InvalidArgumentError(f"{path} holds no records: a line per record, a JSON "
                                   'object such as {"_id": "d1", "text": "..."}')
    return found


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """Each record of a JSON Lines file with its line number: ``_id`` (a string or an
    integer, as text), ``title`` and ``text`` (text; missing or null: empty), and
    ``elsewhere``, the first other key that holds text (empty when none does)."""
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"{path}:{number}: not JSON: {exc}") from exc
        key = record.get("_id") if isinstance(record, dict) else None
        if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
            raise InvalidArgumentError(f"{path}:{number}: expected a JSON object with an _id "
                                       f"(text or a whole number), got {line[:80]!r}")
        fields = {"_id": str(key)}
        for name in ("title", "text"):
            given = record.get(name)
            if given is not None and not isinstance(given, str):
                # str() of a list or an object would be searched and scored as its Python form
                raise InvalidArgumentError(f"{path}:{number}: {name} must be text, not "
                                           f"{type(given).__name__}")
            fields[name] = given or ""
        # The first other key holding text: where a record's text is when it is misnamed.
        fields["elsewhere"] = next((name for name, given in record.items() if name not in
                                    ("_id", "title", "text") and isinstance(given, str)
                                    and given.strip()), "")
        yield number, fields


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of a UTF-8 file that hold something, numbered from 1; a byte-order mark
    is no part of the first. A line that is no UTF-8 is refused naming it."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidArgumentError(
                    f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start}); save the "
                    "file as UTF-8") from None
            if line.strip():
                yield number, line


def _read_qrels(path: Path) -> Qrels:
    """The judgements of one qrels file: BEIR's ``query-id corpus-id score`` or TREC's
    ``query-id iteration doc-id relevance``, tab- or space-separated, with or without a header.

    Each line is read by its number of fields: a TREC line read as BEIR's would judge its
    iteration column (``0``) as the document, and a space-separated line read as one field
    was once taken for a header, both leaving every score computed over the wrong set."""
    qrels: Qrels = {}
    judged_on: dict[tuple[str, str], int] = {}  # each pair's line, to name a contradiction
    first = True
    for number, line in _lines(path):
        # BEIR writes its qrels with csv (quoted fields); TREC's are space-separated.
        cells = ([c.strip() for c in next(csv.reader([line], delimiter="\t"))]
                 if "\t" in line else line.split())
        if len(cells) not in (3, 4):
            raise InvalidArgumentError(
                f"{path}:{number}: {len(cells)} field(s); a qrels line is query-id, "
                "corpus-id, score (BEIR) or query-id, iteration, doc-id, relevance (TREC)")
        query, document, grade = cells[0], cells[-2], cells[-1]
        # A header names its columns ("score", "rel"); a first line whose relevance holds a
        # digit ("1.0") is a judgement, refused below, not a header skipped unread.
        header, first = first and not any(c.isdigit() for c in grade), False
        if header:
            continue
        if not _GRADE.fullmatch(grade):
            raise InvalidArgumentError(f"{path}:{number}: the relevance {grade!r} is no whole "
                                       "number (0: not relevant; 1, 2, ...: more relevant)")
        judged = qrels.setdefault(query, {})
        if document in judged and judged[document] != int(grade):
            # Which line wins is no choice to make silently: the scores depend on it.
            raise InvalidArgumentError(
                f"{path}:{number}: {query} {document} is judged {int(grade)} here and "
                f"{judged[document]} on line {judged_on[query, document]}; keep one")
        judged[document] = int(grade)
        judged_on.setdefault((query, document), number)
    return qrels


# A relevance grade: a whole number (negative: judged not relevant, as trec_eval reads it).
_GRADE = re.compile(r"[+-]?[0-9]+")


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
