"""A million chunks on one machine: ingest, disk, open, filters, exact hybrid and the default.

Builds an on-disk context from the generated corpus (benchmarks/_scale_corpus.py: ~7.7 chunks
of ~900 characters per document, half the documents in scope ``legal``) with
``MockEmbedder(dim=384)``, then measures, in one run on one machine:

1. ingest: chunks/s through ``ingest_all``, peak RSS, disk by part;
2. open: ``Context.open`` read-only and writable, in fresh processes: seconds and RSS;
3. five filter shapes compliance users write (a date since, equality on a document property, a
   scope plus a date range, a taxonomy join with ``rdfs:subClassOf*``, ``FILTER NOT EXISTS`` on a
   classification) at 0.1%, 1%, 10% and 50% of the documents: the natural form as the engine
   plans it against the best hand-ordered form, then ``retrieve`` end to end (exact hybrid,
   ``fusion=None``, and the fused default), each on a filter's first run and repeated, on a
   read-only and on a writable context, against the faster of the two contexts' unfiltered
   vector query and numpy's brute force over all vectors (the floor).

    .venv/bin/python benchmarks/scale.py                        # 131,000 documents (~1M chunks)
    .venv/bin/python benchmarks/scale.py --quick --no-write     # ~6,500 documents (~50,000 chunks)
    .venv/bin/python benchmarks/scale.py --keep DIR           # build once, measure again later
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import _scale_corpus as corpus
from _docs import write_region

from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.kg.terms import IRI
from trails.retrieval.candidates import filter_candidates
from trails.retrieval.retrieve import retrieve
from trails.vector import MockEmbedder

SHARES = ["0.1%", "1%", "10%", "50%"]
CONTEXTS = ("read-only", "writable")
FRACTIONS = [0.001, 0.01, 0.1, 0.5]
LINK = "?iri schema:isPartOf ?doc ."
# name -> (natural group, best hand-ordered group, bindings per share, scope)
DATE_SINCE = "?doc schema:dateCreated ?d . FILTER(?d >= ?since)"
DATE_RANGE = "?doc schema:dateCreated ?d . FILTER(?d >= ?from && ?d < ?to)"
TAXONOMY_NATURAL = "?doc meta:topic ?t . ?t rdfs:subClassOf* ?broad ."
TAXONOMY_BEST = "?t rdfs:subClassOf* ?broad . ?doc meta:topic ?t ."
NOT_CLASSIFIED = "FILTER NOT EXISTS { ?doc meta:classification ?c }"


def shapes(dates: list[dt.date] | None = None
           ) -> dict[str, tuple[str, str, list[dict], str | None]]:
    """Each shape's natural and best forms, bindings per share and scope. With the corpus's
    ``dates`` (sorted), a date share is exact: at least one document even in a small corpus,
    where the designed date of 0.1% may fall after every document."""
    def date_for(fraction: float) -> dt.date:
        if not dates:
            return corpus.date_for_fraction(fraction)
        return dates[len(dates) - max(1, round(fraction * len(dates)))]

    since = [{"since": date_for(f)} for f in FRACTIONS]
    # scope "legal" holds half the documents: a window of twice the share
    ranges = [{"from": date_for(min(2 * f, 1.0)),
               "to": dt.date(2030, 1, 1)} for f in FRACTIONS]
    where = [{"j": name} for name, _ in reversed(corpus.JURISDICTION_SHARES)]
    topics = [{"broad": IRI(f"{corpus.TOPIC_NS}T{n}")} for n, _ in reversed(corpus.TOPIC_SHARES)]
    classified = [{"c": name} for name, _ in corpus.CLASSIFICATIONS]
    return {
        "date since (the seed's)": (f"{LINK} {DATE_SINCE}", f"{DATE_SINCE} {LINK}", since, None),
        "equality": (f"{LINK} ?doc meta:jurisdiction ?j .", f"?doc meta:jurisdiction ?j . {LINK}",
                     where, None),
        "scope + date range": (f"{LINK} {DATE_RANGE}", f"{DATE_RANGE} {LINK}", ranges, "legal"),
        "taxonomy subClassOf*": (f"{LINK} {TAXONOMY_NATURAL}", f"{TAXONOMY_BEST} {LINK}", topics,
                                 None),
        "FILTER NOT EXISTS": (f"{LINK} {NOT_CLASSIFIED}",
                              f"?doc a trails:Document . {NOT_CLASSIFIED} {LINK}", classified,
                              None),
    }


def select(group: str) -> str:
    return f"SELECT ?iri WHERE {{ {group} }}"


# --------------------------------------------------------------------------------- building

def documents(count: int, part: int) -> Iterator[Document]:
    return (d for i, d in enumerate(corpus.documents(count)) if i % 2 == part)


def build(path: Path, count: int) -> dict:
    shutil.rmtree(path, ignore_errors=True)
    ctx = Context.open(path, embedder=MockEmbedder(dim=384))
    started = time.perf_counter()
    legal = ingest_all(documents(count, 0), ctx=ctx, scope="legal")
    rest = ingest_all(documents(count, 1), ctx=ctx)
    seconds = time.perf_counter() - started
    ctx.kg.load(corpus.taxonomy_turtle().encode(), format="turtle")
    ctx.close()
    chunks = legal.chunks + rest.chunks
    return {"documents": legal.ingested + rest.ingested, "chunks": chunks, "seconds": seconds,
            "chunks_per_s": chunks / seconds, "peak_rss_gb": peak_rss_gb(),
            "failed": legal.failed + rest.failed, "disk": disk(path)}


def peak_rss_gb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def disk(path: Path) -> dict[str, float]:
    parts: dict[str, float] = {}
    for item in path.iterdir():
        size = (sum(f.stat().st_size for f in item.rglob("*") if f.is_file())
                if item.is_dir() else item.stat().st_size)
        parts[item.name] = size / 1024**3
    return parts


OPEN = """
import json, sys, time
sys.path.insert(0, {python!r})
started = time.perf_counter()
from trails.context import Context
from trails.vector import MockEmbedder
imported = time.perf_counter()
ctx = Context.open({path!r}, read_only={read_only}, embedder=MockEmbedder(dim=384))
opened = time.perf_counter()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024**2
after_open = rss()
from trails.retrieval.retrieve import retrieve
began = time.perf_counter()
retrieve("plupe gibo rojou", ctx, mode="vector", k=10)
queried = time.perf_counter()
# What `trails query` meets each time: a fresh process's first filtered search, fused default.
import datetime
found = retrieve("gibo plupe", ctx, sparql_filter={first_filter!r},
                 bindings={{"since": datetime.date.fromisoformat({since!r})}})
