"""The guard study's tables (studies/guard_study.py report), from cached rankings only.

A *cell* is one data set, split and variant (clean, or one ranking damaged): its queries'
nDCG@10 under every fixed strategy, their evidence and their nDCG@10 at every keyword share
of ``_guard_fit.GRID``. Derived cells are cached next to the rankings they come from.
"""

from __future__ import annotations

import datetime
import os
import pickle
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import _guard as g
import _guard_collect as gc
import _guard_features as gf
import _guard_fit as fit
import numpy as np
import tune_auto

from trails.rank.fusion import AutoFusion, auto

RAMPS = AutoFusion()  # fusion="auto" before adr/0022: the quality-ramp guard of adr/0010

DOC = Path(__file__).resolve().parent.parent / "docs" / "fusion-study.md"
VARIANTS = [name for name, _ in tune_auto.variants()]
FIXED = ("keyword", "vector", "rrf", "weighted", "auto (ramps)", "auto soft ramps", "auto")
NAMES = list(gf.FEATURES)
SHIPPED = ["vector_quality", "keyword_quality", "agreement20"]
AGREEMENT = ["doc_overlap10", "vector_top_in_keyword10", "keyword_top_in_vector10"]
SHAPE = ["vector_drop10", "keyword_drop10", "vector_margin", "keyword_margin", "keyword_listed"]
QUERY = ["log_words", "log_terms", "mean_idf", "max_idf", "min_idf", "rare_share"]
# The evidence the shipped guard reads (trails.rank.guard.EVIDENCE): free, from the two
# rankings and the one store call the keyword quality already makes.
GUARD = SHIPPED + ["log_terms", "idf_per_term", "vector_drop10", "keyword_drop10"]
EVIDENCE_SETS = {
    "shipped evidence": SHIPPED,
    "+ length-aware keyword quality": SHIPPED + ["keyword_quality_top5", "log_terms"],
    "+ agreement": SHIPPED + AGREEMENT,
    "+ score shape": SHIPPED + SHAPE,
    "+ query terms": SHIPPED + QUERY,
    "all": SHIPPED + AGREEMENT + SHAPE + QUERY,
    # Fitted to tune_auto.py's rule (clean nDCG, penalised damaged shortfall) instead of
    # the mean nDCG of every cell.
    "rule, + query terms": SHIPPED + QUERY,
    "rule, all": SHIPPED + AGREEMENT + SHAPE + QUERY,
    "ADR 22's evidence (query terms, score drops)": GUARD,
    # The same without the IDF per term: under keyword damage a query's terms grow rarer in
    # the index, so a fit over damaged cells reads a high IDF as "keyword broken", which a
    # clean query of rare names is not.
    "ADR 22's evidence without IDF per term": [n for n in GUARD if n != "idf_per_term"],
    # Each ranking's top as the other ranking scores it: keyword's best chunks far from the
    # query's meaning are word matches without the sense (entity questions, finding 11).
    "ADR 22's evidence + endorsement": GUARD + ["keyword_endorsed", "vector_endorsed"],
}
DERIVED_VERSION = 6
ALL_TUNING = " [all tuning]"  # suffix of a candidate fitted on every tuning cell


@dataclass
class Cell:
    name: str
    split: str
    variant: str
    queries: list[str]
    scores: dict[str, np.ndarray]  # strategy -> per-query nDCG@10
    features: np.ndarray
    curve: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # candidates, filled later

    def stronger(self) -> str:
        return max(("vector", "keyword"), key=lambda s: self.scores[s].mean())

    def score(self, strategy: str) -> np.ndarray:
        if strategy in self.scores:
            return self.scores[strategy]
        # A candidate with no fit for this cell (no other set had tuning splits): no score.
        return self.extra.get(strategy, np.full(len(self.queries), np.nan))


