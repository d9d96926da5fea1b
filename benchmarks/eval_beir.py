"""BEIR SciFact and NFCorpus through the real pipeline: keyword, vector, RRF and the default
hybrid, nDCG@10 and Recall@100 beside the published figures (docs/benchmarks.md).

    .venv/bin/python benchmarks/eval_beir.py                   # full run, writes the doc region
    .venv/bin/python benchmarks/eval_beir.py --limit 30 --no-write   # a quick look

Each corpus is ingested with ``ingest_all`` into a persisted context under
``benchmarks/.cache/beir/`` (re-ingest skips unchanged documents), once with ingestion's
default chunker and once a document per chunk ("whole doc", as MTEB embeds BEIR: the model
truncates at 256 word pieces). Embeddings are cached in ``benchmarks/.cache/embeddings.sqlite``
by model and text, so a context can be rebuilt without embedding again. The model runs on
the torch backend: the published MiniLM figures are torch's.

Anything tuned is tuned on SciFact train / NFCorpus dev and reported on test. The "one poor
ranking" section corrupts one signal on purpose (letters of the indexed text for keyword,
Gaussian noise on the stored vectors for vector) and shows each fusion against the stronger
single signal.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import pickle
import platform
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import _lab as lab
from _docs import write_region

from trails import evaluation as ev
from trails.context import Context
from trails.rank import fusion as fusion_module
from trails.retrieval.retrieve import FUSIONS

CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = CACHE / "eval_beir_results.pickle"  # the last run's numbers, for --render-only
DATA = ROOT.parent / "shared" / "data" / "beir"  # what the machine ships (SciFact, NFCorpus)
BUILT = CACHE / "datasets"  # what benchmarks/datasets/build_*.py write (ArguAna, DBpedia, MS MARCO)
# Where tuning happens: BEIR SciFact has no dev split.
TUNING_SPLIT = {"scifact": "train", "nfcorpus": "dev"}
KEYWORD_NOISE = (0.1, 0.2, 0.4)  # fraction of letters replaced in the keyword index
VECTOR_NOISE = (2.0, 4.0, 8.0)  # norm of the Gaussian noise added to unit vectors
CHUNK_LABEL = {"default": "default chunks", "whole": "whole doc"}


def dataset_dir(name: str, data: Path = DATA) -> Path:
    """The folder of BEIR set ``name``: under ``data`` when it is there, else the built one."""
    return data / name if (data / name).is_dir() else BUILT / name


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def embedder(backend: str = "torch") -> lab.CachedEmbedder:
    """The packaged MiniLM on ``backend`` (torch: as the published figures), through the
    embedding cache (its keys name the backend)."""
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    try:
        model = SentenceTransformerEmbedder(backend=backend)
    except TypeError:  # a trails without backends: torch is all there is
        model = SentenceTransformerEmbedder()
    return lab.CachedEmbedder(model, CACHE / "embeddings.sqlite")


def context_dir(name: str, chunking: str, backend: str = "torch") -> Path:
    """Where the persisted context of data set ``name`` chunked by ``chunking`` on
    ``backend`` lives (each backend has its own: their vectors differ)."""
    suffix = "" if backend == "torch" else f"-{backend}"
    return CACHE / "beir" / f"{name}-{chunking}{suffix}"


def open_context(data: ev.BeirDataset, chunking: str, model: lab.CachedEmbedder,
                 backend: str = "torch") -> Context:
    """The dataset's persisted context, ingested (a stale one, e.g. from before the keyword
    index kept full chunk text, is rebuilt from the embedding cache). ``backend`` names the
    model's backend: each has its own context (their vectors differ)."""
    directory = context_dir(data.name, chunking, backend)
    for attempt in range(2):
        # No audit trail: an evaluation makes thousands of 300-deep searches nobody will audit.
        ctx = Context.open(directory, embedder=model, audit=False)
        started = time.perf_counter()
        stats = ev.ingest_dataset(data, ctx, chunker=ev.chunker_for(chunking), batch_size=256)
        log(f"{data.name} {chunking}: {stats.summary()} ({time.perf_counter() - started:.0f}s, "
            f"embedding cache {model.hits} hits / {model.misses} misses)")
        sample = ctx.vectors.get(ctx.vectors.all_ids()[:1])
        if not sample or "text" in sample[0].metadata or attempt:
            return ctx
        log(f"{directory} keeps no chunk text for the keyword index: rebuilding it")
        ctx.close()
        shutil.rmtree(directory)
    raise AssertionError("unreachable")


