"""Vector stores side by side: SqliteVecStore, QdrantStore (qdrant-client's local mode) and
PgVectorStore (PostgreSQL with pgvector).

benchmarks/hybrid.py's corpus, graph and filter (100,000 clustered 384-d unit vectors, a
``trails:bucket`` per chunk so that ``FILTER(?b < ?limit)`` selects an exact fraction), loaded
into both stores in one run and measured on the same queries: ingest (``add_many``), vector
search over all vectors (k=10) and hybrid ``retrieve()`` at every selectivity, each store's
``search_with_plan`` step timed inside the call, recall@10 against exact float64 brute force;
then ``QdrantStore(path=...)`` against ``":memory:"`` on a sample of the vectors.

PgVectorStore runs on a server given by ``--pg-dsn``, else on a throwaway local server started
with pgserver (the dev extra), and is left out when neither is there (``--no-pgvector``). It
takes every query, as SqliteVecStore does; the fused default (``retrieve()`` with keyword and
vector rankings fused) is measured on all three at a few selectivities.

In local mode QdrantStore applies the candidate filter to qdrant-client's in-process arrays and
scores with numpy (qdrant-client would check the filter point by point in Python: seconds to
minutes per query); a server gets the filter. QdrantStore runs on as many queries as fit
``--qdrant-budget`` seconds per plan, and not at all where a straight-line fit of the plans
already measured predicts one query longer than ``--qdrant-cap`` seconds.

    .venv/bin/python benchmarks/stores.py                      # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/stores.py --quick --no-write   # smoke run in seconds
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import textwrap
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
from _docs import DOC, write_region
from hybrid import (
    BUCKETS,
    DIM,
    FILTER,
    SELECTIVITIES,
    K,
    LookupEmbedder,
    Samples,
    build_graph,
    chunk_iri,
    doc_iri,
    exact_top,
    machine_facts,
    make_corpus,
    markdown_table,
    pct,
    show,
    timed,
)

from trails.context import Context
from trails.errors import TrailsError
from trails.vector import retrieve
from trails.vector.stores.pgvector import PgVectorStore
from trails.vector.stores.qdrant import QdrantStore
from trails.vector.stores.sqlite_vec import SqliteVecStore

ROOT = Path(__file__).resolve().parent.parent
STORES = ["sqlite-vec", "qdrant"]  # main() adds "pgvector" when it has a server
FUSED_SELECTIVITIES = (None, 0.01, 0.5)  # None: unfiltered
BATCH = 20_000  # vectors per add_many call, as hybrid.py builds its store


def corpus(n: int, queries: int, rng: np.random.Generator):
    """hybrid.py's corpus; with fewer than BUCKETS vectors the buckets are spread over
    0..BUCKETS-1, so that the filter still selects the named fraction."""
    vectors, bucket, qs = make_corpus(n, queries, rng)
    return vectors, (bucket * BUCKETS // n if n < BUCKETS else bucket), qs


def ingest(store, vectors: np.ndarray, ids: list[str], metas: list[dict]) -> float:
    """Seconds to add every vector, BATCH per add_many call."""
    start = time.perf_counter()
    for lo in range(0, len(ids), BATCH):
        store.add_many(ids[lo : lo + BATCH], vectors[lo : lo + BATCH], metas[lo : lo + BATCH])
    return time.perf_counter() - start


def clock(obj, name: str) -> list:
    """Time every call of ``obj.<name>``: (ms, result) per call, in order. An instance
    attribute shadows the method (hybrid.py's clock_sparql, for any method)."""
    calls, inner = [], getattr(obj, name)

    def wrapper(*args, **kwargs):
        calls.append(timed(inner, *args, **kwargs))
        return calls[-1][1]

    setattr(obj, name, wrapper)
    return calls


def compare(s: Samples, seed: int, ctxs: dict, clocks: dict, names: list[str],
            truth: set[str], qi: int, **kwargs) -> dict:
    """Query ``qi`` through ``retrieve()`` on each named store, in a random order (noise hits
    them alike and neither always runs first): end-to-end and store-step times, recall, and
    whether QdrantStore's hits (ids and float scores) equal SqliteVecStore's. ``fusion=None``:
    the vector ranking alone, which both stores must return exactly. Returns plans."""
    plans = {}
    for name in (names[i] for i in np.random.default_rng(seed).permutation(len(names))):
        res = s.time("e2e_" + name, retrieve, f"q{qi}", ctxs[name], k=K, fusion=None, **kwargs)
        rank_ms, (_, plan) = clocks[name][-1]
        s.add("rank_" + name, rank_ms)
        if "sparql_filter" in kwargs:
            s.add("sparql", clocks["sparql"][-1][0])
        s.recall(name, (h.iri for h in res), truth)
        plans[name] = (plan.name, [(h.iri, h.score) for h in res])
    if "qdrant" in plans:
        s.add("same", float(plans["qdrant"][1] == plans["sqlite-vec"][1]))
        for key in ("rank", "e2e"):  # paired, per query
            s.add("x_" + key, s[f"{key}_qdrant"][-1] / s[f"{key}_sqlite-vec"][-1])
    if "pgvector" in plans:
        s.add("same_pg", float(plans["pgvector"][1] == plans["sqlite-vec"][1]))
        for key in ("rank", "e2e"):
            s.add("xpg_" + key, s[f"{key}_pgvector"][-1] / s[f"{key}_sqlite-vec"][-1])
    return {name: plan for name, (plan, _) in plans.items()}


def predict_ms(fit: list[tuple[int, float]], candidates: int) -> float | None:
    """QdrantStore's ms per hybrid query at ``candidates``, on a straight line through the
    (candidates, median ms) already measured; None until two candidate counts are."""
    points = dict(fit)  # one point per candidate count (tiny corpora repeat counts)
    if len(points) < 2:
        return None
    slope, intercept = np.polyfit(list(points), list(points.values()), 1)
    return float(intercept + slope * candidates)


def summary(s: Samples, plans: dict, **extra) -> dict:
    out = s.summary(**extra, plans=plans)
    out["q_qdrant"] = len(s.get("e2e_qdrant", []))
    out["q_sqlite-vec"] = len(s.get("e2e_sqlite-vec", []))
    out["same_n"] = int(sum(s.get("same", [])))
    out["q_pgvector"] = len(s.get("e2e_pgvector", []))
    out["same_pg_n"] = int(sum(s.get("same_pg", [])))
    return out


def run_vector(ctxs, clocks, qs, truth64, ids, budget_ms: float, rounds: int = 3) -> dict:
    """Each query `rounds` times on SqliteVecStore; on QdrantStore while the budget lasts."""
    s, plans, spent = Samples(), {}, 0.0
    every = np.arange(len(ids))
    for i in range(rounds * len(qs)):
        qi = i % len(qs)
        names = [n for n in STORES if n != "qdrant" or spent < budget_ms]
        plans = {**plans, **compare(s, i, ctxs, clocks, names,
                                    exact_top(truth64[:, qi], every, ids), qi, mode="vector")}
        spent += s["e2e_qdrant"][-1] if "qdrant" in names else 0.0
    return summary(s, plans)


def run_hybrid(ctxs, clocks, qs, bucket, truth64, ids, budget_ms: float,
               cap_ms: float) -> list[dict]:
    row_of = {id: r for r, id in enumerate(ids)}
    chunk_row = np.array([row_of[chunk_iri(i)] for i in range(len(bucket))])
    out, fit = [], []
    for sel in SELECTIVITIES:
        bind = {"limit": max(1, round(sel * BUCKETS))}
        rows = np.sort(chunk_row[bucket < bind["limit"]])
        predicted = predict_ms(fit, len(rows))
        skip = predicted is not None and predicted > cap_ms  # a rule to skip, not an estimate
        s, plans, spent = Samples(), {}, 0.0
        for qi in range(len(qs)):
            names = [n for n in STORES if n != "qdrant" or (not skip and spent < budget_ms)]
            plans = {**plans, **compare(s, qi, ctxs, clocks, names,
                                        exact_top(truth64[rows, qi], rows, ids), qi,
                                        mode="hybrid", sparql_filter=FILTER, bindings=bind)}
            spent += s["e2e_qdrant"][-1] if "qdrant" in names else 0.0
        out.append(summary(s, plans, sel=sel, cands=len(rows)))
        if not skip:
            fit.append((len(rows), out[-1]["e2e_qdrant"]))
        print(f"hybrid {pct(sel)}: {out[-1]['q_qdrant']} qdrant queries, {spent / 1e3:.0f} s")
    return out


def run_fused(ctxs, qs, bucket, rounds: int = 1) -> list[dict]:
    """The default retrieve() (hybrid, keyword and vector rankings fused) on every store, at
    FUSED_SELECTIVITIES: median ms per query."""
    out = []
    for sel in FUSED_SELECTIVITIES:
        s = Samples()
        kwargs = {} if sel is None else {"sparql_filter": FILTER,
                                         "bindings": {"limit": max(1, round(sel * BUCKETS))}}
        for qi in range(rounds * len(qs)):
            for name in (STORES[i] for i in np.random.default_rng(qi).permutation(len(STORES))):
                s.time("fused_" + name, retrieve, f"q{qi % len(qs)}", ctxs[name], k=K, **kwargs)
        out.append(s.summary(sel=sel))
    return out


def pg_tables(build: dict, sizes: dict, n: int, vector: dict, hybrid: list[dict],
              fused: list[dict]):
    """(title, headers, rows) for PgVectorStore beside SqliteVecStore."""
    rows = [["vector search (all)", f"{vector['q_pgvector']}", ms(vector["rank_pgvector"]),
             ms(vector["e2e_pgvector"]), times(vector["xpg_e2e"]),
             f"{vector['r_pgvector']:.3f}", f"{vector['same_pg_n']}/{vector['q_pgvector']}",
             vector["plans"].get("pgvector", "-")]]
    rows += [[f"hybrid {pct(r['sel'])} ({r['cands']:,})", str(r["q_pgvector"]),
              ms(r["rank_pgvector"]), ms(r["e2e_pgvector"]), times(r["xpg_e2e"]),
              f"{r['r_pgvector']:.3f}", f"{r['same_pg_n']}/{r['q_pgvector']}",
              r["plans"].get("pgvector", "-")] for r in hybrid]
    f_rows = [["unfiltered" if r["sel"] is None else pct(r["sel"]),
               *(ms(r.get("fused_" + name)) for name in STORES)] for r in fused]
    size = sum(sizes[key] for key in ("table", "terms", "other"))
    disk = (f"{size / 2**20:,.0f} MB on disk, {size / n:,.0f} bytes per chunk, of which the"
            f" keyword index {sizes['terms'] / n:,.0f}; shared_buffers {sizes['shared_buffers']}")
    return [(f"PgVectorStore beside SqliteVecStore (ingest {build['pgvector']:.1f} s; {disk})",
             ["search", "queries", "pgvector rank ms", "pgvector retrieve() ms",
              "retrieve() pgvector / sqlite-vec", "recall@10", "identical hits", "plan"], rows),
            ("The fused default: retrieve() ms, keyword and vector rankings fused",
             ["selectivity", *STORES], f_rows)]


def pg_render(parts) -> str:
    (title, head, rows), (f_title, f_head, f_rows) = parts
    return f"""

### {title}

PgVectorStore in a local PostgreSQL (over a unix socket; {pg_facts()}), exact search (no
HNSW index): each ranking is one SQL statement over the candidates, ordered by pgvector's
inner product, its top rows re-scored in float64. "identical hits" compares its ids and
scores with SqliteVecStore's.

{markdown_table(head, rows)}

### {f_title}

{markdown_table(f_head, f_rows)}"""


def pg_facts() -> str:
    return f"psycopg {version('psycopg')}, pgvector (Python) {version('pgvector')}"


def folder_mb(path: str) -> float:
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, f) for d, _, names in os.walk(path) for f in names]
    return sum(os.path.getsize(f) for f in files if os.path.exists(f)) / 1e6


