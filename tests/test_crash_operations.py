"""SIGKILL at random moments of the writes other than an ingest of new text: a delete and a
prune through the command line, relinking after the ontology changed, ``load --replace`` of
an ontology and an audit fold. After each kill ``verify(repair=True)`` leaves a consistent
context that lost no committed document, the next run of the same command finishes the work
(with or without a repair first), and its end state is the one an uninterrupted run reaches.
A reader beside the killed writer sees whole documents and no error.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

import killing
from trails import retrieve
from trails.audit import SearchRecord
from trails.audit.records import started_now
from trails.context import Context
from trails.ingest import ingest_all
from trails.ingest.linking import LabelLinker
from trails.kg.base import select
from trails.vector import MockEmbedder

pytestmark = pytest.mark.slow  # kills a real writer at many random moments

KILLS = int(os.environ.get("TRAILS_CRASH_KILLS", "6"))
DOCS = 40
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
EX = "https://ex.org/"
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
DELETED = [f"trails://local/doc/doc{i:03d}.md" for i in range(0, DOCS, 3)]
AUDIT_RECORDS = 1000

WORKER = """
import sys
from trails.cli.commands import main
from trails.context import Context
from trails.ingest.linking import LabelLinker
state, op, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
if op in ("link", "fold"):
    ctx = Context.open(state)
    print("ready", flush=True)
    ctx.link(LabelLinker()) if op == "link" else ctx.audit.fold()
    ctx.close()
else:
    print("ready", flush=True)
    sys.argv = ["trails", "--db", state, *extra]
    main()