def tuning_split(data: ev.BeirDataset) -> str:
    split = TUNING_SPLIT.get(data.name) or next(s for s in ("train", "dev") if s in data.splits)
    assert split != "test"
    return split


def shown(data: ev.BeirDataset) -> str:
    return ev.DATASET_NAMES.get(data.name, data.name)


def fusions() -> dict[str, object]:
    """The fusion functions to compare: every named one retrieve() accepts."""
    return {name: getattr(fusion_module, name) for name in FUSIONS}


def hybrid_name() -> str:
    return ev.hybrid_fusion()


def default_fusion_note() -> list[str]:
    """A warning when retrieve()'s own default fusion ranks hybrid by vector score only."""
    import inspect

    from trails.retrieval.retrieve import retrieve

    if inspect.signature(retrieve).parameters["fusion"].default is not None:
        return []
    return [("Note: `retrieve()` defaults to `fusion=None`, which ranks `mode=\"hybrid\"` by "
             "vector score alone (no keyword ranking): called without `fusion=`, trails' "
             "hybrid scores as the *vector* rows. The hybrid rows pass "
             f"`fusion=\"{hybrid_name()}\"`."), ""]


def describe_auto() -> str:
    """What fusion="auto" is at the time of the run (its settings live in trails.rank.fusion)."""
    auto = getattr(fusion_module, "auto", None)
    if hybrid_name() == "auto" and isinstance(auto, fusion_module.GuardedFusion):
        return (" (retrieve()'s default: score fusion whose keyword share is a logistic "
                "function of each query's evidence, " + ", ".join(fusion_module.EVIDENCE)
                + "; fitted by studies/guard_study.py on tuning splits, adr/0022)")
    if hybrid_name() != "auto" or not isinstance(auto, fusion_module.AutoFusion):
        return ""
    return (f" (quality-guarded score fusion, retrieve()'s default: weights "
            f"{dict(auto.weights)}, quality ramps {dict(auto.quality_ramps)}, sharpen "
            f"{auto.sharpen:g} below agreement {auto.agreement_floor:g}; chosen by "
            "studies/tune_auto.py)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of BEIR data sets")
    parser.add_argument("--datasets", nargs="+", default=["scifact", "nfcorpus"])
    parser.add_argument("--limit", type=int, help="score only the first N queries per split")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument("--chunkings", nargs="+", default=list(ev.CHUNKINGS),
                        choices=ev.CHUNKINGS)
    parser.add_argument("--skip-noise", action="store_true")
    parser.add_argument("--render-only", action="store_true",
                        help="re-render the last full run's saved results (no retrieval)")
    args = parser.parse_args()
    if args.render_only:
        saved = pickle.loads(RESULTS.read_bytes())
        body = render(*saved)
        print(body)
        if not args.no_write:
            write_region("beir", body)
        return 0
    started, load = time.perf_counter(), os.getloadavg()[0]
    model = embedder()
    results: list[ev.EvalResult] = []
    tuning_scores: dict[str, dict[str, dict[str, float]]] = {}
    noise_rows: list[str] = []
    timings: list[str] = []
    datasets = {name: ev.load_beir(dataset_dir(name, args.data)) for name in args.datasets}
    for name, data in datasets.items():
        for chunking in args.chunkings:
            phase = time.perf_counter()
            with open_context(data, chunking, model) as ctx:
                doc_of = ev.doc_ids_by_iri(data, ctx)
                test = lab.collect_rankings(data, "test", ctx, limit=args.limit)
                results += end_to_end(data, ctx, chunking, args.limit)
                results += from_rankings(data, test, doc_of, chunking)
                if chunking == "default":
                    tune = lab.collect_rankings(data, tuning_split(data), ctx, limit=args.limit)
                    tuning_scores[name] = tuning(data, tune, test, doc_of)
            timings.append(f"{name} {CHUNK_LABEL[chunking]}: {time.perf_counter() - phase:.0f}s")
            log(timings[-1])
    tuned = None
    tuning_rows: list[str] = []
    if tuning_scores:
        tuned, tuning_rows = tuning_table(
            tuning_scores, {d: tuning_split(datasets[d]) for d in tuning_scores})
    if not args.skip_noise and "default" in args.chunkings:
        for name, data in datasets.items():
            phase = time.perf_counter()
            with open_context(data, "default", model) as ctx:
                noise_rows += noise(data, ctx, ev.doc_ids_by_iri(data, ctx), args.limit, tuned)
            timings.append(f"{name} one poor ranking: {time.perf_counter() - phase:.0f}s")
            log(timings[-1])
    seconds = time.perf_counter() - started
    saved = (results, tuning_rows, noise_rows, timings, seconds, load, args.limit, tuned)
    RESULTS.write_bytes(pickle.dumps(saved))
    body = render(*saved)
    print(body)
    if not args.no_write:
        write_region("beir", body)
    return 0