def run_persisted(tmp: str, vectors, ids, metas, qs, m: int) -> list[dict]:
    """QdrantStore's ``path=`` mode against ``":memory:"`` (and SqliteVecStore's file) on the
    first m vectors: add_many, close and reopen, and vector search (median of a few queries)."""
    folder, db = os.path.join(tmp, "qdrant-sample"), os.path.join(tmp, "sample.db")
    makers = [("QdrantStore `:memory:`", lambda: QdrantStore(dim=DIM), None),
              ("QdrantStore `path=`", lambda: QdrantStore(dim=DIM, path=folder), folder),
              ("SqliteVecStore file", lambda: SqliteVecStore(db, dim=DIM), db)]
    out = []
    for label, make, where in makers:
        store = make()
        seconds, reopen = ingest(store, vectors[:m], ids[:m], metas[:m]), None
        if where is not None:
            store.close()
            reopen, store = timed(make)
        search = [timed(store.search, q, K)[0] for q in qs[:5]]
        store.close()
        out.append({"label": label, "n": m, "add": seconds, "reopen": reopen,
                    "search": float(np.median(search)),
                    "mb": folder_mb(where) if where else None})
    return out


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}" if a is not None and b else "-"


def times(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.1f}"


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def tables(build: dict, vector: dict, hybrid: list[dict], persisted: list[dict], n: int):
    """(title, headers, rows) for each table."""
    i_rows = [[name, f"{n:,}", f"{build[name]:.1f}", f"{n / build[name]:,.0f}",
               ratio(build[name], build["sqlite-vec"])] for name in STORES]
    v_rows = [[name, str(vector[f"q_{name}"]), ms(vector[f"rank_{name}"]),
               ms(vector[f"min_rank_{name}"]), ms(vector[f"e2e_{name}"]),
               f"{vector['r_' + name]:.3f}", vector["plans"].get(name, "-")] for name in STORES]
    same = f"identical hits {vector['same_n']}/{vector['q_qdrant']}"
    v_rows.append(["qdrant / sqlite-vec (paired median)", "", times(vector["x_rank"]), "",
                   times(vector["x_e2e"]), "", same])
    h_rows = [hybrid_row(r, estimate_ms(hybrid, n, r["cands"])) for r in hybrid]
    p_rows = [[p["label"], f"{p['n']:,}", f"{p['add']:.2f}", f"{p['n'] / p['add']:,.0f}",
               ms(p["reopen"]),
               ms(p["search"]), f"{p['mb']:.1f}" if p["mb"] is not None else "-"]
              for p in persisted]
    return [("Ingest: add_many, 20,000 vectors per call",
             ["store", "vectors", "seconds", "vectors/s", "/ sqlite-vec"], i_rows),
            (f"Vector search over all {n:,} vectors, k = {K}",
             ["store", "queries", "search_with_plan ms", "min ms", "retrieve() ms", "recall@10",
              "plan"], v_rows),
            ("Hybrid: SPARQL filter, then exact top-10 on each store",
             ["selectivity", "candidates", "queries sqlite-vec / qdrant", "SPARQL ms",
              "sqlite-vec rank ms", "qdrant rank ms", "rank qdrant / sqlite-vec",
              "sqlite-vec retrieve() ms", "qdrant retrieve() ms", "retrieve() qdrant / sqlite-vec",
              "recall@10 sqlite-vec / qdrant", "identical hits", "plans sqlite-vec / qdrant"],
             h_rows),
            ("QdrantStore `path=` against `:memory:` (a sample)",
             ["store", "vectors", "add_many s", "vectors/s", "reopen ms", "vector search ms",
              "on disk MB"], p_rows)]


