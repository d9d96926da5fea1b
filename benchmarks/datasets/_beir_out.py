"""Shared parts of the build_<name>.py scripts: read files out of a git mirror at a pinned
commit, write a BEIR-layout folder byte for byte the same on every run, and check it.

Standard library only. The sources are git clones of public repositories (bare or not: no work
tree is needed), given with ``--git-dir`` or found as ``$TRAILS_GIT_MIRRORS/<owner>+<repo>/repo``,
and read with ``git`` itself so that every input is named by repository, commit and path.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built sets go under the repository's benchmark cache (../shared/data holds only what the
# machine ships, read-only); benchmarks/eval_beir.py looks there after ../shared/data/beir.
DEFAULT_OUT = ROOT / "benchmarks" / ".cache" / "datasets"
# Where clones of the source repositories are found by name, when the user keeps them together.
MIRRORS = os.environ.get("TRAILS_GIT_MIRRORS")

Qrels = dict[str, dict[str, int]]  # query id -> {document id: relevance}


class SourceError(RuntimeError):
    """A source repository, commit or file is not where the build expects it."""


def mirror(owner_repo: str) -> Path:
    """The clone of ``owner/repo`` under ``$TRAILS_GIT_MIRRORS`` (``<owner>+<repo>/repo``), or
    a path naming the repository to clone when that variable is not set."""
    name = owner_repo.replace("/", "+")
    root = Path(MIRRORS) if MIRRORS else Path(f"<a clone of github.com/{owner_repo}>")
    return root / name / "repo" if MIRRORS else root


@dataclass
class GitSource:
    """Files of one commit of a git directory (bare or not), read without a checkout."""

    git_dir: Path
    commit: str

    def __post_init__(self) -> None:
        if not Path(self.git_dir).exists():
            raise SourceError(f"{self.git_dir} does not exist: clone the repository and pass "
                              "its git directory with --git-dir (or set TRAILS_GIT_MIRRORS)")
        kind = self._git("cat-file", "-t", self.commit, check=False).strip()
        if kind != "commit":
            raise SourceError(f"{self.git_dir} has no commit {self.commit}: fetch the "
                              "repository's history or pass a git directory that has it")

    def _git(self, *args: str, check: bool = True) -> str:
        run = subprocess.run(["git", "--git-dir", str(self.git_dir), *args],
                             capture_output=True, text=True, check=False)
        if check and run.returncode != 0:
            raise SourceError(f"git {' '.join(args)} in {self.git_dir}: {run.stderr.strip()}")
        return run.stdout

    def paths(self, under: str) -> list[str]:
        """Every file path under ``under`` in the commit, sorted (git's own byte order)."""
        out = self._git("ls-tree", "-r", "-z", "--name-only", self.commit, "--", under)
        return sorted(p for p in out.split("\0") if p)

    def commit_id(self) -> str:
        """The full id of the commit read (``HEAD`` resolved)."""
        return self._git("rev-parse", self.commit).strip()

    def read(self, path: str) -> bytes:
        return self.read_many([path])[path]

    def read_many(self, paths: Sequence[str]) -> dict[str, bytes]:
        """Contents of many files in one ``git cat-file --batch`` call."""
        request = "".join(f"{self.commit}:{p}\n" for p in paths).encode()
        run = subprocess.run(["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                             input=request, capture_output=True, check=False)
        if run.returncode != 0:
            raise SourceError(f"git cat-file in {self.git_dir}: {run.stderr.decode().strip()}")
        out, at, contents = run.stdout, 0, {}
        for path in paths:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) != 3 or header[1] != b"blob":
                raise SourceError(f"{path} is not a file at {self.commit} in {self.git_dir} "
                                  f"(git says {out[at:end].decode(errors='replace')})")
            size = int(header[2])
            contents[path] = out[end + 1:end + 1 + size]
            at = end + 1 + size + 1  # the content is followed by a newline
        return contents


@dataclass
class BeirSet:
    """A data set in memory, in the order it will be written."""

    corpus: list[dict[str, object]] = field(default_factory=list)  # _id, title, text, metadata
    queries: list[dict[str, object]] = field(default_factory=list)  # _id, text, metadata
    qrels: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)  # split -> rows


def jsonl(records: Iterable[Mapping[str, object]]) -> bytes:
    """One ``json.dumps`` line per record (BEIR's own serialisation: ASCII, ", " and ": ")."""
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def qrels_tsv(rows: Iterable[tuple[str, str, int]]) -> bytes:
    """BEIR's qrels file: a header, tab-separated rows, CRLF line ends (as in BEIR's zips)."""
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in rows]
    return "".join(line + "\r\n" for line in lines).encode()