print(json.dumps({{"open_s": opened - imported, "rss_open_gb": after_open,
                  "rss_query_gb": rss(), "first_query_s": queried - began,
                  "first_filter_s": time.perf_counter() - queried,
                  "first_filter_candidates": found.candidates}}))
"""


def measure_open(path: Path, read_only: bool) -> dict:
    code = OPEN.format(python=str(ROOT / "python"), path=str(path), read_only=read_only,
                       first_filter=select(f"{LINK} {DATE_SINCE}"),
                       since=corpus.date_for_fraction(0.01).isoformat())
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    if run.returncode:
        return {"error": run.stderr[-2000:]}
    return json.loads(run.stdout.strip().splitlines()[-1])


# -------------------------------------------------------------------------------- measuring

def clock(fn: Callable[[], object], runs: int = 1) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000, out


class Unique:
    """A comment at the end of a filter: the same filter, never seen before (no cache)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, text: str) -> str:
        self.n += 1
        return f"{text}\n# run {self.n}"


def numpy_floor(n: int, queries: list[np.ndarray]) -> float:
    matrix = np.random.default_rng(0).standard_normal((n, 384), dtype=np.float32)
    times = []
    for q in queries * 2:
        started = time.perf_counter()
        scores = matrix @ q.astype(np.float32)
        np.argpartition(scores, -10)[-10:]
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure_filters(ctx: Context, texts: list[str], written_too: bool,
                    unique: Unique) -> list[dict]:
    """One row per shape and share on ``ctx``; ``unique`` is shared by both contexts' passes,
    so no filter text of one pass is ever seen again by the other."""
    rows = []
    found = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }")
    dates = sorted(dt.date.fromisoformat(str(d)) for d in found.column("d"))
    for name, (natural, best, bindings_per_share, scope) in shapes(dates).items():
        for share, bindings in zip(SHARES, bindings_per_share):
            rows.append(measure_filter(ctx, texts, unique, name, share, select(natural),
                                       select(best), bindings, scope, written_too))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _verdict(row: dict) -> str:
    """ok: the planned candidates are the best form's chunks, and there are some (an empty
    answer would agree with anything, so a corpus too small for a share says so)."""
    if not row["same"]:
        return "DIFFERENT"
    return "ok" if row["chunks"] else "EMPTY"


