"""How ``fusion="auto"``'s settings were chosen: a grid over AutoFusion's settings on the
tuning splits only (SciFact train, NFCorpus dev), each clean and with one ranking damaged
on purpose, and the rule that picks one (docs/benchmarks.md, ADR 0010).

    .venv/bin/python studies/tune_auto.py              # full run, writes the doc region
    .venv/bin/python studies/tune_auto.py --limit 20 --no-write   # a quick look

The damage is eval_beir.py's: letters of the keyword index's text replaced at random, or
Gaussian noise added to the stored vectors. A setting's *shortfall* on a split is how far its
worst damaged run falls below the stronger single ranking of that run. The rule: among the
settings whose shortfall is at most SHORTFALL_LIMIT on every tuning split, take the best mean
clean nDCG@10 over the tuning splits. Test figures are shown for the chosen setting and the
shipped default only; nothing here reads a test qrel to choose.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import itertools
import os
import pickle
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _lab as lab
import eval_beir as eb
from _docs import write_region

from trails import evaluation as ev
from trails.rank.fusion import AutoFusion, auto

CACHE = eb.CACHE / "tune_auto_rankings.pickle"
SHORTFALL_LIMIT = 0.005
SCORES = eb.CACHE / "tune_auto_scores.pickle"  # the last grid's scores, for --render-only
GRID = {
    "vector_ramp": [(0.25, 0.45), (0.3, 0.5)],
    "keyword_ramp": [(0.2, 0.8), (0.3, 0.8)],
    "sharpen": [0.0, 2.0, 4.0],
    "vector_weight": [0.55, 0.6, 0.65],
}
_RANKINGS: dict = {}  # filled before the worker pool forks


def variants() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [("clean", None)]
    out += [(f"keyword {rate:.0%}", functools.partial(
        lab.derived_store, text=functools.partial(lab.corrupt, rate=rate)))
        for rate in eb.KEYWORD_NOISE]
    out += [(f"vector {sigma:g}", functools.partial(lab.derived_store, vector_noise=sigma))
            for sigma in eb.VECTOR_NOISE]
    return out


def collect(names: list[str], limit: int | None) -> dict:
    """{(dataset, split, variant): rankings}, for the tuning and test splits."""
    model = eb.embedder()
    out: dict = {}
    for name in names:
        data = ev.load_beir(eb.dataset_dir(name))
        with eb.open_context(data, "default", model) as ctx:
            out[(name, "doc_of")] = ev.doc_ids_by_iri(data, ctx)
            for variant, make in variants():
                store = make(ctx.vectors) if make else ctx.vectors
                for split in (eb.tuning_split(data), "test"):
                    out[(name, split, variant)] = lab.collect_rankings(
                        data, split, ctx, store=store, limit=limit)
                if make:
                    store.close()
                eb.log(f"{name} {variant}: rankings collected")
        out[(name, "qrels")] = {s: data.split(s) for s in (eb.tuning_split(data), "test")}
    return out


def setting(vector_ramp, keyword_ramp, sharpen, vector_weight) -> AutoFusion:
    return AutoFusion(weights={"vector": vector_weight, "keyword": round(1 - vector_weight, 2)},
                      quality_ramps={"vector": vector_ramp, "keyword": keyword_ramp},
                      sharpen=sharpen)


def label(fusion: AutoFusion) -> str:
    ramps = fusion.quality_ramps
    return (f"vector {fusion.weights['vector']:g} ramp {ramps['vector']}, keyword ramp "
            f"{ramps['keyword']}, sharpen {fusion.sharpen:g}")


def ndcg(rankings: dict, fuse, doc_of, qrels, only: str | None = None) -> float:
    run = lab.fused_run(rankings, fuse, doc_of, only=only)
    return ev.score_run(run, {q: qrels[q] for q in rankings})[0]["nDCG@10"]


@functools.cache
def stronger_single(name: str, split: str, variant: str) -> float:
    rankings, doc_of = _RANKINGS[(name, split, variant)], _RANKINGS[(name, "doc_of")]
    qrels = _RANKINGS[(name, "qrels")][split]
    return max(ndcg(rankings, None, doc_of, qrels, only=s) for s in ("vector", "keyword"))


def judge(fusion: AutoFusion, names: list[str], split_of: dict[str, str]) -> dict:
    """Clean nDCG@10 and worst shortfall per data set on ``split_of[name]``."""
    out = {}
    for name in names:
        split, doc_of = split_of[name], _RANKINGS[(name, "doc_of")]
        qrels = _RANKINGS[(name, "qrels")][split]
        clean, worst, where = None, float("inf"), ""
        for variant, _ in variants():
            rankings = _RANKINGS[(name, split, variant)]
            value = ndcg(rankings, fusion, doc_of, qrels)
            if variant == "clean":
                clean = value
            stronger = stronger_single(name, split, variant)
            if value - stronger < worst:
                worst, where = value - stronger, variant
        out[name] = {"clean": clean, "shortfall": min(0.0, worst), "where": where}
    return out


def tuning_splits(names: list[str]) -> dict[str, str]:
    """Each data set's tuning split: the collected split that is not "test"."""
    return {n: next(s for s in _RANKINGS[(n, "qrels")] if s != "test") for n in names}