# Characters that BEIR's qrels readers (csv.reader with tab delimiter: BEIR's own loader and
# trails.evaluation.load_beir) would split or unquote: an id holding one would be misread.
UNSAFE_ID_CHARACTERS = frozenset('\t\r\n"')


def check(data: BeirSet) -> None:
    """Ids unique and readable back from a qrels file (no tab, line end or double quote, no
    surrounding spaces), every qrels id present in the corpus and the queries, no query in
    two splits (so tuning on one never sees another's queries).

    Raises:
        ValueError: naming the first problem found.
    """
    doc_ids = [str(d["_id"]) for d in data.corpus]
    query_ids = [str(q["_id"]) for q in data.queries]
    for identifier in (*doc_ids, *query_ids):
        if identifier != identifier.strip() or UNSAFE_ID_CHARACTERS & set(identifier):
            raise ValueError(f"id {identifier!r} cannot be written to a qrels file and read "
                             f"back: no tab, line end, double quote or surrounding space")
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError("duplicate document ids in the corpus")
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("duplicate query ids")
    docs, queries, owner = set(doc_ids), set(query_ids), {}
    for split, rows in data.qrels.items():
        for q, d, _ in rows:
            if d not in docs:
                raise ValueError(f"qrels/{split}.tsv names document {d!r}, not in the corpus")
            if q not in queries:
                raise ValueError(f"qrels/{split}.tsv names query {q!r}, not in queries.jsonl")
            if owner.setdefault(q, split) != split:
                raise ValueError(f"query {q!r} is in both {owner[q]} and {split}")


def write(data: BeirSet, out_dir: Path) -> dict[str, tuple[int, str]]:
    """Write the folder (replacing its files; other files in it are left alone) and return
    relative path -> (bytes, sha256)."""
    check(data)
    files = {"corpus.jsonl": jsonl(data.corpus), "queries.jsonl": jsonl(data.queries)}
    for split, rows in sorted(data.qrels.items()):
        files[f"qrels/{split}.tsv"] = qrels_tsv(rows)
    written = {}
    for rel, content in files.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(content)
        os.replace(partial, path)
        written[rel] = (len(content), hashlib.sha256(content).hexdigest())
    return written


def report(name: str, data: BeirSet, written: Mapping[str, tuple[int, str]]) -> None:
    """Print what was written: files, counts per split and relevance grade."""
    print(f"{name}: {len(data.corpus):,} documents, {len(data.queries):,} queries")
    for split, rows in sorted(data.qrels.items()):
        grades: dict[int, int] = {}
        for _, _, s in rows:
            grades[s] = grades.get(s, 0) + 1
        by_grade = ", ".join(f"score {g}: {n:,}" for g, n in sorted(grades.items(), reverse=True))
        print(f"  {split}: {len(rows):,} qrels rows over {len({q for q, _, _ in rows}):,} "
              f"queries ({by_grade})")
    for rel, (size, digest) in written.items():
        print(f"  {rel}  {size:,} bytes  sha256 {digest}")


def read_beir_folder(source: GitSource, folder: str, split: str) -> BeirSet:
    """A BEIR folder committed in a repository: its corpus and queries (records as parsed,
    every query given ``metadata`` as BEIR's files have it) and one split's qrels rows."""
    files = source.read_many([f"{folder}/corpus.jsonl", f"{folder}/queries.jsonl",
                              f"{folder}/qrels/{split}.tsv"])
    data = BeirSet()
    data.corpus = [json.loads(line) for line in files[f"{folder}/corpus.jsonl"].splitlines()
                   if line.strip()]
    for line in files[f"{folder}/queries.jsonl"].splitlines():
        if line.strip():
            query = json.loads(line)
            data.queries.append({"_id": query["_id"], "text": query["text"],
                                 "metadata": query.get("metadata", {})})
    rows = []
    for line in files[f"{folder}/qrels/{split}.tsv"].decode().splitlines():
        cells = line.split("\t")
        if len(cells) == 3 and cells[0] != "query-id":
            rows.append((cells[0], cells[1], int(cells[2])))
    data.qrels[split] = rows
    return data