def estimate_ms(hybrid: list[dict], n: int, candidates: int) -> float | None:
    """QdrantStore's ms per hybrid query at ``candidates``, on a line in (n - c) * c (the
    MatchAny part of its filter) through the plans measured; None where that part vanishes
    (c = n) or fewer than two plans ran."""
    ran = [((n - r["cands"]) * r["cands"], r["e2e_qdrant"]) for r in hybrid if r["q_qdrant"]]
    fit = predict_ms(ran, (n - candidates) * candidates)
    return None if candidates >= n else fit


def duration(x_ms: float) -> str:
    return (f"{x_ms / 60e3:,.0f} min" if x_ms >= 60e3 else f"{x_ms / 1e3:,.0f} s" if x_ms >= 1e3
            else f"{x_ms:,.0f} ms")


def hybrid_row(r: dict, estimate: float | None) -> list[str]:
    head = [pct(r["sel"]), f"{r['cands']:,}", f"{r['q_sqlite-vec']} / {r['q_qdrant']}",
            ms(r["sparql"]), ms(r["rank_sqlite-vec"])]
    plans = r["plans"]
    if not r["q_qdrant"]:
        guess = f"~{duration(estimate)} estimated" if estimate is not None else "not estimated"
        skipped = f"not run ({guess})"
        return [*head, skipped, "-", ms(r["e2e_sqlite-vec"]), "-", "-",
                f"{r['r_sqlite-vec']:.3f} / -", "-", f"{plans['sqlite-vec']} / -"]
    return [*head, ms(r["rank_qdrant"]), times(r["x_rank"]), ms(r["e2e_sqlite-vec"]),
            ms(r["e2e_qdrant"]), times(r["x_e2e"]),
            f"{r['r_sqlite-vec']:.3f} / {r['r_qdrant']:.3f}", f"{r['same_n']}/{r['q_qdrant']}",
            f"{plans['sqlite-vec']} / {plans['qdrant']}"]