def end_to_end(data: ev.BeirDataset, ctx: Context, chunking: str,
               limit: int | None) -> list[ev.EvalResult]:
    """The table's systems, each query through retrieve() (or keyword_search) itself."""
    out = []
    for system in ("keyword", "vector", "rrf", "hybrid"):
        fusion = hybrid_name() if system == "hybrid" else None
        searcher = ev.make_searcher(system, ctx, fusion=fusion)
        label = f"{system} ({CHUNK_LABEL[chunking]})"
        one = ev.evaluate_searcher(searcher, data, "test", ctx, system=label, limit=limit)
        log(f"{data.name} {label}: nDCG@10 {one['nDCG@10']:.4f} R@100 {one['R@100']:.4f} "
            f"({one.seconds:.0f}s)")
        out.append(one)
    return out


def from_rankings(data, rankings, doc_of, chunking) -> list[ev.EvalResult]:
    """Every fusion, from the same collected rankings (cheap; checks the end-to-end rows)."""
    out = []
    qrels = data.split("test")
    for name, fuse in fusions().items():
        run = lab.fused_run(rankings, fuse, doc_of)
        means, per_query = ev.score_run(run, {q: qrels[q] for q in rankings})
        out.append(ev.EvalResult(data.name, "test", f"fusion={name} ({CHUNK_LABEL[chunking]})",
                                 means, len(rankings), 0.0, per_query))
    return out


def fusion_grid() -> dict[str, object]:
    """The settings tuning chooses from: RRF constant x vector weight, and score fusion
    (min-max or z-score) x vector weight (the keyword weight is 1, or 1 - w for score fusion)."""
    grid: dict[str, object] = {}
    for constant in (5, 10, 20, 40, 60, 100):
        for weight in (0.5, 0.75, 1.0, 1.5, 2.0, 3.0):
            grid[f"rrf k={constant} w_vector={weight:g}"] = functools.partial(
                fusion_module.rrf, constant=constant, weights={"vector": weight, "keyword": 1.0})
    for normalize in ("minmax", "zscore"):
        for alpha in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            grid[f"weighted {normalize} w_vector={alpha:g}"] = functools.partial(
                fusion_module.weighted, normalize=normalize,
                weights={"vector": alpha, "keyword": round(1 - alpha, 2)})
    return grid