ANSERINI = "castorini/anserini-tools"  # BEIR's test topics and qrels, as Anserini ships them


def anserini_check(git_dir: Path, data: BeirSet, split: str, qrels_file: str,
                   topics_file: str, *, positive_only: bool = False) -> str:
    """Compare one split with Anserini's copy (newest commit of the fetched repository):
    the qrels rows of the kept queries must be the same set, and their texts the same.

    Returns:
        A line saying what was compared, or why nothing was.

    Raises:
        ValueError: naming the first difference.
    """
    if not Path(git_dir).exists():
        return f"not compared with {ANSERINI}: {git_dir} is absent (clone it to compare)"
    source = GitSource(git_dir, "HEAD")
    files = source.read_many([qrels_file, topics_file])
    topics_raw = files[topics_file]
    if topics_file.endswith(".gz"):
        topics_raw = gzip.decompress(topics_raw)
    topics = dict(line.split("\t", 1) for line in topics_raw.decode().splitlines() if line)
    kept = {q for q, _, _ in data.qrels[split]}
    theirs = set()
    for line in files[qrels_file].decode().splitlines():
        q, _, d, s = line.split()
        if q in kept and (int(s) > 0 or not positive_only):
            theirs.add((q, d, int(s)))
    ours = set(data.qrels[split])
    if ours != theirs:
        extra, missing = sorted(ours - theirs)[:3], sorted(theirs - ours)[:3]
        raise ValueError(f"{split} qrels differ from {ANSERINI} {qrels_file}: "
                         f"only here {extra}, only there {missing}")
    texts = {str(q["_id"]): q["text"] for q in data.queries}
    for q in sorted(kept):
        if texts.get(q) != topics.get(q):
            raise ValueError(f"query {q} text differs from {ANSERINI} {topics_file}")
    commit = source.commit_id()
    return (f"{split}: {len(ours):,} qrels rows and {len(kept):,} query texts equal to "
            f"{ANSERINI} {qrels_file} and {topics_file} (commit {commit[:7]})")


def judged_test_set(source: GitSource, folder: str) -> BeirSet:
    """A sample's BEIR folder, its test split only, keeping the queries it judges."""
    data = read_beir_folder(source, folder, "test")
    judged = {q for q, _, _ in data.qrels["test"]}
    data.queries = [q for q in data.queries if q["_id"] in judged]
    return data


def sample_main(argv: list[str] | None, *, doc: str, name: str, repository: str, commit: str,
                folder: str, anserini_qrels: str, anserini_topics: str,
                positive_only: bool = False) -> int:
    """The command line of a build script for a committed sample (a judged test split checked
    against Anserini's copy when that is fetched); the exit code."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder that receives <name>/ (default: benchmarks/.cache/datasets)")
    parser.add_argument("--git-dir", type=Path, default=mirror(repository))
    parser.add_argument("--anserini-git-dir", type=Path, default=mirror(ANSERINI))
    args = parser.parse_args(argv)
    try:
        data = judged_test_set(GitSource(args.git_dir, commit), folder)
        checked = anserini_check(args.anserini_git_dir, data, "test", anserini_qrels,
                                 anserini_topics, positive_only=positive_only)
    except (SourceError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report(name, data, write(data, args.out / name))
    print(f"  {checked}")
    return 0


def build_main(argv: list[str] | None, *, doc: str, repository: str, commit: str,
               builders: Mapping[str, Callable[[GitSource], BeirSet]]) -> int:
    """The command line of a build script that reads one repository at a pinned commit and
    writes one folder per entry of ``builders`` (name: how to build it); the exit code."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder that receives {', '.join(f'{n}/' for n in builders)} "
                             "(default: benchmarks/.cache/datasets)")
    parser.add_argument("--git-dir", type=Path, default=mirror(repository))
    args = parser.parse_args(argv)
    try:
        source = GitSource(args.git_dir, commit)
        built = {name: build(source) for name, build in builders.items()}
    except (SourceError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name, data in built.items():
        report(name, data, write(data, args.out / name))
    return 0