def facts() -> str:
    return f"{machine_facts()}, qdrant-client {version('qdrant-client')}"


def render(parts, vector: dict, hybrid: list[dict], n: int, queries: int, args, load: str,
           minutes: float, persist_rate: float) -> str:
    (i_title, i_head, i_rows), (v_title, v_head, v_rows), (h_title, h_head, h_rows), \
        (p_title, p_head, p_rows) = parts
    ran = [r for r in hybrid if r["q_qdrant"]]
    exact = all(r["r_qdrant"] == 1.0 for r in [vector, *ran]) and all(
        r["r_sqlite-vec"] == 1.0 for r in [vector, *hybrid])
    same = all(r["same_n"] == r["q_qdrant"] for r in [vector, *ran])
    skipped = [pct(r["sel"]) for r in hybrid if not r["q_qdrant"]]
    not_run = f": {', '.join(skipped)}" if skipped else " (none was)"
    longer = ("; the estimates for the plans not run are a line in (points - candidates) x "
              "candidates through the plans measured") if skipped else ""
    recall = ("1.0 on both stores, in every plan either ran" if exact
              else "below 1.0 somewhere (see the tables)")
    alike = ("which is why its hits and scores are those of SqliteVecStore, bit for bit" if same
             else "yet some of its hits differ from SqliteVecStore's (see the tables)")
    ranks = [r["rank_qdrant"] for r in ran] or [float("nan")]
    ratios = [r["x_rank"] for r in ran] or [float("nan")]
    return f"""## Vector stores side by side (`benchmarks/stores.py`)

Reproduce: `{" ".join([".venv/bin/python benchmarks/stores.py", *sys.argv[1:]])}` ({minutes:.1f} minutes for this run;
`--quick` for a smoke run). Measured {datetime.date.today().isoformat()} on {facts()}.

Load average (1 minute) {load}: the machine is shared with other jobs,
so times are inflated and noisy. On each query the two stores run back to back in a random
order, so that noise hits them alike; ratios are medians of per-query ratios.

The corpus, graph and filter of the hybrid benchmark above: {n:,} chunks of {DIM}-d clustered
unit vectors with `doc_iri` and `snippet` metadata, in a file-backed `SqliteVecStore` and in a
`QdrantStore` in qdrant-client's local mode (`:memory:`, in process; no Qdrant server is
measured here), around one in-memory Oxigraph graph. Each store has its own `Context` with the
same `LookupEmbedder`, so `retrieve(..., fusion=None)` end to end is the SPARQL filter (hybrid
only), the store's `search_with_plan` ("rank") and the hits: the exact vector ranking, without
the keyword ranking that the default fusion adds. Recall@{K} is against exact float64 scores,
worst query shown; "identical hits" counts the queries where QdrantStore returned the same ids
with the same float scores as SqliteVecStore.

QdrantStore takes the queries in turn until it has spent {args.qdrant_budget:g} s on a plan
(so at least one), SqliteVecStore all {queries} (vector search: each query three times). A
plan is not run on QdrantStore where a straight line through the plans already measured
predicts more than {args.qdrant_cap:g} s per query{not_run}.

### {i_title}

{markdown_table(i_head, i_rows)}

### {v_title}

{markdown_table(v_head, v_rows)}

### {h_title}

{markdown_table(h_head, h_rows)}

Recall: **{recall}**.

### How QdrantStore searches in local mode

qdrant-client's local mode evaluates a query's filter in Python, one point at a time
(`qdrant_client/local/payload_filters.py`, `calculate_payload_mask`), and its `MatchAny` and
`HasId` conditions walk the whole list of candidates for each point. Pushed into Qdrant as it
is for a server, QdrantStore's filter (`should = [HasId(point ids), MatchAny(doc_iri,
any=iris)]`, minus `pending`, `MatchAny` on `scope`) costs about points x candidates
comparisons per pass, and a search made at least two passes (`count`, then `query_points`):
at 100,000 points this benchmark measured 6.9 s for a vector search and 74 s per query at 1,000
candidates, and estimated 29 minutes at 50,000 (ADR 0008, amendment).

So in local mode QdrantStore does not hand the filter to qdrant-client. Under its lock it
reads the in-process collection's payloads and float32 vectors, applies the same rules in one
Python pass over the payloads (candidate ids or document IRIs, scopes, not pending, not
deleted), scores every eligible point with one BLAS product, re-scores in float64 the points
within twice the float32 error bound of the k-th and drops superseded versions among them
(`QdrantStore._local_search`). The answer is the filter path's (`tests/test_qdrant_local.py`
checks the two against each other and against brute force). The pass over {n:,} payloads is
most of what is left: {ms(vector["rank_qdrant"])} ms for a vector search and
{ms(min(ranks))}-{ms(max(ranks))} ms across the hybrid plans, {times(min(ratios))}-{times(max(ratios))}x
SqliteVecStore's rank step{longer}. A Qdrant server still gets the filter and answers it from
its id and payload indexes: these numbers say nothing about a server.

Exactness does not depend on the path: in local mode both score every eligible point, and QdrantStore
re-scores the possible top k in float64 with `VectorMatrix`'s function and sorts them by
(-score, id) (ADR 0008), {alike}.

### {p_title}

In `path=` mode qdrant-client keeps the points in memory and also writes each one to SQLite in
a transaction of its own, so ingest is bound by one commit per point (about
{persist_rate:,.0f} vectors/s here: {n:,} vectors would take about
{n / persist_rate / 60:,.0f} minutes, hence the sample); opening the folder reads every point
back. Searches then run on the same in-memory arrays as in `:memory:` mode.

{markdown_table(p_head, p_rows)}"""


