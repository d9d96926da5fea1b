"""``trails eval``: score retrieval on a BEIR data set."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from trails.cli._common import (
    DEFAULT_MODEL,
    context,
    has_context,
    make_embedder,
)
from trails.cli.output import print_json, visible
from trails.errors import ConfigurationError
from trails.evaluation import (
    chunker_for,
    evaluate,
    find_dataset,
    format_table,
    ingest_dataset,
    load_beir,
)
from trails.rank.rerank import CrossEncoderReranker

__all__ = ["Chunking", "EvalMode", "eval_"]

_EVAL_SYSTEMS = ("keyword", "vector", "rrf", "hybrid", "rerank")
EvalMode = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "EvalMode", {m: m for m in _EVAL_SYSTEMS}, type=str)
Chunking = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "Chunking", {c: c for c in ("default", "whole")}, type=str)


def eval_(
    ctx: typer.Context,
    dataset: str = typer.Argument(
        ..., metavar="DATASET",
        help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), or a name such as "
             "scifact looked up in the folders of $TRAILS_BEIR_DIR."),
    split: str = typer.Option("test", "--split", metavar="SPLIT",
                              help="The qrels file to score (qrels/SPLIT.tsv)."),
    modes: list[EvalMode] = typer.Option(
        [], "--mode", help="System to score (repeatable; default keyword, vector, rrf, "
        "hybrid): keyword = BM25 only, vector = cosine only, rrf = plain RRF k=60, hybrid = "
        "retrieve(fusion='auto'), rerank = hybrid + --reranker."),
    model: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--model", envvar="TRAILS_MODEL", metavar="MODEL",
        help=f"Embedder of a new context: {DEFAULT_MODEL} (default), a model directory, or "
             "mock / mock:DIM."),
    chunking: Chunking = typer.Option(
        Chunking["default"], "--chunking",
        help="default: ingestion's default chunker; whole: one chunk per document, "
             "truncated by the model (as MTEB embeds BEIR)."),
    reranker: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--reranker", metavar="DIR", help="A cross-encoder model directory (or package "
        "name) for --mode rerank."),
    limit: Optional[int] = typer.Option(  # noqa: UP045
        None, "--limit", min=1, metavar="N", help="Score only the first N queries (a quick look)."),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON only."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Score retrieval on a BEIR data set: nDCG@10 and Recall@100 per system.

    The corpus is ingested (each record one document: title, a blank line, text) into the
    context named by --db, or else into .trails/eval/NAME-MODEL-CHUNKING; documents already
    there unchanged are skipped, so a second run only retrieves. Each query's chunk hits are
    pooled to documents (a document ranks by its best chunk) and scored with ir-measures
    (trec_eval). Prints a Markdown table with the published figures for the same kind of
    system (benchmarks/eval_beir.py writes the full comparison to docs/benchmarks.md).

    Example:

    ```
    trails eval scifact --split test
    trails eval data/beir/nfcorpus --mode vector --mode hybrid --limit 50
    ```
    """
    data = load_beir(find_dataset(dataset))
    unfindable = data.unfindable(split)  # an unknown split fails before any ingestion
    if unfindable:  # scored as BEIR scores them, but never silently
        typer.echo(f"note: {len(unfindable)} document(s) qrels/{split}.tsv judges relevant "
                   f"are not in corpus.jsonl (e.g. {unfindable[0]!r}): no system can find "
                   "them, so recall cannot reach 1", err=True)
    systems = [m.value for m in modes] or ["keyword", "vector", "rrf", "hybrid"]
    ranker = None
    if "rerank" in systems:
        if reranker is None:
            raise ConfigurationError("--mode rerank needs --reranker DIR (a cross-encoder model)")
        ranker = CrossEncoderReranker(str(reranker))
    db: Path | None = ctx.find_root().obj
    if db is None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", (model or DEFAULT_MODEL).split("/")[-1])
        db = Path(".trails") / "eval" / f"{data.name}-{slug}-{chunking.value}"
    embedder = None if model is None and has_context(db) else make_embedder(
        model or DEFAULT_MODEL)
    console = Console(stderr=True)
    show = not quiet and not as_json and console.is_terminal
    with context(db, embedder=embedder) as opened:
        if show:
            # A name or path is text, not rich markup: "[bold]" in it is shown as it is.
            console.print(visible(f"ingesting {data.name} ({len(data.corpus)} documents) into "
                                  f"{db}"), markup=False, highlight=False)
        stats = ingest_dataset(data, opened, chunker=chunker_for(chunking.value))
        if show:
            console.print(visible(stats.summary()), highlight=False, markup=False)
            for problem in stats.problems():
                console.print(visible(problem), highlight=False, markup=False)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      console=console, disable=not show) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(system: str, done: int, total: int) -> None:
                if system not in tasks:
                    tasks[system] = bar.add_task(system, total=total)
                bar.update(tasks[system], completed=done)

            results = evaluate(data, split, opened, systems=systems, reranker=ranker,
                               limit=limit, progress=progress)
    if as_json:
        print_json([{"dataset": r.dataset, "split": r.split, "system": r.system,
                     **r.scores, "queries": r.queries, "seconds": round(r.seconds, 3)}
                    for r in results])
        return
    typer.echo(visible(f"{data.name}, split {split}, {results[0].queries} queries, "
                       f"context {db}"))
    typer.echo(visible(format_table(results)))
