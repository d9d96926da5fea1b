"""Markdown tables of evaluation results, beside the published figures of the same systems."""

from __future__ import annotations

from collections.abc import Sequence

from trails.evaluation.run import EvalResult

__all__ = ["ANCHORS", "DATASET_NAMES", "PUBLISHED", "format_table"]

# Published nDCG@10 on the BEIR test splits, by data set. Sources: MTEB leaderboard
# (all-MiniLM-L6-v2, e5-small-v2, bge-small-en-v1.5), Pyserini's BEIR regressions (BM25 flat;
# TREC DL 2019: Anserini's dl19-passage regression; docs/datasets.md names each source),
# QuackIR (BM25 in SQLite FTS5). The RRF line was measured on this project's machine: plain
# RRF (k=60, untuned) of all-MiniLM-L6-v2 and FTS5 BM25 top-100 document lists.
PUBLISHED: dict[str, dict[str, float]] = {
    "all-MiniLM-L6-v2 (MTEB)": {"scifact": 0.645, "nfcorpus": 0.316, "arguana": 0.502,
                                "dbpedia-entity": 0.323, "msmarco": 0.637},
    "BM25 flat (Pyserini)": {"scifact": 0.679, "nfcorpus": 0.322, "arguana": 0.397,
                             "dbpedia-entity": 0.318, "msmarco": 0.506},
    "BM25, SQLite FTS5 (QuackIR)": {"scifact": 0.686, "nfcorpus": 0.322},
    "e5-small-v2 (MTEB)": {"scifact": 0.689, "nfcorpus": 0.325},
    "bge-small-en-v1.5 (MTEB)": {"scifact": 0.713, "nfcorpus": 0.343},
    "RRF k=60 of MiniLM + FTS5 BM25 (reference run)": {"scifact": 0.716, "nfcorpus": 0.353},
}
# The published line each system is compared with.
ANCHORS = {
    "vector": "all-MiniLM-L6-v2 (MTEB)",
    "keyword": "BM25, SQLite FTS5 (QuackIR)",
    "rrf": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
    "hybrid": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
    "rerank": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
}
DATASET_NAMES = {"scifact": "SciFact", "nfcorpus": "NFCorpus", "arguana": "ArguAna",
                 "dbpedia-entity": "DBpedia-Entity", "msmarco": "MS MARCO (TREC DL 2019)"}

# A row added as it is: (row name, {data set: cell}).
ExtraRow = tuple[str, dict[str, str]]


def format_table(results: Sequence[EvalResult], *, published: bool = True,
                 extra_rows: Sequence[ExtraRow] = ()) -> str:
    """A Markdown table: one row per system, for each data set nDCG@10, the published
    nDCG@10 of the same kind of system, and Recall@100; then the other published lines.

    ``extra_rows`` are ``(row name, {data set: cell})`` rows appended as they are (for
    systems that could not run, e.g. a reranker without a model).
    """
    datasets = list(dict.fromkeys(r.dataset for r in results))
    for _, cells in extra_rows:
        datasets += [d for d in cells if d not in datasets]
    lines = _header(datasets, published)
    lines += _result_rows(results, datasets, published)
    for name, cells in extra_rows:
        row = [name]
        for d in datasets:
            row += [cells.get(d, "")] + ([""] if published else []) + [""]
        lines.append(_line(row))
    if published:
        lines += _published_rows(datasets)
    return "\n".join(lines)


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header(datasets: Sequence[str], published: bool) -> list[str]:
    header = ["system"]
    for d in datasets:
        shown = DATASET_NAMES.get(d, d)
        header += [f"{shown} nDCG@10"] + (["published"] if published else []) + \
            [f"{shown} R@100"]
    return [_line(header), "|" + "---|" * len(header)]


def _result_rows(results: Sequence[EvalResult], datasets: Sequence[str],
                 published: bool) -> list[str]:
    by_key = {(r.dataset, r.system): r for r in results}
    lines = []
    for system in dict.fromkeys(r.system for r in results):
        row = [system]
        for d in datasets:
            result = by_key.get((d, system))
            row.append("" if result is None else f"{result['nDCG@10']:.3f}")
            if published:
                value = PUBLISHED.get(ANCHORS.get(_base_system(system), ""), {}).get(d)
                row.append("" if value is None else f"{value:.3f}")
            row.append("" if result is None else f"{result['R@100']:.3f}")
        lines.append(_line(row))
    return lines


def _published_rows(datasets: Sequence[str]) -> list[str]:
    lines = []
    for name, values in PUBLISHED.items():
        if not any(d in values for d in datasets):
            continue
        row = [f"*published: {name}*"]
        for d in datasets:
            row += ["", f"{values[d]:.3f}" if d in values else "", ""]
        lines.append(_line(row))
    return lines


def _base_system(name: str) -> str:
    return name.split(" ", 1)[0]