def reflow(text: str, width: int = 96) -> str:
    """Refill the prose paragraphs (tables and headings as they are): substituted values leave
    lines of any length."""
    blocks = text.split("\n\n")
    return "\n\n".join(block if block.startswith(("|", "#")) else textwrap.fill(
        " ".join(block.split()), width, break_long_words=False, break_on_hyphens=False)
        for block in blocks)


def build(tmp: str, vectors, ids, metas, pg_dsn: str | None) -> tuple[dict, dict]:
    stores = {"sqlite-vec": SqliteVecStore(os.path.join(tmp, "vectors.db"), dim=DIM),
              "qdrant": QdrantStore(dim=DIM)}
    if pg_dsn is not None:
        stores["pgvector"] = PgVectorStore(pg_dsn, table="bench_stores", dim=DIM)
        if stores["pgvector"].count():
            raise RuntimeError("table bench_stores is not empty; drop it or use another --pg-dsn")
    seconds = {name: ingest(store, vectors, ids, metas) for name, store in stores.items()}
    for name, store in stores.items():
        if store.count() != len(ids):
            raise RuntimeError(f"{name} holds {store.count()} vectors, not {len(ids)}")
        print(f"{name}: {len(ids):,} vectors in {seconds[name]:.1f} s")
    return stores, seconds