def measure_filter(ctx: Context, texts: list[str], unique: Unique, name: str, share: str,
                   natural: str, best: str, bindings: dict, scope: str | None,
                   written_too: bool) -> dict:
    scopes = None if scope is None else [scope]
    row: dict = {"shape": name, "share": share}
    row["best_ms"], best_iris = clock(lambda: ctx.kg.select_iris(best, bindings, scopes=scopes))
    with ctx.vectors.snapshot():
        row["planned_ms"], planned = clock(lambda: filter_candidates(
            ctx.kg, unique(natural), bindings, scopes))
        row["same"] = set(ctx.vectors.expand_ids(planned)) == set(best_iris)
    row["lifted"] = type(planned).__name__ == "DocumentIris"
    row["chunks"] = len(best_iris)
    if written_too:
        row["written_ms"], _ = clock(lambda: ctx.kg.select_iris(natural, bindings, scopes=scopes))
    beside = []  # the unfiltered vector query, timed next to each first run: a shared
    # machine's slow minute then slows both, and the ratio stays the code's
    for fusion, label in ((None, "exact"), ("auto", "fused")):
        firsts, repeats = [], []  # first: a filter text never seen, fresh bindings' answer
        for query in texts:
            def run(text: str, query: str = query, fusion: str | None = fusion) -> object:
                return retrieve(query, ctx, sparql_filter=text, bindings=bindings, scope=scope,
                                fusion=fusion)
            beside.append(clock(lambda query=query: retrieve(query, ctx, mode="vector"))[0])
            firsts.append(clock(lambda run=run: run(unique(natural)))[0])
            run(natural)
            repeats.append(clock(lambda run=run: run(natural))[0])
        row[f"{label}_first_ms"] = statistics.median(firsts)
        row[f"{label}_repeat_ms"] = statistics.median(repeats)
    row["unfiltered_ms"] = statistics.median(beside)
    return row


def measure_unfiltered(ctx: Context, texts: list[str]) -> dict:
    out = {}
    for label, kwargs in (("vector", {"mode": "vector"}), ("exact", {"fusion": None}),
                          ("fused", {})):
        # Warm-up, in both scopes: the process takes the memory a search of half the rows
        # needs before anything is timed (first touches of fresh memory are slow on some
        # virtual machines, and would land on whichever filter ran first).
        retrieve(texts[0], ctx, **kwargs)
        retrieve(texts[0], ctx, scope="legal", **kwargs)
        out[label] = statistics.median(
            clock(lambda q=q, kwargs=kwargs: retrieve(q, ctx, **kwargs))[0] for q in texts)
    return out


# ---------------------------------------------------------------------------------- report

def render(build_facts: dict | None, opens: dict, floor: float, rows: list[dict],
           unfiltered: dict[str, dict], n: int, args: argparse.Namespace) -> str:
    # Each row's yardstick is the unfiltered query timed beside its own runs; this one, the
    # faster of the two contexts' runs before any filter, is only the fallback.
    vector = min(u["vector"] for u in unfiltered.values())
    lines = ["## A million chunks on one machine (benchmarks/scale.py)", "",
             (f"`{' '.join(['.venv/bin/python', 'benchmarks/scale.py', *command_line()])}` on "
             f"{facts()}, {dt.date.today()}. {n:,} chunks; numpy brute force over all of them "
             f"(the floor): **{floor:.0f} ms**."), ""]
    if build_facts:
        parts = ", ".join(f"{k} {v:.2f} GB" for k, v in sorted(build_facts["disk"].items())
                          if v >= 0.005)
        lines += [(f"Ingest: {build_facts['chunks']:,} chunks of {build_facts['documents']:,} "
                  f"documents in {build_facts['seconds']:.0f} s: **{build_facts['chunks_per_s']:,.0f}"
                  f" chunks/s**, peak RSS {build_facts['peak_rss_gb']:.1f} GB. Disk: "
                  f"**{sum(build_facts['disk'].values()):.2f} GB** ({parts})."), ""]
    for mode, measured in opens.items():
        if "error" in measured:
            lines.append(f"Open {mode}: failed: {measured['error'][-300:]}")
        else:
            lines.append(f"Open {mode}: **{measured['open_s']:.2f} s**, RSS "
                         f"{measured['rss_open_gb']:.2f} GB after open, "
                         f"{measured['rss_query_gb']:.2f} GB after a query. In that fresh "
                         f"process the first query (vector mode) took "
                         f"{1000 * measured['first_query_s']:.0f} ms, then the first filtered "
                         f"search (the seed's date at 1%, fused default, "
                         f"{measured['first_filter_candidates']:,} candidates) "
                         f"{1000 * measured['first_filter_s']:.0f} ms.")
    lines += ["", "Without a filter: " + "; ".join(
        f"{kind}: vector mode {u['vector']:.0f} ms ({u['vector'] / floor:.2f}x the floor), exact "
        f"hybrid {u['exact']:.0f} ms, fused default {u['fused']:.0f} ms" for kind, u in
        unfiltered.items()) + ".", "",
        ("Filters, medians over the queries. *first*: a filter never seen before (a new text, "
         "so no cached answer), *again*: the same filter on an unchanged graph. In brackets "
         "the first run against the unfiltered vector query timed beside it (before each "
         "first run, same context; targets: exact at most 2x, fused at most 3x). The last "
         "column gives those unfiltered times, read-only / writable:"), "",
        ("| shape | share | chunks | best hand-ordered SPARQL | natural, planned | "
         + " | ".join(f"{kind} {label} first / again" for kind in CONTEXTS
                      for label in ("exact", "fused")) + " | unfiltered beside |"),
        "| --- | --- | ---: | ---: | ---: | " + " | ".join(["---:"] * 5) + " |"]
    by_key = {(r["context"], r["shape"], r["share"]): r for r in rows}
    for r in (r for r in rows if r["context"] == CONTEXTS[0]):
        cells = []
        for kind in CONTEXTS:
            other = by_key[(kind, r["shape"], r["share"])]
            for label in ("exact", "fused"):
                first, again = other[f"{label}_first_ms"], other[f"{label}_repeat_ms"]
                yardstick = other.get("unfiltered_ms", vector)
                cells.append(f"{first:.0f} / {again:.0f} ms ({first / yardstick:.1f}x)")
        cells.append(" / ".join(f"{by_key[(kind, r['shape'], r['share'])]['unfiltered_ms']:.0f}"
                                for kind in CONTEXTS) + " ms")
        lines.append(
            f"| {r['shape']} | {r['share']} | {r['chunks']:,} | {r['best_ms']:.0f} ms | "
            f"{r['planned_ms']:.0f} ms{' (documents)' if r['lifted'] else ''} | "
            + " | ".join(cells) + " |")
    written = [r for r in rows if "written_ms" in r]
    if written:
        lines += ["", "The natural form run as written (no planning): " + ", ".join(
            f"{r['context']} {r['shape']} {r['share']} {r['written_ms']:.0f} ms"
            for r in written) + "."]
    return "\n".join(lines) + "\n"