def _judge_tuning(values: tuple) -> dict:
    names = sorted({k[0] for k in _RANKINGS})
    return judge(setting(*values), names, tuning_splits(names))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["scifact", "nfcorpus"])
    parser.add_argument("--limit", type=int, help="only the first N queries per split")
    parser.add_argument("--recollect", action="store_true", help="ignore cached rankings")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument("--render-only", action="store_true",
                        help="reuse the last grid's scores; recompute only the test rows")
    args = parser.parse_args()
    started, load = time.perf_counter(), os.getloadavg()[0]
    key = (tuple(args.datasets), args.limit, eb.KEYWORD_NOISE, eb.VECTOR_NOISE)
    cached = pickle.loads(CACHE.read_bytes()) if CACHE.exists() and not args.recollect else None
    if cached is not None and cached[0] == key:
        _RANKINGS.update(cached[1])
    else:
        _RANKINGS.update(collect(args.datasets, args.limit))
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_bytes(pickle.dumps((key, dict(_RANKINGS))))
    values = list(itertools.product(*GRID.values()))
    grid = [setting(*v) for v in values]
    saved = pickle.loads(SCORES.read_bytes()) if args.render_only else None
    if saved is not None and saved[0] == (key, values):
        scores, seconds, load = saved[1:]  # the grid run's own time and load
    else:
        with Pool(min(2, os.cpu_count() or 1)) as pool:
            scores = pool.map(_judge_tuning, values)
        seconds = time.perf_counter() - started
        SCORES.write_bytes(pickle.dumps(((key, values), scores, seconds, load)))
    names = args.datasets
    admissible = [i for i, s in enumerate(scores)
                  if all(s[n]["shortfall"] >= -SHORTFALL_LIMIT for n in names)]
    mean = [sum(s[n]["clean"] for n in names) / len(names) for s in scores]
    chosen = max(admissible or range(len(grid)), key=lambda i: mean[i])
    met = bool(admissible)
    tests = {"chosen": judge(grid[chosen], names, dict.fromkeys(names, "test")),
             "shipped": judge(auto, names, dict.fromkeys(names, "test"))}
    body = render(grid, scores, mean, chosen, met, tests, names, seconds, load, args.limit)
    print(body)
    if not args.no_write:
        write_region("auto", body)
    return 0


def render(grid, scores, mean, chosen, met, tests, names, seconds, load, limit) -> str:
    shown = {n: ev.DATASET_NAMES.get(n, n) for n in names}
    splits = tuning_splits(names)
    same = label(grid[chosen]) == label(auto)
    lines = [
        "## How `fusion=\"auto\"` was tuned (`studies/tune_auto.py`)",
        "",
        (f"Measured {datetime.date.today().isoformat()}"
         + (f" on the first {limit} queries of each split" if limit else "")
         + f"; {seconds / 60:.1f} min (rankings read from benchmarks/.cache once collected), "
         f"load average {load:.1f} at the start. Rankings: the "
         "default chunks of eval_beir.py, 300 chunks per ranking. Each setting is scored on "
         "the tuning splits only, clean and with each damage of the *one poor ranking* table; "
         "*shortfall* is its worst damaged run's nDCG@10 minus the stronger single ranking of "
         f"that run (0 when never below). Rule: shortfall within {SHORTFALL_LIMIT} on every "
         "tuning split, then the best mean clean nDCG@10."),
        "",
        "| setting | " + " | ".join(f"{shown[n]} {splits[n]} clean | shortfall"
                                     for n in names) + " | mean clean |",
        "|---|" + "---|---|" * len(names) + "---|",
    ]
    for i in sorted(range(len(grid)), key=lambda i: -mean[i]):
        cells = []
        for n in names:
            s = scores[i][n]
            cells += [f"{s['clean']:.3f}", f"{s['shortfall']:+.3f}"
                      + (f" ({s['where']})" if s["shortfall"] < 0 else "")]
        mark = (" **chosen**" if met else " **chosen: no setting met the rule, best clean**"
                ) if i == chosen else ""
        lines.append(f"| {label(grid[i])}{mark} | " + " | ".join(cells) + f" | {mean[i]:.4f} |")
    lines += ["", ("The shipped `trails.rank.fusion.auto` "
                   + ("is the chosen setting." if same else
                      f"is NOT the chosen setting (it is {label(auto)}).")),
              "", "Test splits (reported, never used to choose):", "",
              "| | " + " | ".join(f"{shown[n]} test clean | shortfall" for n in names) + " |",
              "|---|" + "---|---|" * len(names)]
    for which, result in tests.items():
        cells = []
        for n in names:
            cells += [f"{result[n]['clean']:.3f}", f"{result[n]['shortfall']:+.3f}"
                      + (f" ({result[n]['where']})" if result[n]["shortfall"] < 0 else "")]
        lines.append(f"| {which} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