def cells(name: str, self_hit_sets: set[str]) -> list[Cell]:
    """Every cell of one data set, derived once from its cached rankings."""
    source = gc.cache_path(name)
    derived = gc.STUDY_CACHE / f"_derived-{name}.pickle"
    stamp = (DERIVED_VERSION, os.path.getmtime(source))
    if derived.exists():
        saved = pickle.loads(derived.read_bytes())
        if saved[0] == stamp:
            return list(saved[1])
    data = gc.load(name)
    out = []
    for (split, variant), rankings in data["rankings"].items():
        qrels = data["qrels"][split]
        self_hits = gc.split_name(name)[0] in self_hit_sets
        prepared = [g.prepare(q, r, qrels[q], data["doc_of"], self_hits)
                    for q, r in rankings.items()]
        scores = {
            "keyword": np.array([g.single(p, "keyword") for p in prepared]),
            "vector": np.array([g.single(p, "vector") for p in prepared]),
            "rrf": np.array([g.fused(p, 1.0, 1.0, "rrf") for p in prepared]),
            "weighted": np.array([g.fused(p, 0.5, 0.5, "minmax") for p in prepared]),
            "auto (ramps)": np.array([g.fused(p, *g.auto_weights(p, RAMPS)) for p in prepared]),
            "auto": np.array([g.fused(p, *g.auto_weights(p, auto)) for p in prepared]),
            "auto soft ramps": np.array([g.fused(p, *g.auto_weights(p, g.soft_auto))
                                         for p in prepared]),
        }
        features = np.array([[gf.features(p)[n] for n in NAMES] for p in prepared])
        curve = np.array([g.keyword_weight_grid(p, fit.GRID) for p in prepared])
        out.append(Cell(name, split, variant, [p.query_id for p in prepared], scores,
                        features, curve))
    derived.write_bytes(pickle.dumps((stamp, out)))
    return out


def pool(chosen: list[Cell]) -> fit.Pool:
    groups = np.concatenate([np.full(len(c.queries), i) for i, c in enumerate(chosen)])
    return fit.Pool(np.vstack([c.features for c in chosen]),
                    np.vstack([c.curve for c in chosen]), groups.astype(int),
                    np.array([c.variant == "clean" for c in chosen]))


def gap_cell(cell: Cell, strategy: str) -> str:
    """The strategy's mean gap to the stronger single ranking, its 95% interval, and a mark
    when the whole interval lies below 0 (significantly below)."""
    mean, low, high = g.bootstrap_gap(cell.score(strategy), cell.scores[cell.stronger()])
    if np.isnan(mean):
        return "—"
    mark = " **below**" if high < 0 else ""
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]{mark}"


def significantly_below(cell: Cell, strategy: str) -> bool:
    return g.bootstrap_gap(cell.score(strategy), cell.scores[cell.stronger()])[2] < 0


