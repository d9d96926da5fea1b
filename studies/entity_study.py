"""The entity-aware ranking step (``EntityBoost``, ADR 0037) on the HotpotQA and MuSiQue
samples: recall@10 and nDCG@10 of the default hybrid with and without it (docs/benchmarks.md,
region ``entities``).

    python benchmarks/datasets/build_multihop.py     # once: the samples in BEIR layout
    python studies/entity_study.py [--no-write]

The linked contexts are the harness's (``benchmarks/_multihop.py``): each paragraph's title
is an entity, and ``ex:linksTo`` joins a paragraph's entity to each entity its chunks name.

The questions are split in file order: the first half tunes the step (hops and weight, best
mean nDCG@10), the second half reports it, with the guard study's paired bootstrap
(``_guard.bootstrap_gap``) on the per-question difference. The step reorders the hybrid's
top ``STEP_DEPTH`` hits, as ``retrieve(..., steps=[...])`` does.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import eval_beir as eb
from _docs import write_region
from _guard import bootstrap_gap
from _multihop import LINKER, LINKS_TO, linked_context

from trails import evaluation as ev
from trails.rank import EntityBoost
from trails.retrieval.retrieve import STEP_DEPTH, retrieve

SETS = ("hotpotqa", "musique")
HOPS = (0, 1, 2)
WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7)
def scores(ranked: list[str], relevant: dict[str, int]) -> tuple[float, float]:
    """(recall@10, nDCG@10) of document ids ``ranked`` (binary gains, trec_eval's)."""
    gold = {d for d, g in relevant.items() if g > 0}
    top = ranked[:10]
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(top) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(10, len(gold))))
    return len(gold & set(top)) / len(gold), (dcg / ideal if ideal else 0.0)


def study(name: str) -> dict[str, object]:
    data, ctx, doc_of = linked_context(name)
    qrels = data.split("train")
    questions = [q for q in data.queries if q in qrels]
    half = len(questions) // 2
    tune, held = questions[:half], questions[half:]
    base = {q: list(retrieve(data.queries[q], ctx, k=STEP_DEPTH)) for q in questions}

    def run(step: EntityBoost | None, which: list[str]) -> np.ndarray:
        out = []
        for q in which:
            hits = base[q] if step is None else list(step(data.queries[q], base[q], ctx))
            out.append(scores(ev.max_pool([(h.iri, h.score) for h in hits], doc_of, 10),
                              qrels[q]))
        return np.array(out)

    grid = {(h, w): run(EntityBoost(LINKER, neighbours=[LINKS_TO], hops=h, weight=w),
                        tune)[:, 1].mean() for h in HOPS for w in WEIGHTS}
    hops, weight = max(grid, key=lambda c: (grid[c], -c[0], -c[1]))
    chosen = EntityBoost(LINKER, neighbours=[LINKS_TO], hops=hops, weight=weight)
    without, with_step = run(None, held), run(chosen, held)
    eb.log(f"{name}: tuned hops={hops} weight={weight} (tuning nDCG {grid[hops, weight]:.3f} "
           f"vs {run(None, tune)[:, 1].mean():.3f} without)")
    ctx.close()
    return {"name": name, "tune": len(tune), "held": len(held), "hops": hops,
            "weight": weight, "without": without, "with": with_step}


def render(results: list[dict[str, object]]) -> str:
    lines = ["## Entity-aware ranking (ADR 0037)", "",
             ("`python studies/entity_study.py` (onnx-int8, the default chunker). The default "
             "hybrid's top 50 re-ranked by `EntityBoost` over `ex:linksTo` (a paragraph's "
             "entity to each title its chunks name); hops and weight tuned on the first half "
             "of each sample's questions, reported on the second half; gap = with - without, "
             "mean [paired bootstrap 95% CI] over the held-out questions."), "",
             ("| set | held-out questions | tuned hops, weight | recall@10 without | with | "
             "gap | nDCG@10 without | with | gap |"), "|---|---:|---|---:|---:|---|---:|---:|---|"]
    for r in results:
        without, with_step = r["without"], r["with"]
        assert isinstance(without, np.ndarray) and isinstance(with_step, np.ndarray)
        cells = []
        for column in (0, 1):
            mean, low, high = bootstrap_gap(with_step[:, column], without[:, column])
            cells += [f"{without[:, column].mean():.3f}", f"{with_step[:, column].mean():.3f}",
                      f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"]
        lines.append(f"| {r['name']} | {r['held']} | {r['hops']}, {r['weight']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    body = render([study(name) for name in SETS])
    print(body)
    if not args.no_write:
        write_region("entities", body, after="beir")
    return 0


if __name__ == "__main__":
    sys.exit(main())