"""


def _ontology(edition: int) -> str:
    words = WORDS[:4] if edition == 1 else WORDS[2:]
    return "".join(f'<{EX}{w}> {LABEL} "{w.title()}{"" if edition == 1 else "s"}" .\n'
                   for w in words)


def _write_corpus(folder: Path, edition: int = 1) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(DOCS):
        expires = "2020-01-01" if i % 2 else "2999-01-01"
        body = " ".join(f"Note {i} {'edition 2 ' if edition == 2 and i % 4 == 0 else ''}"
                        f"part {j} names {WORDS[(i + j) % 6].title()} and "
                        f"{WORDS[(i + 2 * j) % 6].title()}s here." for j in range(40 + 5 * (i % 3)))
        (folder / f"doc{i:03d}.md").write_text(f"---\nexpires: {expires}\n---\n{body}\n")


def _arguments(op: str, ontology: Path) -> list[object]:
    return {"ingest": ["ingest", ontology.parent / "corpus2"],
            "delete": ["delete", *DELETED], "prune": ["prune", "--expired"],
            "delete-all": ["delete", "--all-triples", *DELETED],
            "load": ["load", "--replace", ontology], "link": [], "fold": []}[op]


def _run_again(ctx: Context, op: str, ontology: Path) -> None:
    """The same command once more, in this process, to its end."""
    if op in ("delete", "delete-all"):
        for iri in DELETED:
            ctx.delete_document(iri, include_user_triples=op == "delete-all")
    elif op == "prune":
        ctx.prune_expired()
    elif op == "load":
        ctx.kg.load(ontology, replace=True)
    elif op == "link":
        ctx.link(LabelLinker())
    else:
        ctx.audit.fold()


def _state(ctx: Context) -> dict[str, object]:
    """What an end state is compared by: live versions, the graph's triples outside the audit
    trail (blank nodes aside), and how many of the recorded searches the audit graph holds
    (deletion records are folded when the context closes)."""
    versions = {d: r.version for d, r in ctx.vectors.current_versions().items()}
    rows = ctx.kg.store.query(
        "SELECT ?g ?s ?p ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } "
        "FILTER(?g != <urn:trails:audit>) } FILTER(!isBlank(?s) && !isBlank(?o)) }")
    triples = {tuple(str(term) for term in row) for row in rows}  # ?g "None": the default
    searches = ctx.kg.store.query(
        "SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE { GRAPH <urn:trails:audit> "
        "{ ?r <https://trails.dev/ns/audit#querySha256> ?h } }")
    return {"versions": versions, "triples": triples, "searches": int(next(iter(searches))["n"].value)}


def _whole(ctx: Context, before: dict[str, str]) -> set[str]:
    """Every live document is whole in both stores and at its version from before; returns
    the live documents."""
    live = ctx.vectors.current_versions()
    for doc, record in live.items():
        assert before.get(doc) == record.version, f"{doc} changed version"
        rows = select(ctx.kg, "SELECT ?v (COUNT(?c) AS ?n) WHERE { ?c schema:isPartOf ?d ; "
                              "trails:version ?v } GROUP BY ?v", {"d": _iri(doc)})
        assert {str(r["v"]): int(r["n"]) for r in rows} == {record.version: record.chunks}, doc
    return set(live)


def _iri(value: str):
    from trails.kg.terms import IRI

    return IRI(value)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ops")
    corpus, ontology, base = root / "corpus", root / "onto.nt", root / "base"
    _write_corpus(corpus)
    _write_corpus(root / "corpus2", edition=2)  # a quarter of the documents changed
    ontology.write_text(_ontology(1))
    with Context.open(base, embedder=MockEmbedder(dim=16, seed=3)) as ctx:
        ctx.kg.load(ontology, replace=True)
        assert ingest_all(corpus, ctx=ctx, batch_size=8, linker=LabelLinker()).failed == 0
        ctx.kg.update("INSERT DATA { " + " ".join(  # a user's own triples about each document
            f'<trails://local/doc/doc{i:03d}.md> <{EX}reviewed> "yes" .' for i in range(DOCS))
            + " }")
    # Searches recorded by a reader: pending until a writer folds them (each one folds at
    # close, so every command's run folds them; the fold op does only that).
    with Context.open(base, read_only=True) as ctx:
        now = started_now()
        for n in range(AUDIT_RECORDS):
            assert ctx.audit.record(SearchRecord(
                run_id=f"{n:032d}", caller="t", started=now, ended=now,
                query_sha256="0" * 64, query=str(n), scopes=["default"]))
    with Context.open(base, read_only=True) as ctx:
        assert len(ctx.audit.pending()) == AUDIT_RECORDS
    ontology.write_text(_ontology(2))  # what load --replace and link take from now on
    return base, ontology


OPS = ["delete", "delete-all", "prune", "link", "load", "fold"]


@pytest.mark.parametrize("op", OPS)
def test_a_write_killed_at_random_moments_is_repaired_and_finished(base, tmp_path, op):
    base_dir, ontology = base
    with Context.open(base_dir, read_only=True) as ctx:
        before = {d: r.version for d, r in ctx.vectors.current_versions().items()}
        expired = {d for d in before if int(d[-6:-3]) % 2}
    gone = {"delete": set(DELETED), "delete-all": set(DELETED), "prune": expired}.get(op, set())
    expected = None
    kills = dirty = 0
    for state, untouched in killing.killed_copies(WORKER, base_dir, [op, *_arguments(op, ontology)],
                                                  tmp_path, KILLS, 20261201):
        if expected is None:  # the uninterrupted run's end state
            with Context.open(tmp_path / "timing") as ctx:
                assert ctx.verify().ok
                expected = _state(ctx)
            assert expected["searches"] == AUDIT_RECORDS  # a writable context folds at close
            reviewed = {s for _, s, p, _ in expected["triples"] if p == f"<{EX}reviewed>"}
            kept = {f"<{d}>" for d in before} - ({f"<{d}>" for d in gone}
                                                 if op == "delete-all" else set())
            assert reviewed == kept
        kills += 1
        with Context.open(state) as ctx:
            if not ctx.verify().ok:
                dirty += 1
                repaired = ctx.verify(repair=True)
                assert set(repaired.removed) <= gone, repaired.removed  # a cut-off delete
            report = ctx.verify()
            assert report.ok, report.summary()
            live = _whole(ctx, before)
            assert set(before) - gone <= live, f"lost {set(before) - gone - live}"
            _run_again(ctx, op, ontology)
            assert ctx.verify().ok
        with Context.open(state, read_only=True) as ctx:
            assert _state(ctx) == expected
        with Context.open(untouched) as ctx:  # the next run alone finishes the work
            _run_again(ctx, op, ontology)
            assert ctx.verify().ok, ctx.verify().summary()
            _whole(ctx, before)
        with Context.open(untouched, read_only=True) as ctx:
            assert _state(ctx) == expected
    print(f"{op}: {kills} kills, {dirty} left repairs to do")


READER = r"""
import json, sys
from collections import defaultdict
from pathlib import Path
from trails import retrieve
from trails.context import Context
state, done, wholes = sys.argv[1], Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
totals = {"reads": 0, "torn": [], "errors": []}
ctx = Context.open(state, read_only=True)
print("ready", flush=True)
while not done.exists() or totals["reads"] < 2:
    try:
        if totals["reads"] % 3 == 2:  # a new view now and then, as a reader per query has
            ctx.close()
            ctx = Context.open(state, read_only=True)
        for hits in (retrieve("note names", ctx, mode="vector", k=100_000),
                     retrieve("note names", ctx, k=100_000, sparql_filter=(
                         "SELECT ?c WHERE { ?c a trails:Chunk }"))):
            shown = defaultdict(set)
            for hit in hits:
                shown[hit.metadata["doc_iri"]].add(hit.iri)
            totals["torn"] += [d for d, iris in shown.items() if sorted(iris) not in wholes[d]]
        totals["reads"] += 1
    except Exception as exc:
        totals["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
ctx.close()
print(json.dumps(totals))
"""


def _chunks(directory: Path) -> dict[str, list[str]]:
    """doc IRI -> its chunk IRIs, sorted, as retrieval shows them (expired ones are not)."""
    with Context.open(directory, read_only=True) as ctx:
        shown: dict[str, list[str]] = defaultdict(list)
        for hit in retrieve("note names", ctx, mode="vector", k=100_000):
            shown[hit.metadata["doc_iri"]].append(hit.iri)
    return {doc: sorted(chunks) for doc, chunks in shown.items()}


@pytest.mark.parametrize("op", ["ingest", "delete", "prune", "link", "load"])
def test_a_reader_beside_a_writer_killed_at_random_sees_whole_documents(base, tmp_path, op):
    """The reader runs from before the writer starts until after its kill (and reads on the
    state it left): every answer shows each document whole at one version (the one before
    or, re-ingesting, the one after the write), and no error."""
    base_dir, ontology = base
    arguments = [op, *_arguments(op, ontology)]
    duration = killing.time_worker(WORKER, [_copy(base_dir, tmp_path / "timing"), *arguments])
    wholes: dict[str, list[list[str]]] = defaultdict(list)
    for directory in (base_dir, tmp_path / "timing"):
        for doc, chunks in _chunks(directory).items():
            wholes[doc].append(chunks)
    assert len(wholes) == DOCS // 2 and min(len(c[0]) for c in wholes.values()) > 1
    if op == "ingest":
        assert sum(chunks[0] != chunks[-1] for chunks in wholes.values()) >= DOCS // 8
    (tmp_path / "wholes.json").write_text(json.dumps(wholes))
    rng = random.Random(op)
    wanted, interrupted = max(2, KILLS // 2), 0
    for n in range(3 * wanted):  # until ``wanted`` kills landed mid-write (bounded)
        if interrupted == wanted:
            break
        state, done = _copy(base_dir, tmp_path / f"kill{n}"), tmp_path / f"done{n}"
        reader = killing.start(READER, [state, done, tmp_path / "wholes.json"])
        assert reader.stdout.readline().strip() == "ready", reader.communicate(timeout=30)[1]
        try:
            finished = killing.run_worker(WORKER, [state, *arguments], rng.uniform(0.0, duration))
        finally:
            done.touch()
        interrupted += not finished
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err[-3000:]
        totals = json.loads(out)
        assert totals["errors"] == [] and totals["torn"] == [], totals
        assert totals["reads"] >= 2
    assert interrupted == wanted, "kills should land while the writer runs"


def _copy(base_dir: Path, target: Path) -> Path:
    shutil.copytree(base_dir, target)
    return target