def auc(values: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a positive row's value exceeds a negative row's (ties count half)."""
    pos, neg = values[positive], values[~positive]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.concatenate([pos, neg])
    sorted_values = np.sort(order)
    low = np.searchsorted(sorted_values, order, side="left")
    high = np.searchsorted(sorted_values, order, side="right")
    ranks = (low + high - 1) / 2.0 + 1  # tied values share their mean rank
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def evidence_table(tuning: list[Cell]) -> list[str]:
    """Per feature: AUC for "keyword ranks better than vector on this query" (ties dropped),
    on each clean tuning split and pooled over every tuning cell (clean and damaged)."""
    clean = [c for c in tuning if c.variant == "clean"]
    lines = ["| evidence | " + " | ".join(f"{c.name} {c.split} clean" for c in clean)
             + " | all tuning cells, damaged too |", "|---|" + "---|" * (len(clean) + 1)]
    for i, name in enumerate(NAMES):
        row = []
        for chosen in [[c] for c in clean] + [tuning]:
            values = np.concatenate([c.features[:, i] for c in chosen])
            diff = np.concatenate([c.scores["keyword"] - c.scores["vector"] for c in chosen])
            kept = np.abs(diff) > 1e-9
            row.append(f"{auc(values[kept], diff[kept] > 0):.2f}")
        lines.append(f"| {name}: {gf.FEATURES[name]} | " + " | ".join(row) + " |")
    counts = []
    for c in clean:
        diff = c.scores["keyword"] - c.scores["vector"]
        counts.append(f"{c.name} {c.split}: keyword better on {(diff > 1e-9).sum()}, vector on "
                      f"{(diff < -1e-9).sum()}, tied {(np.abs(diff) <= 1e-9).sum()}")
    return lines + ["", "Queries per label (clean): " + "; ".join(counts) + "."]


def evidence_medians(cells_: list[Cell]) -> list[str]:
    """What the ramp guard (adr/0010) saw per cell: median qualities, the mean confidences its
    ramps give them, mean agreement and median query length (the mechanism behind each
    failure)."""
    ramps = RAMPS.quality_ramps
    lines = [("| set | split | variant | vector quality | keyword quality | vector confidence | "
             "keyword confidence | both confidences 0 | agreement20 | words |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells_:
        column = {n: c.features[:, i] for i, n in enumerate(NAMES)}
        confidence = {}
        for name, quality in (("vector", column["vector_quality"]),
                              ("keyword", column["keyword_quality"])):
            low, high = ramps[name]
            confidence[name] = np.clip((quality - low) / (high - low), 0.0, 1.0)
        both_zero = ((confidence["vector"] == 0) & (confidence["keyword"] == 0)).mean()
        lines.append(
            f"| {c.name} | {c.split} | {c.variant} | {np.median(column['vector_quality']):.2f} "
            f"| {np.median(column['keyword_quality']):.2f} | {confidence['vector'].mean():.2f} "
            f"| {confidence['keyword'].mean():.2f} | {both_zero:.0%} "
            f"| {column['agreement20'].mean():.2f} | {np.expm1(np.median(column['log_words'])):.0f} |")
    return lines


def paired(cells_: list[Cell], better: str, than: str) -> list[str]:
    """``better - than`` per cell with its paired bootstrap interval, and the counts of
    cells where the whole interval is above / below 0."""
    rows, up, down = [], 0, 0
    for c in cells_:
        mean, low, high = g.bootstrap_gap(c.score(better), c.score(than))
        up, down = up + (low > 0), down + (high < 0)
        rows.append(f"{c.name} {c.split} {c.variant} {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    return [(f"`{better}` against `{than}`: significantly better in {up} of {len(cells_)} cells, "
            f"significantly worse in {down}."), "", "; ".join(rows) + "."]


# Rows of the published-figures table (trails.evaluation.PUBLISHED) and how the data here
# differs from the published corpus.
PUBLISHED_ROWS = ("BM25 flat (Pyserini)", "all-MiniLM-L6-v2 (MTEB)")
SET_NOTES = {
    "arguana-tv": ("arguana", "test and validation arguments (5,384); BEIR's holds 8,674"),
    "dbpedia-entity": ("dbpedia-entity", "5,000-document sample, mostly judged documents"),
    "msmarco": ("msmarco", "5,000-passage sample, mostly judged passages"),
    "nfcorpus": ("nfcorpus", "full"),
    "scifact": ("scifact", "full"),
}


def quality_table(names: list[str], self_hit_sets: set[str]) -> str:
    """docs/benchmarks.md's table of every set with a test split: the rankings, both guards
    and the published figures, clean test splits, each backend collected."""
    from trails.evaluation import DATASET_NAMES, PUBLISHED

    rows = []
    tests = [c for n in names for c in cells(n, self_hit_sets) if c.split == "test"]
    below = {s: sum(significantly_below(c, s) for c in tests) for s in ("auto", "auto (ramps)")}
    for name in names:
        cell = next((c for c in tests if c.name == name and c.variant == "clean"), None)
        if cell is None:  # a tuning-only set
            continue
        data_set, backend = gc.split_name(name)
        stronger = cell.stronger()
        mean, low, high = g.bootstrap_gap(cell.scores["auto"], cell.scores[stronger])
        published_name, note = SET_NOTES.get(data_set, (data_set, ""))
        published = [PUBLISHED[row].get(published_name) for row in PUBLISHED_ROWS]
        rows.append(
            f"| {DATASET_NAMES.get(published_name, data_set)} | {backend} | {len(cell.queries)} | "
            + " | ".join(f"{cell.scores[s].mean():.3f}"
                         for s in ("keyword", "vector", "rrf", "auto (ramps)"))
            + f" | **{cell.scores['auto'].mean():.3f}** | {mean:+.3f} [{low:+.3f}, {high:+.3f}]"
            f" vs {stronger} | "
            + " | ".join("—" if v is None else f"{v:.3f}" for v in published) + f" | {note} |")
    return "\n".join([
        "## Ranking quality on every set (`studies/guard_study.py`)", "",
        (f"Reproduce: `.venv/bin/python studies/guard_study.py report --write` ({today()}; "
         "the rankings come from `guard_study.py collect <set>`, docs/fusion-study.md). "
         "nDCG@10 on each set's clean test split, all-MiniLM-L6-v2 and FTS5 BM25 (Porter) over "
         "the default chunks, 300 deep, max-pooled to documents; ArguAna with BEIR's rule that "
         "a query's own document is no hit. *backend* is the model's: onnx-int8 is what a "
         "default context runs on a CPU, torch what the published MiniLM figures ran on. "
         "*auto* is `fusion=\"auto\"` (ADR 22), *auto (ADR 10)* the ramp guard it replaced; the "
         "gap is auto against the stronger single ranking with its paired bootstrap 95% "
         "interval. Published: the same kind of system on the full BEIR corpus "
         "(docs/datasets.md names the sources); on the samples compare systems with each "
         "other, not with those."), "",
        ("| set | backend | test queries | keyword | vector | rrf | auto (ADR 10) | auto | "
         "auto - stronger | published BM25 | published MiniLM | corpus here |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
        *rows, "",
        (f"Clean and with either ranking damaged on purpose (tune_auto.py's six damages), auto "
         f"is significantly below the stronger ranking in {below['auto']} of {len(tests)} test "
         f"cells (ADR 10's guard: {below['auto (ramps)']}); docs/fusion-study.md has every "
         "cell, what else was tried and what did not work.")])


def today() -> str:
    return datetime.date.today().isoformat()


def cross_validate(tests: list[Cell], tuning: list[Cell]) -> dict[str, dict[str, fit.Guard]]:
    """For every left-out set (on all its backends), each candidate fitted on the *other*
    sets' tuning cells (clean and damaged); its per-query nDCG@10 goes into each of the
    left-out set's test cells (``Cell.extra``). The same candidates fitted on every tuning
    cell ("all tuning", the tuned view: a set's own train/dev split is in the fit) go in
    under ``ALL_TUNING``.
    Returns the fits, by candidate and left-out set ("" for all tuning)."""
    fits: dict[str, dict[str, fit.Guard]] = {label: {} for label in EVIDENCE_SETS}
    memo: dict[tuple[str, ...], tuple[dict[str, fit.Guard], float]] = {}

    def fitted(train: list[Cell]) -> tuple[dict[str, fit.Guard], float]:
        key = tuple(sorted({c.name for c in train}))
        if key not in memo:
            chosen = pool(train)
            memo[key] = ({label: fit.fit(chosen, NAMES, [NAMES.index(n) for n in columns],
                                         rule=label.startswith("rule"))
                          for label, columns in EVIDENCE_SETS.items()}, fit.fixed_share(chosen))
        return memo[key]

    def score(cell: Cell, guards: dict[str, fit.Guard], share: float, suffix: str) -> None:
        cell.extra["fixed share" + suffix] = fit.interpolate(
            cell.curve, np.full(len(cell.queries), share))
        for label, guard in guards.items():
            columns = [NAMES.index(n) for n in guard.names]
            cell.extra[f"learned: {label}{suffix}"] = fit.interpolate(
                cell.curve, guard.share(cell.features[:, columns]))

    shares: dict[str, float] = {}
    for left_out in sorted({c.name for c in tests}):
        # Leaving a set out leaves out its collections on every backend: the same queries.
        data_set = gc.split_name(left_out)[0]
        train = [c for c in tuning if gc.split_name(c.name)[0] != data_set]
        if not train:
            continue
        guards, shares[left_out] = fitted(train)
        for cell in (c for c in tests if c.name == left_out):
            score(cell, guards, shares[left_out], "")
        for label, guard in guards.items():
            fits[label][left_out] = guard
    if tuning:
        guards, shares[""] = fitted(tuning)
        for cell in tests:
            score(cell, guards, shares[""], ALL_TUNING)
        for label, guard in guards.items():
            fits[label][""] = guard
    fits["_share"] = shares  # type: ignore[assignment]
    return fits


def guard_module(names: list[str], self_hit_sets: set[str]) -> str:
    """The source of python/trails/rank/_guard_fit.py: :data:`GUARD` fitted on every tuning
    cell of ``names`` (clean and damaged), in the order of trails.rank.fusion.EVIDENCE."""
    from trails.rank.fusion import EVIDENCE

    tuning = [c for n in names for c in cells(n, self_hit_sets) if c.split != "test"]
    guard = fit.fit(pool(tuning), NAMES, [NAMES.index(n) for n in GUARD])
    assert len(GUARD) == len(EVIDENCE)  # the same evidence, named for each side
    splits = ", ".join(sorted({f"{c.name} {c.split}" for c in tuning}))

    def numbers(values: Sequence[float]) -> str:
        return "(" + ", ".join(repr(round(float(v), 6)) for v in values) + ")"

    about = textwrap.fill(
        f"Written by ``studies/guard_study.py fit --write`` ({today()}) from tuning splits "
        f"only ({splits}; each clean and with either ranking damaged on purpose); see "
        "docs/fusion-study.md and adr/0022. Do not edit by hand: refit.", 92)
    return (f'''"""The fitted numbers of ``fusion="auto"``'s guard
(:class:`trails.rank.fusion.GuardedFusion`), in the order of
:data:`trails.rank.fusion.EVIDENCE`.

{about}
"""

# {", ".join(GUARD)}
CENTER = {numbers(guard.mean)}
SCALE = {numbers(guard.scale)}
COEFFICIENTS = {numbers(guard.theta[:-1])}
BIAS = {round(float(guard.theta[-1]), 6)!r}
''')


def report(names: list[str], self_hit_sets: set[str]) -> str:
    every = [c for n in names for c in cells(n, self_hit_sets)]
    tuning = [c for c in every if c.split != "test"]
    tests = [c for c in every if c.split == "test"]
    fits = cross_validate(tests, tuning)
    shares = fits.pop("_share")
    candidates = ["fixed share"] + [f"learned: {label}" for label in EVIDENCE_SETS]
    strategies = list(FIXED) + candidates
    by = {(c.name, c.variant): c for c in tests}
    sets = sorted({c.name for c in tests})
    lines = [f"Measured {today()} by `studies/guard_study.py report` over the cached "
             f"rankings of: {', '.join(names)}. Tuning cells: "
             + ", ".join(sorted({f'{c.name} {c.split} ({len(c.queries)} queries)'
                                 for c in tuning})) + ".", "",
             "### Test splits, clean: nDCG@10 (candidates fitted with the set left out)", "",
             "| set | queries | " + " | ".join(strategies) + " | oracle share |",
             "|---|---|" + "---|" * (len(strategies) + 1)]
    for name in sets:
        cell = by[(name, "clean")]
        oracle = cell.curve.max(axis=1).mean()
        lines.append(f"| {name} | {len(cell.queries)} | " + " | ".join(
            f"{cell.score(s).mean():.3f}" for s in strategies) + f" | {oracle:.3f} |")
    tuned = [c + ALL_TUNING for c in candidates]
    lines += ["", ("### Test splits, clean: nDCG@10 of the candidates fitted on every tuning "
                   "split (SciFact, NFCorpus and ArguAna tuned on their own train/dev)"), "",
              "| set | " + " | ".join(tuned) + " |", "|---|" + "---|" * len(tuned)]
    for name in sets:
        cell = by[(name, "clean")]
        lines.append(f"| {name} | " + " | ".join(f"{cell.score(s).mean():.3f}" for s in tuned)
                     + " |")
    lines += ["", ("### Gap to the stronger single ranking, every test cell "
              "(mean [paired bootstrap 95% CI]; **below**: the whole interval under 0)"), "",
              "| set | variant | stronger | " + " | ".join(
                  ["rrf", "auto (ramps)", "auto soft ramps", "auto"] + candidates) + " |",
              "|---|---|---|" + "---|" * (len(candidates) + 4)]
    for name in sets:
        for variant in VARIANTS:
            cell = by.get((name, variant))
            if cell is None:
                continue
            stronger = cell.stronger()
            lines.append(f"| {name} | {variant} | {stronger} {cell.scores[stronger].mean():.3f} | "
                         + " | ".join(gap_cell(cell, s) for s in ["rrf", "auto (ramps)",
                                                                  "auto soft ramps", "auto"]
                                      + candidates)
                         + " |")
    lines += ["", "### Summary over the test cells", "",
              "| strategy | mean clean nDCG@10 over sets | mean clean gap to stronger | "
              "cells significantly below (of " + str(len(tests)) + ") | worst cell gap |",
              "|---|---|---|---|---|"]
    for s in (list(FIXED) + candidates
              + [c + ALL_TUNING for c in candidates]):
        clean = [by[(n, "clean")] for n in sets]
        mean = np.nanmean([c.score(s).mean() for c in clean])
        gap = np.nanmean([c.score(s).mean() - c.scores[c.stronger()].mean() for c in clean])
        below = sum(significantly_below(c, s) for c in tests)
        worst = min(tests, key=lambda c: c.score(s).mean() - c.scores[c.stronger()].mean())
        lines.append(f"| {s} | {mean:.4f} | {gap:+.4f} | {below} | "
                     f"{worst.score(s).mean() - worst.scores[worst.stronger()].mean():+.3f} "
                     f"({worst.name} {worst.variant}) |")
    lines += ["", "### What the ramp guard saw (test cells; ramps of `auto (ramps)`)", "",
              *evidence_medians(tests), ""]
    for better, than in (("auto", "auto (ramps)"), ("auto soft ramps", "auto (ramps)")):
        lines += [f"### `{better}` against `{than}`, paired", "",
                  "Test cells: " + paired(tests, better, than)[0], "",
                  "Tuning cells: " + paired(tuning, better, than)[0], "",
                  "Per cell (test, then tuning): " + paired(tests, better, than)[2]
                  + " " + paired(tuning, better, than)[2], ""]
    lines += ["", ("### Evidence: which separates queries where keyword ranks better than "
              "vector (AUC; 0.5 = no separation, <0.5 = separates the other way)"), "",
              *evidence_table(tuning), "",
              "### Fitted guards (all-but-one tuning sets; standardised coefficients)", "",
              "| candidate | left out | fixed share | coefficients (bias last) |",
              "|---|---|---|---|"]
    for label, per_set in fits.items():
        for left_out, guard in per_set.items():
            coefficients = ", ".join(f"{n} {t:+.2f}" for n, t in zip(guard.names, guard.theta))
            lines.append(f"| {label} | {left_out or 'none (all tuning)'} | "
                         f"{shares[left_out]:.2f} | "  # type: ignore[index]
                         f"{coefficients}, bias {guard.theta[-1]:+.2f} |")
    return "\n".join(lines) + "\n"