def tuning(data, tune, test, doc_of) -> dict[str, dict[str, float]]:
    """Every grid setting's nDCG@10 on the tuning split, and its test scores (which are
    only shown for the settings chosen on the tuning split)."""
    tune_qrels = {q: data.split(tuning_split(data))[q] for q in tune}
    test_qrels = {q: data.split("test")[q] for q in test}
    out = {}
    for name, fuse in fusion_grid().items():
        on_tune = ev.score_run(lab.fused_run(tune, fuse, doc_of), tune_qrels)[0]
        on_test = ev.score_run(lab.fused_run(test, fuse, doc_of), test_qrels)[0]
        out[name] = {"tune": on_tune["nDCG@10"], "test": on_test["nDCG@10"],
                     "test_recall": on_test["R@100"]}
    return out


def tuning_table(scores: dict[str, dict[str, dict[str, float]]],
                 splits: dict[str, str]) -> tuple[str, list[str]]:
    """Rows for the settings chosen on the tuning splits (jointly and per data set), and the
    untuned defaults for comparison."""
    datasets = list(scores)
    names = list(next(iter(scores.values())))
    joint = {n: sum(scores[d][n]["tune"] for d in datasets) / len(datasets) for n in names}
    chosen = {}
    for n in sorted(names, key=lambda n: -joint[n])[:3]:
        chosen.setdefault(n, "best on the tuning splits (mean)")
    for d in datasets:
        best = max(names, key=lambda n: scores[d][n]["tune"])
        chosen.setdefault(best, f"best on {ev.DATASET_NAMES.get(d, d)} {splits[d]}")
    for n, why in (("rrf k=60 w_vector=1", "= fusion=\"rrf\" (untuned)"),
                   ("weighted minmax w_vector=0.5", "= fusion=\"weighted\" (untuned)")):
        chosen.setdefault(n, why)
    header = ["setting", "chosen as"]
    header += [f"{ev.DATASET_NAMES.get(d, d)} {splits[d]}" for d in datasets] + ["mean"]
    header += [f"{ev.DATASET_NAMES.get(d, d)} test" for d in datasets]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for n, why in chosen.items():
        cells = [n, why] + [f"{scores[d][n]['tune']:.3f}" for d in datasets]
        cells += [f"{joint[n]:.3f}"] + [f"{scores[d][n]['test']:.3f}" for d in datasets]
        rows.append("| " + " | ".join(cells) + " |")
    return max(names, key=lambda n: joint[n]), rows


def noise(data, ctx, doc_of, limit, tuned: str | None) -> list[str]:
    """One poor ranking: corrupt one signal, fuse, compare with the stronger single one."""
    rows = []
    qrels = data.split("test")
    fuses = dict(fusions())
    if tuned is not None:
        fuses["tuned"] = fusion_grid()[tuned]
    cases = [("keyword", f"{rate:.0%} of letters",
              functools.partial(lab.derived_store, text=functools.partial(lab.corrupt, rate=rate)))
             for rate in KEYWORD_NOISE]
    cases += [("vector", f"noise norm {sigma:g}",
               functools.partial(lab.derived_store, vector_noise=sigma)) for sigma in VECTOR_NOISE]
    for damaged, how, make in cases:
        store = make(ctx.vectors)
        rankings = lab.collect_rankings(data, "test", ctx, store=store, limit=limit)
        test_qrels = {q: qrels[q] for q in rankings}
        single = {s: ev.score_run(lab.fused_run(rankings, None, doc_of, only=s), test_qrels)
                  for s in ("vector", "keyword")}
        stronger = max(single, key=lambda s: single[s][0]["nDCG@10"])
        cells = []
        for fuse in fuses.values():
            means, per_query = ev.score_run(lab.fused_run(rankings, fuse, doc_of), test_qrels)
            cells.append(f"{means['nDCG@10']:.3f}" + below(per_query, single[stronger][1]))
        rows.append(f"| {shown(data)} | {damaged}: {how} | {single['vector'][0]['nDCG@10']:.3f} | "
                    f"{single['keyword'][0]['nDCG@10']:.3f} | " + " | ".join(cells) + " |")
        store.close()
        log(rows[-1])
    return rows