def pg_sizes(store: PgVectorStore) -> dict:
    """Bytes on the server: the table with its indexes and TOAST, the keyword index, and
    PostgreSQL's shared_buffers (what the sizing table in docs/scale.md is made of)."""
    def read(conn):
        names = [store.table + suffix for suffix in ("", "__terms", "__versions", "__meta")]
        row = conn.execute(
            "SELECT pg_total_relation_size(%s::regclass), pg_total_relation_size(%s::regclass),"
            " pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass),"
            " current_setting('shared_buffers')", names).fetchone()
        return {"table": row[0], "terms": row[1], "other": row[2], "shared_buffers": row[3]}

    return store._run(read)


def pg_server(args) -> tuple[object | None, str | None]:
    """(a server this run started, the DSN PgVectorStore uses), or (None, None) without one;
    adds "pgvector" to STORES when there is one."""
    if args.no_pgvector:
        return None, None
    if args.pg_dsn:
        STORES.append("pgvector")
        return None, args.pg_dsn
    try:
        from trails.testing.servers.postgres import PostgresServer

        server = PostgresServer()
    except TrailsError as exc:
        print(f"PgVectorStore left out: {exc}")
        return None, None
    STORES.append("pgvector")
    return server, server.new_schema()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 vectors, 3 queries")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument("--queries", type=int, help="queries per plan (default 30)")
    parser.add_argument("--qdrant-budget", type=float,
                        help="seconds of QdrantStore queries per plan (default 60)")
    parser.add_argument("--qdrant-cap", type=float,
                        help="skip a plan predicted slower than this per query (default 150 s)")
    parser.add_argument("--persist-sample", type=int,
                        help="vectors in the path= / :memory: comparison (default 2,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-dsn", help="a PostgreSQL database with pgvector (default: a "
                        "throwaway local server, with pgserver)")
    parser.add_argument("--no-pgvector", action="store_true", help="leave PgVectorStore out")
    parser.add_argument("--chunks", type=int, help="vectors in the corpus (default 100,000)")
    args = parser.parse_args()
    n, queries, budget, cap, sample = ((1_000, 3, 0.5, 60.0, 100) if args.quick
                                       else (100_000, 30, 60.0, 150.0, 2_000))
    n, queries = args.chunks or n, args.queries or queries
    args.qdrant_budget = budget = args.qdrant_budget or budget
    args.qdrant_cap = cap = args.qdrant_cap or cap
    sample = min(args.persist_sample or sample, n)
    rng = np.random.default_rng(args.seed)
    started, loads = time.perf_counter(), [os.getloadavg()[0]]

    vectors, bucket, qs = corpus(n, queries, rng)
    ids = [chunk_iri(i) for i in range(n)]
    metas = [{"doc_iri": doc_iri(i // 10), "snippet": f"chunk {i}"} for i in range(n)]
    server, pg_dsn = pg_server(args)
    with tempfile.TemporaryDirectory() as tmp:
        stores, build_s = build(tmp, vectors, ids, metas, pg_dsn)
        sizes = pg_sizes(stores["pgvector"]) if "pgvector" in stores else {}
        kg = build_graph(bucket)
        ctxs = {name: Context(kg, store, LookupEmbedder(qs)) for name, store in stores.items()}
        clocks = {name: clock(store, "search_with_plan") for name, store in stores.items()}
        # the filter step, however it is answered (the graph's query or its columns)
        clocks["sparql"] = clock(sys.modules["trails.retrieval.retrieve"], "filter_candidates")
        matrix = stores["sqlite-vec"].matrix  # the stored unit float32 rows, the same in both
        q64 = qs.astype(np.float64) / np.linalg.norm(qs.astype(np.float64), axis=1, keepdims=True)
        truth64 = matrix.matrix.astype(np.float64) @ q64.T
        loads.append(os.getloadavg()[0])
        vector = run_vector(ctxs, clocks, qs, truth64, matrix.ids, budget * 1e3)
        loads.append(os.getloadavg()[0])
        hybrid = run_hybrid(ctxs, clocks, qs, bucket, truth64, matrix.ids, budget * 1e3, cap * 1e3)
        loads.append(os.getloadavg()[0])
        fused = run_fused(ctxs, qs, bucket) if "pgvector" in stores else []
        loads.append(os.getloadavg()[0])
        for store in stores.values():
            store.close()
        persisted = run_persisted(tmp, vectors, ids, metas, qs, sample)
    if server is not None:
        server.close()
    loads.append(os.getloadavg()[0])
    load = f"{loads[0]:.1f} before, {loads[-1]:.1f} after, at most {max(loads):.1f} between plans"
    minutes = (time.perf_counter() - started) / 60

    parts = tables(build_s, vector, hybrid, persisted, n)
    for part in parts:
        show(*part)
    for name in STORES:
        print(f"recall@10 {name} hybrid: " + " ".join(
            f"{pct(r['sel'])}={r['r_' + name]:.3f}" if r.get("r_" + name) is not None
            else f"{pct(r['sel'])}=skipped" for r in hybrid))
    same, total = (sum(r[key] for r in [vector, *hybrid]) for key in ("same_n", "q_qdrant"))
    print(f"identical hits qdrant = sqlite-vec: {same}/{total}")
    pg_parts = pg_tables(build_s, sizes, n, vector, hybrid, fused) if "pgvector" in STORES else None
    if pg_parts is not None:
        for part in pg_parts:
            show(*part)
        same, total = (sum(r[key] for r in [vector, *hybrid]) for key in ("same_pg_n", "q_pgvector"))
        print(f"identical hits pgvector = sqlite-vec: {same}/{total}")
    print(f"vector search qdrant / sqlite-vec {vector['x_rank']:.0f}x (retrieve() "
          f"{vector['x_e2e']:.0f}x); ingest {build_s['qdrant'] / build_s['sqlite-vec']:.1f}x; "
          f"load {load}; {minutes:.1f} min")
    if not args.no_write:
        rate = persisted[1]["n"] / persisted[1]["add"]
        body = reflow(render(parts, vector, hybrid, n, queries, args, load, minutes, rate)
                      + (pg_render(pg_parts) if pg_parts is not None else ""))
        write_region("stores", body, after="hybrid")
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
