"""Hybrid retrieval benchmark: SPARQL filter, then exact ranking, at every selectivity.

100,000 synthetic, clustered 384-d chunk vectors in a SqliteVecStore, with an Oxigraph graph
around them (chunks ``schema:isPartOf`` documents that carry a date and a category). Each chunk
has an integer ``trails:bucket`` in 0..9,999, so ``FILTER(?b < ?limit)`` selects an exact
fraction of the chunks. For each selectivity it compares, on the same queries:

  (a) trails hybrid: ``retrieve(mode="hybrid")`` end to end, and its parts (SPARQL, ranking);
  (b) the naive plan: vector top-10·k over the whole store, then intersect with the candidates;
  (c) numpy exact brute force over the candidate rows (row indices precomputed, and a variant
      that also maps the SPARQL IRIs to rows through a dict).

It then times vector mode over all vectors against numpy brute force and sqlite-vec's own vec0
KNN, and sweeps candidate fractions to find where ``gather`` stops beating ``masked-scan``.

    .venv/bin/python benchmarks/hybrid.py            # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/hybrid.py --quick --no-write   # smoke run in seconds
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyoxigraph as ox

import trails.vector.matrix as matrix_module
from trails.context import Context
from trails.kg.oxigraph import OxigraphGraph
from trails.kg.sparql import PREFIXES, TRAILS
from trails.vector import retrieve  # the public import path
from trails.vector.embedder import BaseEmbedder
from trails.vector.sqlite_vec import SqliteVecStore

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- hybrid:start -->", "<!-- hybrid:end -->"
DIM, K, BUCKETS, CHUNKS_PER_DOC = 384, 10, 10_000, 10
SELECTIVITIES = [0.0001, 0.001, 0.01, 0.1, 0.5, 1.0]
FRACTIONS = [0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8]
BASE = "trails://bench/"
FILTER = "SELECT ?iri WHERE { ?iri trails:bucket ?b . FILTER(?b < ?limit) }"
SCHEMA, XSD = PREFIXES["schema"], PREFIXES["xsd"]


class LookupEmbedder(BaseEmbedder):
    """Embeds the benchmark's query names ("q0", "q1", ...) as precomputed vectors, so
    end-to-end timings measure retrieval, not a model."""

    model_id = "bench-lookup"

    def __init__(self, queries: np.ndarray) -> None:
        self._queries = queries

    @property
    def dim(self) -> int:
        return self._queries.shape[1]

    def embed_batch(self, texts):
        return self._queries[[int(t[1:]) for t in texts]]


def chunk_iri(i: int) -> str:
    return f"{BASE}doc/{i // CHUNKS_PER_DOC}/chunk/{i % CHUNKS_PER_DOC}"


def doc_iri(d: int) -> str:
    return f"{BASE}doc/{d}"


def make_corpus(n: int, queries: int, rng: np.random.Generator):
    """Unit float32 vectors clustered by topic (a document's chunks share one topic), exactly
    n / BUCKETS chunks per bucket (random placement), and queries near random topics."""
    topics = rng.standard_normal((max(n // 500, 8), DIM), dtype=np.float32)
    docs = n // CHUNKS_PER_DOC
    doc_topic = rng.integers(0, len(topics), docs)
    doc_center = topics[doc_topic] + 0.5 * rng.standard_normal((docs, DIM), dtype=np.float32)
    vectors = np.repeat(doc_center, CHUNKS_PER_DOC, axis=0)
    vectors += 0.7 * rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bucket = rng.permutation(n) % BUCKETS
    q = topics[rng.integers(0, len(topics), queries)]
    q = q + 0.8 * rng.standard_normal(q.shape, dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return vectors, bucket, q.astype(np.float32)


def build_store(path: str, vectors: np.ndarray) -> SqliteVecStore:
    store = SqliteVecStore(path, dim=DIM)
    for a in range(0, len(vectors), 20_000):
        part = range(a, min(a + 20_000, len(vectors)))
        store.add_many([chunk_iri(i) for i in part], vectors[a : part.stop],
                       [{"doc_iri": doc_iri(i // CHUNKS_PER_DOC), "snippet": f"chunk {i}"}
                        for i in part])
    return store


def build_graph(bucket: np.ndarray) -> OxigraphGraph:
    """Documents (type, date, category) and their chunks (type, isPartOf, position, bucket)."""
    node, graph = ox.NamedNode, ox.DefaultGraph()
    a, part_of, pos = node(PREFIXES["rdf"] + "type"), node(SCHEMA + "isPartOf"), node(SCHEMA + "position")
    created, category, bkt = node(SCHEMA + "dateCreated"), node(SCHEMA + "genre"), node(TRAILS + "bucket")
    doc_type, chunk_type, date = node(SCHEMA + "CreativeWork"), node(TRAILS + "Chunk"), node(XSD + "date")

    def quads():
        for d in range(len(bucket) // CHUNKS_PER_DOC):
            doc = node(doc_iri(d))
            yield ox.Quad(doc, a, doc_type, graph)
            yield ox.Quad(doc, created, ox.Literal(f"{2015 + d % 10}-{d % 12 + 1:02d}-{d % 28 + 1:02d}",
                                                   datatype=date), graph)
            yield ox.Quad(doc, category, ox.Literal(f"category-{d % 7}"), graph)
            for c in range(CHUNKS_PER_DOC):
                i, chunk = d * CHUNKS_PER_DOC + c, node(chunk_iri(d * CHUNKS_PER_DOC + c))
                yield from (ox.Quad(chunk, a, chunk_type, graph), ox.Quad(chunk, part_of, doc, graph),
                            ox.Quad(chunk, pos, ox.Literal(c), graph),
                            ox.Quad(chunk, bkt, ox.Literal(int(bucket[i])), graph))

    kg = OxigraphGraph()
    kg.bulk_extend(quads())
    return kg


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1e3, result


def exact_top(scores: np.ndarray, rows: np.ndarray, ids: list[str], k: int) -> set[str]:
    """Ground truth: float64 scores, ties by id (all rows tied with the k-th are sorted)."""
    if len(rows) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        scores, rows = scores[keep], rows[keep]
    ranked = sorted(zip(-scores, (ids[r] for r in rows)))
    return {id for _, id in ranked[:k]}


def numpy_topk(m: np.ndarray, rows: np.ndarray, q32: np.ndarray, k: int) -> np.ndarray:
    """Plan (c): gather the candidate rows, one BLAS product, argpartition."""
    scores = m[rows] @ q32
    top = np.argpartition(scores, len(scores) - k)[len(scores) - k :] if len(scores) > k else \
        np.arange(len(scores))
    return rows[top[np.argsort(-scores[top])]]


def recall(found, truth: set[str]) -> float:
    return len(set(found) & truth) / len(truth) if truth else 1.0


def median(values) -> float:
    return float(np.median(values))


def run_hybrid(ctx: Context, qs: np.ndarray, bucket: np.ndarray, m64: np.ndarray) -> list[dict]:
    store, kg = ctx.vectors, ctx.kg
    m, ids = store.matrix.matrix, store.matrix.ids
    row_of = {id: r for r, id in enumerate(ids)}
    chunk_row = np.array([row_of[chunk_iri(i)] for i in range(len(bucket))])
    results = []
    for sel in SELECTIVITIES:
        limit = max(1, round(sel * BUCKETS))
        bind = {"limit": limit}
        rows = np.sort(chunk_row[bucket < limit])  # precomputed for plan (c), not timed
        iris = kg.select_iris(FILTER, bind)
        assert set(iris) == {ids[r] for r in rows}, "the SPARQL filter must select exactly"
        cands = set(iris)
        t = {key: [] for key in ("sparql", "rank", "e2e", "naive", "np", "np_map")}
        r = {key: [] for key in ("trails", "naive", "np")}
        for qi, q32 in enumerate(qs):
            q64 = q32.astype(np.float64)
            q64 /= np.linalg.norm(q64)
            truth = exact_top(m64[rows] @ q64, rows, ids, K)
            # Interleave the plans per query so machine noise hits them alike.
            ms, found = timed(lambda: kg.select_iris(FILTER, bind))
            t["sparql"].append(ms)
            ms, (hits, plan) = timed(lambda: store.search_with_plan(q64, K, ids=found))
            t["rank"].append(ms)
            ms, res = timed(lambda: retrieve(f"q{qi}", ctx, mode="hybrid", k=K,
                                             sparql_filter=FILTER, bindings=bind))
            t["e2e"].append(ms)
            assert [h.iri for h in res] == [h.id for h in hits]
            r["trails"].append(recall((h.iri for h in res), truth))
            ms, naive = timed(lambda: [h.id for h in store.search(q64, 10 * K) if h.id in cands][:K])
            t["naive"].append(ms)
            r["naive"].append(recall(naive, truth))
            ms, top = timed(lambda: numpy_topk(m, rows, q32, K))
            t["np"].append(ms)
            r["np"].append(recall((ids[i] for i in top), truth))
            ms, _ = timed(lambda: numpy_topk(
                m, np.fromiter(map(row_of.__getitem__, found), np.int64, len(found)), q32, K))
            t["np_map"].append(ms)
        results.append({"sel": sel, "cands": len(rows), "plan": plan.name,
                        **{f"r_{k}": min(v) for k, v in r.items()},
                        **{k: median(v) for k, v in t.items()}})
    return results


def run_vector(ctx: Context, qs: np.ndarray, m64: np.ndarray) -> dict:
    store = ctx.vectors
    m, ids = store.matrix.matrix, store.matrix.ids
    allrows = np.arange(len(ids))
    t = {key: [] for key in ("trails", "e2e", "np", "vec0")}
    r = {key: [] for key in ("trails", "np", "vec0")}
    for qi, q32 in enumerate(qs):
        q64 = q32.astype(np.float64)
        q64 /= np.linalg.norm(q64)
        truth = exact_top(m64 @ q64, allrows, ids, K)
        ms, hits = timed(lambda: store.search(q64, K))
        t["trails"].append(ms)
        r["trails"].append(recall((h.id for h in hits), truth))
        t["e2e"].append(timed(lambda: retrieve(f"q{qi}", ctx, mode="vector", k=K))[0])
        ms, top = timed(lambda: _np_full(m, q32, K))
        t["np"].append(ms)
        r["np"].append(recall((ids[i] for i in top), truth))
        ms, knn = timed(lambda: store.knn_sqlite_vec(q64, K))
        t["vec0"].append(ms)
        r["vec0"].append(recall((id for id, _ in knn), truth))
    return {**{f"r_{k}": min(v) for k, v in r.items()}, **{k: median(v) for k, v in t.items()}}


def _np_full(m: np.ndarray, q32: np.ndarray, k: int) -> np.ndarray:
    """Vector-mode baseline: one BLAS matrix-vector product over everything, then top-k."""
    scores = m @ q32
    top = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
    return top[np.argsort(-scores[top])]


def run_sweep(store: SqliteVecStore, qs: np.ndarray, rng: np.random.Generator) -> list[dict]:
    """Time both candidate plans on random row subsets by pinning GATHER_FRACTION."""
    index, saved = store.matrix, matrix_module.GATHER_FRACTION
    n, out = len(index), []
    try:
        for f in FRACTIONS:
            rows = np.sort(rng.choice(n, max(K, int(f * n)), replace=False))
            t = {"gather": [], "masked-scan": []}
            for q32 in qs:
                q64 = q32.astype(np.float64) / np.linalg.norm(q32.astype(np.float64))
                for plan, pin in (("gather", 1.0), ("masked-scan", 0.0)):
                    matrix_module.GATHER_FRACTION = pin
                    ms, (_, used, _) = timed(lambda: index.search(q64, K, rows))
                    assert used == plan
                    t[plan].append(ms)
            out.append({"f": f, "cands": len(rows), **{k: median(v) for k, v in t.items()}})
    finally:
        matrix_module.GATHER_FRACTION = saved
    return out


def crossover(sweep: list[dict]) -> float:
    """Fraction where gather stops winning (linear interpolation of the time difference)."""
    for lo, hi in zip(sweep, sweep[1:]):
        d_lo, d_hi = lo["gather"] - lo["masked-scan"], hi["gather"] - hi["masked-scan"]
        if d_lo <= 0 < d_hi:
            return lo["f"] + (hi["f"] - lo["f"]) * -d_lo / (d_hi - d_lo)
    return sweep[-1]["f"] if sweep[-1]["gather"] <= sweep[-1]["masked-scan"] else sweep[0]["f"]


def pct(x: float) -> str:
    return f"{x * 100:g}%"


def tables(hybrid, vector, sweep, n):
    """Three (title, headers, rows) tables, the target verdicts, and the crossover."""
    h_rows, verdicts = [], []
    for r in hybrid:
        budget = 1.5 * r["np"] + r["sparql"]
        ok = r["r_trails"] == 1.0 and r["e2e"] <= budget
        verdicts.append(ok)
        h_rows.append([pct(r["sel"]), f"{r['cands']:,}", r["plan"], f"{r['r_trails']:.3f}",
                       f"{r['r_naive']:.3f}", f"{r['r_np']:.3f}", f"{r['sparql']:.2f}",
                       f"{r['rank']:.2f}", f"{r['e2e']:.2f}", f"{r['naive']:.2f}", f"{r['np']:.2f}",
                       f"{r['np_map']:.2f}", f"{r['rank'] / r['np']:.2f}x",
                       f"{r['e2e']:.1f} / {budget:.1f} {'met' if ok else 'MISSED'}"])
    h_head = ["selectivity", "candidates", "plan", "recall (a)", "recall (b)", "recall (c)",
              "SPARQL ms", "(a) rank ms", "(a) end-to-end ms", "(b) naive ms", "(c) numpy ms",
              "(c') numpy+map ms", "(a) rank / (c)", "target: e2e <= 1.5(c)+SPARQL"]
    v = vector
    v_ok = v["trails"] <= v["np"]
    v_rows = [["trails `store.search`", f"{v['trails']:.2f}", f"{v['r_trails']:.3f}", "1.00x"],
              ["trails `retrieve(mode=\"vector\")`", f"{v['e2e']:.2f}", "", f"{v['e2e'] / v['trails']:.2f}x"],
              ["numpy `M @ q` + argpartition", f"{v['np']:.2f}", f"{v['r_np']:.3f}",
               f"{v['np'] / v['trails']:.2f}x"],
              ["sqlite-vec vec0 KNN", f"{v['vec0']:.2f}", f"{v['r_vec0']:.3f}",
               f"{v['vec0'] / v['trails']:.2f}x"]]
    v_head = [f"vector mode over {n:,}", "median ms", "recall@10", "time / trails"]
    s_rows = [[pct(s["f"]), f"{s['cands']:,}", f"{s['gather']:.2f}", f"{s['masked-scan']:.2f}",
               "gather" if s["gather"] <= s["masked-scan"] else "masked-scan"] for s in sweep]
    s_head = ["candidate fraction", "candidates", "gather ms", "masked-scan ms", "faster"]
    return ([("Hybrid: SPARQL filter, then top-10", h_head, h_rows),
             ("Vector mode", v_head, v_rows),
             ("Candidate plans (VectorMatrix.search, random rows)", s_head, s_rows)],
            all(verdicts), v_ok, crossover(sweep))


def markdown_table(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def show(title, headers, rows) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(f"\n{title}\n{markdown_table(headers, rows)}")
        return
    table = Table(*headers, title=title)
    for row in rows:
        table.add_row(*row)
    Console(width=max(200, len(title))).print(table)


def machine_facts() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    try:
        from threadpoolctl import threadpool_info

        blas = "; ".join(f"{i['internal_api']} {i['version']} ({i.get('architecture')}, "
                         f"{i['num_threads']} threads)" for i in threadpool_info())
    except ImportError:
        blas = "see numpy.show_config()"
    import pyoxigraph
    import sqlite_vec

    return (f"nproc {os.cpu_count()}, {cpu}; Python {platform.python_version()}, numpy {np.__version__}, "
            f"BLAS {blas}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
            f"pyoxigraph {pyoxigraph.__version__}, sqlite-vec {sqlite_vec.__version__}")


def write_doc(body: str) -> None:
    """Replace only this benchmark's region of docs/benchmarks.md (other benchmarks share it)."""
    block = f"{START}\n{body}\n{END}"
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 vectors, few queries (smoke run)")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    parser.add_argument("--queries", type=int, help="queries per selectivity (default 30; quick 5)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    n = 10_000 if args.quick else 100_000
    queries = args.queries or (5 if args.quick else 30)
    rng = np.random.default_rng(args.seed)

    started = time.perf_counter()
    vectors, bucket, qs = make_corpus(n, queries, rng)
    with tempfile.TemporaryDirectory() as tmp:
        store = build_store(os.path.join(tmp, "vectors.db"), vectors)
        kg = build_graph(bucket)
        ctx = Context(kg, store, LookupEmbedder(qs))
        print(f"built {n:,} vectors and {len(kg):,} triples in {time.perf_counter() - started:.1f} s",
              flush=True)
        m64 = store.matrix.matrix.astype(np.float64)  # ground truth scores in float64
        hybrid = run_hybrid(ctx, qs, bucket, m64)
        vector = run_vector(ctx, qs, m64)
        sweep = run_sweep(store, qs[: max(3, queries // 2)], rng)
        store.close()

    parts, hybrid_ok, vector_ok, cross = tables(hybrid, vector, sweep, n)
    for part in parts:
        show(*part)
    print("recall@10 trails hybrid: "
          + " ".join(f"{pct(r['sel'])}={r['r_trails']:.3f}" for r in hybrid))
    print(f"targets: hybrid {'met' if hybrid_ok else 'MISSED'}; vector mode "
          f"{'met' if vector_ok else 'MISSED'} ({vector['trails']:.2f} ms vs numpy {vector['np']:.2f} ms); "
          f"gather/masked-scan crossover ~{pct(cross)} "
          f"(GATHER_FRACTION = {matrix_module.GATHER_FRACTION}); {time.perf_counter() - started:.0f} s")
    if not args.no_write:
        write_doc(render(parts, hybrid_ok, vector_ok, vector, cross, n, queries))
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


def render(parts, hybrid_ok, vector_ok, vector, cross, n, queries) -> str:
    (h_title, h_head, h_rows), (v_title, v_head, v_rows), (s_title, s_head, s_rows) = parts
    return f"""## Hybrid retrieval (`benchmarks/hybrid.py`)

Reproduce with `.venv/bin/python benchmarks/hybrid.py` (about {'a minute' if n < 100_000 else 'three minutes'}).
Measured {datetime.date.today().isoformat()}; {machine_facts()}. The machine is shared and noisy:
every figure is the median over {queries} random queries, with the plans interleaved per query.

{n:,} chunks of {DIM}-d unit float32 vectors (clustered: a document's {CHUNKS_PER_DOC} chunks share
a topic) in a file-backed `SqliteVecStore`, and an in-memory Oxigraph graph around them: chunks
`schema:isPartOf` documents with `schema:dateCreated` (xsd:date) and `schema:genre`, and each
chunk has a `trails:bucket` in 0..9,999 so the filter
`{FILTER}` with `limit` bound selects an exact fraction. k = {K}.

### {h_title}

- (a) trails hybrid: `retrieve(mode="hybrid", sparql_filter=..., bindings=...)` end to end;
  its parts are the SPARQL time (`kg.select_iris`) and the rank time
  (`store.search_with_plan(q, k, ids=candidate_iris)`, which includes mapping IRIs to rows).
- (b) naive: `store.search(q, k={10 * K})` over everything, then intersect with the candidates.
- (c) numpy exact brute force from precomputed candidate row indices: `M[rows] @ q` +
  argpartition. (c') is the same plus mapping the SPARQL IRIs to rows through a dict.
  The target uses (c), the stricter baseline.
- Recall is recall@{K} against exact float64 ground truth (ties by id), the minimum over queries.

{markdown_table(h_head, h_rows)}

Target "recall 1.0 and end-to-end latency <= 1.5 x (c) + SPARQL": **{'met' if hybrid_ok else 'missed'}**.

### {v_title}

{markdown_table(v_head, v_rows)}

Target "vector mode no slower than numpy brute force": **{'met' if vector_ok else 'missed'}**
(trails / numpy = {vector['trails'] / vector['np']:.2f}; sqlite-vec / numpy = {vector['vec0'] / vector['np']:.2f}).

### {s_title}

Both plans are exact; `gather` copies the candidate rows then multiplies, `masked-scan`
multiplies every row and keeps the candidates. Measured crossover about {pct(round(cross, 3))};
`GATHER_FRACTION` in `python/trails/vector/matrix.py` is {matrix_module.GATHER_FRACTION}.

{markdown_table(s_head, s_rows)}"""


if __name__ == "__main__":
    sys.exit(main())