def below(fused: dict[str, dict[str, float]], stronger: dict[str, dict[str, float]],
          resamples: int = 2000) -> str:
    """"" when the fused run is not below the stronger single ranking; else how far below,
    with a 95% paired bootstrap interval over the queries, and "(below)" only when the
    interval lies wholly under 0 (otherwise the gap is within query-sampling noise)."""
    import numpy as np

    queries = sorted(stronger)
    gaps = np.array([fused[q]["nDCG@10"] - stronger[q]["nDCG@10"] for q in queries])
    if gaps.mean() >= -1e-9:
        return ""
    rng = np.random.default_rng(0)
    means = gaps[rng.integers(0, len(gaps), (resamples, len(gaps)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    verdict = "below" if high < 0 else "within noise"
    return f" ({verdict}: {gaps.mean():+.3f}, 95% CI {low:+.3f} to {high:+.3f})"


# Targets: (system row, published line or number, allowed gap) per data set.
REFERENCE_RRF = "RRF k=60 of MiniLM + FTS5 BM25 (reference run)"
GOAL = {"scifact": 0.74, "nfcorpus": 0.36}


def targets(results: list[ev.EvalResult]) -> list[str]:
    """One line per target, met or missed, with the numbers.

    The reproduction targets are for whole documents, which is how the published figures
    embed and index BEIR; the default-chunk rows show what chunking changes.
    """
    by = {(r.dataset, r.system): r["nDCG@10"] for r in results}
    lines = []
    for d in dict.fromkeys(r.dataset for r in results):
        name = ev.DATASET_NAMES.get(d, d)
        published = {k: v.get(d) for k, v in ev.PUBLISHED.items()}
        for kind, anchor_name, what, gap in (
                ("vector", "all-MiniLM-L6-v2 (MTEB)", "MTEB all-MiniLM-L6-v2", 0.005),
                ("keyword", "BM25, SQLite FTS5 (QuackIR)", "QuackIR FTS5 BM25", 0.01)):
            anchor = published[anchor_name]
            whole, chunked = by.get((d, f"{kind} (whole doc)")), by.get(
                (d, f"{kind} (default chunks)"))
            if anchor is None or whole is None:
                continue
            verdict = "met" if abs(whole - anchor) <= gap + 1e-9 else "missed"
            line = (f"- {name} {kind} reproduces {what} {anchor:.3f} within {gap}: "
                    f"**{verdict}** (whole doc {whole:.3f}, {whole - anchor:+.3f})")
            if chunked is not None:
                line += (f"; with the default chunks {chunked:.3f} ({chunked - anchor:+.3f}: "
                         f"chunking {'helps' if chunked > whole else 'costs'} "
                         f"{abs(chunked - whole):.3f})")
            lines.append(line)
        floor, goal = published.get(REFERENCE_RRF), GOAL.get(d)
        for system in ("hybrid (default chunks)", "hybrid (whole doc)"):
            if (d, system) not in by or floor is None:
                continue
            value = by[(d, system)]
            lines.append(
                f"- {name} {system} at least the plain RRF reference {floor:.3f}: "
                f"**{'met' if value >= floor - 1e-9 else 'missed'}** ({value:.3f}, "
                f"{value - floor:+.3f}); goal {goal:.2f}: "
                f"**{'met' if value >= goal else 'not reached'}**")
    return lines


def render(results, tuning_rows, noise_rows, timings, seconds, load, limit, tuned) -> str:
    today = datetime.date.today().isoformat()
    names = list(fusions()) + (["tuned"] if tuned else [])
    cross = [("rerank (cross-encoder)", {r.dataset: "n/a" for r in results})]
    main_rows = [r for r in results if not r.system.startswith("fusion=")]
    check_rows = [r for r in results if r.system.startswith("fusion=")]
    limited = f" (first {limit} queries of each split only)" if limit else ""
    lines = [
        "## Retrieval quality on BEIR (`benchmarks/eval_beir.py`)",
        "",
        ("Reproduce: `.venv/bin/python benchmarks/eval_beir.py` (writes this section); one "
         "data set: `trails eval scifact --split test`. "
         f"Measured {today} on the BEIR test splits{limited}: Python "
         f"{platform.python_version()}, nproc {os.cpu_count()}, load average {load:.1f} at the "
         f"start; {seconds / 60:.1f} min in all with every embedding cached "
         f"({'; '.join(timings)})."),
        "",
        ("all-MiniLM-L6-v2 on the torch backend (as the published figures) through "
         "`ingest_all` and `retrieve(k=300)` chunk hits, max-pooled to documents (a document "
         "ranks by its best chunk; the first 100 documents are scored) with ir-measures "
         "(trec_eval `ndcg_cut.10`, `recall.100`). "
         "*default chunks*: ingestion's default chunker (sentences packed to 1000 characters "
         "within the model's 256 word pieces, one sentence of overlap); *whole doc*: one chunk "
         "per document, truncated by the model at 256 word pieces as MTEB embeds BEIR. "
         "keyword = `SqliteVecStore.keyword_search` (FTS5 BM25, Porter stemming); "
         "rrf = `fusion=\"rrf\"` (k=60, equal weights); "
         f"hybrid = `fusion=\"{hybrid_name()}\"`{describe_auto()}. The *published* column is "
         "the published nDCG@10 of the same kind of system."),
        "",
        ev.format_table(main_rows, extra_rows=cross),
        "",
        *timing_lines(main_rows),
        *default_fusion_note(),
        ("No cross-encoder model can be loaded here (none ships in a package and nothing is "
         "downloaded), so the rerank row has no figure; `trails eval --mode rerank "
         "--reranker DIR` scores one where a model exists."),
        "",
        "Targets:",
        "",
        *targets(main_rows),
        "",
        "### Every fusion, from the same rankings",
        "",
        ev.format_table(check_rows, published=False),
        "",
        "### Tuning (chosen on SciFact train / NFCorpus dev only)",
        "",
        ("nDCG@10 of fusion settings over the default-chunk rankings; a setting is chosen on "
         "the tuning splits, and its test figures are shown beside. Grid: RRF constant "
         "{5, 10, 20, 40, 60, 100} x vector weight {0.5 ... 3} (keyword 1); score fusion "
         "(min-max or z-score) x vector weight {0.2 ... 0.8} (keyword 1 - w)."),
        "",
        *tuning_rows,
        "",
    ]
    if noise_rows:
        lines += [
            "### One poor ranking (test split, default chunks)",
            "",
            ("One signal corrupted on purpose, the other untouched: *keyword*: letters of the "
             "indexed chunk text replaced at random (queries untouched); *vector*: Gaussian "
             "noise added to the stored chunk vectors. Nothing was tuned on these test splits "
             "(`fusion=auto`'s guard was fitted on tuning splits only, with the same damage: "
             "studies/guard_study.py fit, ADR 22). A fused result under the stronger single signal "
             "shows the gap and its 95% paired bootstrap interval over the queries: "
             "\"below\" when the whole interval is under 0, \"within noise\" otherwise. "
             + (f"*tuned* = {tuned}, chosen above." if tuned else "")),
            "",
            ("| data set | damaged | vector nDCG@10 | keyword nDCG@10 | "
             + " | ".join(f"fusion={n}" for n in names) + " |"),
            "|---|---|---|---|" + "---|" * len(names),
            *noise_rows,
        ]
    return "\n".join(lines).rstrip() + "\n"


def timing_lines(results) -> list[str]:
    """Mean time per query of each system's end-to-end run (retrieve(k=300) and pooling)."""
    parts = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        rows = [r for r in results if r.dataset == dataset and "default chunks" in r.system]
        cells = ", ".join(f"{r.system.split(' ')[0]} {1000 * r.seconds / max(r.queries, 1):.0f}"
                          for r in rows if r.seconds)
        if cells:
            parts.append(f"{ev.DATASET_NAMES.get(dataset, dataset)}: {cells}")
    if not parts:
        return []
    return [("Time per query, ms (default chunks, `retrieve(k=300)` plus pooling, on the "
             "shared 2-core machine): " + "; ".join(parts) + ". The fused systems run both "
             "rankings 300 deep."), ""]


if __name__ == "__main__":
    sys.exit(main())