def command_line() -> list[str]:
    """This run's arguments, a --keep folder named DIR (no machine's path in the docs)."""
    args = sys.argv[1:]
    return ["DIR" if n and args[n - 1] == "--keep" else a for n, a in enumerate(args)]


def facts() -> str:
    import pyoxigraph

    cpu = ""
    info = Path("/proc/cpuinfo")
    if info.exists():
        cpu = next((line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
                    if line.startswith("model name")), "")
    return (f"{os.cpu_count()} cores ({cpu or platform.machine()}), Python "
            f"{platform.python_version()}, numpy {np.__version__}, pyoxigraph "
            f"{pyoxigraph.__version__}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="~6,500 documents (~50,000 chunks)")
    parser.add_argument("--docs", type=int, default=None, help="documents to generate")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build here (or reuse what is there) and keep it")
    parser.add_argument("--queries", type=int, default=3)
    parser.add_argument("--written", action="store_true",
                        help="also time each natural filter as written (slow at 1M)")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    count = args.docs or (6_500 if args.quick else 131_000)
    work = args.keep or Path(tempfile.mkdtemp(prefix="trails-scale-"))
    try:
        build_facts = None
        if not (work / "trails.json").exists():
            build_facts = build(work, count)
            print(json.dumps(build_facts), flush=True)
        opens = {"read-only": measure_open(work, True), "writable": measure_open(work, False)}
        print(json.dumps(opens), flush=True)
        # Both kinds of context, read-only first (how `trails query` and an analyst's
        # session open it): each evaluates filters its own way (ADR 13, ADR 29).
        vocab = corpus.vocabulary()
        rng = np.random.default_rng(3)
        texts = [" ".join(vocab[int(i)] for i in rng.zipf(1.3, size=4) if i < len(vocab))
                 or vocab[0] for _ in range(args.queries)]
        unique = Unique()
        rows, unfiltered = [], {}
        for kind in CONTEXTS:
            ctx = Context.open(work, read_only=kind == "read-only",
                               embedder=MockEmbedder(dim=384))
            n = ctx.vectors.count()
            if kind == CONTEXTS[0]:
                floor = numpy_floor(n, [np.asarray(ctx.embedder.embed(t)) for t in texts])
            unfiltered[kind] = measure_unfiltered(ctx, texts)
            for row in measure_filters(ctx, texts, args.written or args.quick, unique):
                rows.append({**row, "context": kind})
            ctx.close()
        report = render(build_facts, opens, floor, rows, unfiltered, n, args)
        print(report)
        print("planned = best form: " + " ".join(
            f"{r['context']}:{r['shape'].split()[0]}@{r['share']}={_verdict(r)}"
            for r in rows))
        if not args.no_write:
            write_region("scale", report, after="ingest")
        return 0 if all(_verdict(r) == "ok" for r in rows) else 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
