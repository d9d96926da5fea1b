"""The ``trails`` command: create a context, ingest files, query, inspect and check it.

Each command is a few lines over the public API. Errors become one line on stderr at the
edge (:meth:`_Group.main`), never a traceback. Exit codes:

- ``0``: success.
- ``1``: a user error (bad option or argument, malformed SPARQL, missing context, the
  context is locked by another writer...). Click's usage errors exit 1 here too, not 2.
- ``2``: partial failure (``ingest`` with failed documents, ``verify`` finding problems).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from trails.errors import ConfigurationError, TrailsError
from trails.retrieval.retrieve import FUSIONS, MODES

if TYPE_CHECKING:
    from trails.context import Context
    from trails.ingest import IngestionStats
    from trails.vector.embedders.base import Embedder

__all__ = ["app", "main", "make_embedder", "parse_binding"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
EXIT_USER_ERROR = 1
EXIT_PARTIAL = 2

Mode = enum.Enum("Mode", {m: m for m in MODES}, type=str)  # the library's list: cannot drift
Fusion = enum.Enum("Fusion", {f: f for f in (*FUSIONS, "none")}, type=str)


def _click_class(name: str) -> type[Exception]:
    """One of the click exceptions typer raises (typer >= 0.20 vendors click, older uses it)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


_UsageError: Any = _click_class("UsageError")
_ClickException: Any = _click_class("ClickException")


class _Group(TyperGroup):
    """Turns every expected error into one line on stderr and the documented exit code."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "trails"
            code = _fail(f"{exc.format_message()} (see '{where} --help')")
        except _ClickException as exc:
            code = _fail(exc.format_message(), exc.exit_code)
        except typer.Abort:
            code = _fail("aborted")
        except (TrailsError, ValueError, SyntaxError, OSError) as exc:
            code = _fail(str(exc) or type(exc).__name__)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


def _fail(message: str, code: int = EXIT_USER_ERROR) -> int:
    typer.echo("Error: " + " ".join(message.split()), err=True)
    return code


app = typer.Typer(
    cls=_Group,
    name="trails",
    add_completion=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    db: Optional[Path] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--db", envvar="TRAILS_DB", metavar="DIR",
        help="The context directory (made by `trails init`)."),
) -> None:
    """Knowledge-graph plus vector retrieval over a context directory.

    Read-only commands (query, sparql, stats, verify without --repair) open the context
    read-only: they run while another process writes to it (one writer, many readers), and
    see the data as it was when they opened it. init, ingest and verify --repair need the
    single writer's place; if another process holds it they exit 1.

    Exit codes: 0 success, 1 user error (one line on stderr), 2 partial failure.

    Example:

    ```
    trails --db ./kb init
    trails --db ./kb ingest notes/
    trails --db ./kb query "how do we deploy?"
    ```
    """
    ctx.obj = db
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


# ------------------------------------------------------------------------------------ helpers

def _db(ctx: typer.Context) -> Path:
    db = ctx.find_root().obj
    if db is None:
        raise ConfigurationError("no context directory: pass --db DIR or set TRAILS_DB")
    return db


def _has_context(db: Path) -> bool:
    from trails.context import CONFIG_FILE

    return (db / CONFIG_FILE).is_file()


@contextmanager
def _open(ctx: typer.Context, *, write: bool = False) -> Iterator[Context]:
    """Open the existing context named by --db; read-only unless ``write``."""
    db = _db(ctx)
    if not _has_context(db):
        raise ConfigurationError(f"{db} holds no trails context; create it with "
                                 f"`trails --db {db} init`")
    with _context(db, read_only=not write) as opened:
        yield opened


def _context(db: Path, **options: Any) -> Context:
    """``Context.open``, with the other-writer error reworded for the command line."""
    from trails.context import Context
    from trails.errors import ContextLockedError

    try:
        return Context.open(db, **options)
    except ContextLockedError as exc:
        raise ContextLockedError(
            f"{db} is open for writing in another process (one writer at a time); wait for it "
            "to finish. Read-only commands (query, sparql, stats, verify) work meanwhile.") from exc


def make_embedder(spec: str) -> Embedder:
    """The embedder a ``--model`` value names: ``mock``, ``mock:DIM`` or a local model.

    >>> make_embedder("mock:8").identity.describe()
    'trails-mock-bow:seed=0 (dim=8, normalized=True)'
    """
    if spec == "mock" or spec.startswith("mock:"):
        from trails.vector.embedders.mock import MockEmbedder

        dim = spec.partition(":")[2]
        if not dim:
            return MockEmbedder()
        if not dim.isdigit() or int(dim) < 1:
            raise ValueError(f"--model mock:DIM needs a positive integer DIM, got {spec!r}")
        return MockEmbedder(dim=int(dim))
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec)


_BIND_TYPES = ("str", "int", "float", "bool", "date", "datetime", "iri")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*")


def parse_binding(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` or ``NAME:TYPE=VALUE`` -> (name, typed value) for a SPARQL binding.

    Without a type: ``<iri>`` is an IRI, ``true``/``false`` a bool, then int, float, ISO date,
    ISO datetime, and anything else a string. TYPE is one of str, int, float, bool, date,
    datetime, iri.

    >>> parse_binding("since=2024-01-01"), parse_binding("n:str=42")
    (('since', datetime.date(2024, 1, 1)), ('n', '42'))
    """
    target, sep, raw = text.partition("=")
    name, _, kind = target.partition(":")
    if not sep or not name:
        raise ValueError(f"--bind needs NAME=VALUE or NAME:TYPE=VALUE, got {text!r}")
    if kind and kind not in _BIND_TYPES:
        raise ValueError(f"--bind type {kind!r} is not one of {', '.join(_BIND_TYPES)}")
    try:
        return name, _typed(raw, kind or _guess_type(raw))
    except ValueError as exc:
        raise ValueError(f"--bind {text!r}: {exc}") from exc


def _guess_type(raw: str) -> str:
    if raw.startswith("<") and raw.endswith(">"):
        return "iri"
    if raw in ("true", "false"):
        return "bool"
    for kind, pattern in (("int", _INT), ("float", _FLOAT), ("date", _DATE),
                          ("datetime", _DATETIME)):
        if pattern.fullmatch(raw):
            return kind
    return "str"


def _typed(raw: str, kind: str) -> Any:
    from trails.kg import IRI

    if kind == "bool":
        if raw not in ("true", "false"):
            raise ValueError("a bool is true or false")
        return raw == "true"
    parsers = {"str": str, "int": int, "float": float, "date": dt.date.fromisoformat,
               "datetime": dt.datetime.fromisoformat, "iri": lambda v: IRI(v.strip("<>"))}
    return parsers[kind](raw)


def _bindings(values: list[str]) -> dict[str, Any] | None:
    return dict(parse_binding(v) for v in values) or None


def _jsonable(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable))


def _table(*columns: str) -> Table:
    """A table whose cells fold instead of being cut with an ellipsis (IRIs stay whole)."""
    table = Table()
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _jsonable(value)


# ------------------------------------------------------------------------------------ commands

@app.command()
def init(
    ctx: typer.Context,
    model: Optional[str] = typer.Option(  # noqa: UP045
        None, "--model", envvar="TRAILS_MODEL", metavar="MODEL",
        help=f"Embedder of a new context: {DEFAULT_MODEL} (default), a sentence-transformers "
             "model directory, or mock / mock:DIM (deterministic, for tests)."),
    base_iri: Optional[str] = typer.Option(  # noqa: UP045
        None, "--base-iri", metavar="IRI", help="Base of minted IRIs (default trails://local/)."),
) -> None:
    """Create a context directory (graph, vectors, and the embedder it records).

    Reopening restores the recorded embedder, so later commands need no --model. Running
    init on an existing context changes nothing (and fails if --model names another embedder).

    Example:

    ```
    trails --db ./kb init                  # the local all-MiniLM-L6-v2
    trails --db ./scratch init --model mock:32
    ```
    """
    db = _db(ctx)
    if _has_context(db):
        with _context(db, read_only=True) as opened:
            _check_same(db, opened, model, base_iri)
            described = opened.embedder.identity.describe()
            typer.echo(f"{db} already holds a trails context ({described})")
        return
    if db.exists() and (not db.is_dir() or any(db.iterdir())):
        raise ConfigurationError(f"{db} exists and is not an empty directory; choose a new one")
    with _context(db, embedder=make_embedder(model or DEFAULT_MODEL), base_iri=base_iri) as made:
        typer.echo(f"created a trails context in {db}: embedder "
                   f"{made.embedder.identity.describe()}, base IRI {made.base_iri}")


def _check_same(db: Path, opened: Context, model: str | None, base_iri: str | None) -> None:
    recorded = opened.embedder.identity
    if model is not None and not make_embedder(model).identity.compatible_with(recorded):
        raise ConfigurationError(f"{db} was created with {recorded.describe()}, not {model!r}; "
                                 "drop --model or choose another --db")
    if base_iri is not None and base_iri != opened.base_iri:
        raise ConfigurationError(f"{db} was created with base IRI {opened.base_iri}, not "
                                 f"{base_iri}; drop --base-iri or choose another --db")


@app.command()
def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., exists=True, metavar="PATH",
                                       help="Files or folders (.md .txt .html .jsonl .pdf)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045
        None, "--scope", metavar="SCOPE", help="Scope to write to (default: default)."),
    base_iri: Optional[str] = typer.Option(  # noqa: UP045
        None, "--base-iri", metavar="IRI", help="Base of minted IRIs (default: the context's)."),
    include: list[str] = typer.Option([], "--include", metavar="GLOB",
                                      help="Only files matching (repeatable)."),
    exclude: list[str] = typer.Option([], "--exclude", metavar="GLOB",
                                      help="Skip files or folders matching (repeatable)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Ingest files and folders: load, chunk, embed and commit each document.

    Unchanged documents are skipped. Prints a summary, then each failure as SOURCE: REASON
    on stderr. Exits 2 if any document failed (the others are committed), else 0.

    Example:

    ```
    trails --db ./kb ingest notes/ README.md --scope team --exclude "drafts/*"
    ```
    """
    with _open(ctx, write=True) as opened:
        stats = _run_ingest(opened, paths, quiet, scope=scope, base_iri=base_iri,
                            include=include or None, exclude=exclude or None)
    typer.echo(stats.summary())
    for source, reason in stats.failures:
        typer.echo(f"{source}: {reason}", err=True)
    if stats.failed:
        raise typer.Exit(EXIT_PARTIAL)


def _run_ingest(opened: Context, paths: list[Path], quiet: bool, **options: Any) -> IngestionStats:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from trails.ingest import BatchEmbedded, IngestionStats, ingest

    console = Console()
    stats = IngestionStats()
    started = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=quiet or not console.is_terminal) as bar:
        documents = bar.add_task("documents", total=None)
        chunks = bar.add_task("chunks embedded", total=None)
        for event in ingest([str(p) for p in paths], ctx=opened, **options):
            done = stats.ingested + stats.skipped + stats.failed
            stats.record(event)
            bar.advance(documents, stats.ingested + stats.skipped + stats.failed - done)
            if isinstance(event, BatchEmbedded):
                bar.advance(chunks, event.chunks)
    stats.seconds = time.perf_counter() - started
    return stats


@app.command()
def query(
    ctx: typer.Context,
    text: str = typer.Argument(..., metavar="TEXT", help="The question, in natural language."),
    mode: Mode = typer.Option(Mode["hybrid"], "--mode", help="vector: nearest chunks; hybrid: rank "
                              "the --sparql filter's candidates; graph: the filter's IRIs."),
    k: int = typer.Option(10, "--k", "-k", min=0, help="At most this many hits."),
    sparql: Optional[typer.FileText] = typer.Option(  # noqa: UP045
        None, "--sparql", metavar="FILE",
        help="Filter: a SELECT of one variable (chunk or document IRIs); - reads stdin."),
    bind: list[str] = typer.Option(
        [], "--bind", metavar="NAME=VALUE",
        help="Bind ?NAME in the filter (repeatable). VALUE is typed: 2024-01-01 date, "
             "ISO datetime, 42 int, 1.5 float, true/false bool, `<http://...>` IRI, else "
             "string; force a type with NAME:TYPE=VALUE (str int float bool date datetime iri)."),
    scope: list[str] = typer.Option([], "--scope", metavar="SCOPE",
                                    help="Scope to search (repeatable; default: default)."),
    fusion: Fusion = typer.Option(
        Fusion["auto"], "--fusion",
        help="How hybrid ranks: auto fuses the vector and keyword rankings, each weighed by "
             "its own evidence of quality; rrf and weighted fuse them plainly; none ranks by "
             "vector score alone."),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print only a JSON list of {iri, score, snippet, metadata, components}."),
) -> None:
    """Retrieve the chunks that best answer TEXT (read-only).

    The filter may select chunk IRIs or document IRIs (a document admits all its chunks);
    without one, hybrid ranks every chunk of the scope.

    Example:

    ```
    cat > since.rq <<'EOF'
    SELECT ?iri WHERE {
      ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?created .
      FILTER(?created >= ?since)
    }
    EOF
    trails --db ./kb query "release notes" --sparql since.rq --bind since=2024-01-01
    trails --db ./kb query "release notes" --mode vector -k 3 --json
    ```
    """
    from trails import retrieve

    if mode.value == "graph" and sparql is None:
        raise ValueError("--mode graph needs --sparql FILE, a filter selecting the IRIs")
    with _open(ctx) as opened:
        hits = retrieve(text, opened, mode=mode.value, k=k,
                        sparql_filter=None if sparql is None else sparql.read(),
                        bindings=_bindings(bind), scope=scope or None,
                        fusion=None if fusion.value == "none" else fusion.value)
    if as_json:
        _print_json([{"iri": h.iri, "score": h.score, "snippet": h.snippet,
                      "metadata": h.metadata, "components": h.components} for h in hits])
        return
    table = _table("#", "score", "iri", "snippet")
    for rank, hit in enumerate(hits, start=1):
        score = "" if hit.score is None else f"{hit.score:.4f}"
        table.add_row(str(rank), score, hit.iri, " ".join(hit.snippet.split())[:200])
    console = Console()
    console.print(table)
    console.print(hits.explain(), highlight=False)


@app.command()
def sparql(
    ctx: typer.Context,
    query_or_file: str = typer.Argument(
        ..., metavar="QUERY_OR_FILE", help="A SPARQL query, a file holding one, or - for stdin."),
    bind: list[str] = typer.Option([], "--bind", metavar="NAME=VALUE",
                                   help="Bind ?NAME (repeatable; typed as in `trails query`)."),
    scope: list[str] = typer.Option(
        [], "--scope", metavar="SCOPE",
        help="Query only these scopes (repeatable; default: all, as one graph)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON only."),
) -> None:
    """Run a read-only SPARQL query: SELECT prints rows, ASK true/false, CONSTRUCT N-Triples.

    The prefixes trails:, schema:, rdf:, rdfs:, xsd: are predefined.

    Example:

    ```
    trails --db ./kb sparql "SELECT ?doc ?date WHERE { ?doc schema:dateCreated ?date }"
    trails --db ./kb sparql "ASK { ?d schema:dateCreated ?c FILTER(?c >= ?since) }" \\
        --bind since=2024-01-01
    ```
    """
    text = _read_query(query_or_file)
    with _open(ctx) as opened:
        result = opened.kg.query(text, _bindings(bind), scopes=scope or None)
    if isinstance(result, bool):
        typer.echo(json.dumps(result))
    elif isinstance(result, list):
        _print_triples(result, as_json)
    elif as_json:
        _print_json(list(result))
    else:
        table = _table(*result.variables)
        for row in result:
            table.add_row(*(_cell(row[v]) for v in result.variables))
        Console().print(table)
        typer.echo(f"{len(result)} rows")


def _read_query(argument: str) -> str:
    """The query itself, the text of the file it names, or stdin for ``-``."""
    if argument == "-":
        return sys.stdin.read()
    path = Path(argument)
    try:
        is_file = "{" not in argument and path.is_file()
    except (OSError, ValueError):  # a long query is not a valid path
        is_file = False
    if is_file:
        return path.read_text(encoding="utf-8")
    if path.suffix in (".rq", ".sparql") and " " not in argument:
        raise ConfigurationError(f"no such query file: {argument}")
    return argument


def _print_triples(triples: list[Any], as_json: bool) -> None:
    if as_json:
        _print_json([[str(t.subject), str(t.predicate), str(t.object)] for t in triples])
    else:
        for t in triples:
            typer.echo(f"{t.subject} {t.predicate} {t.object} .")


@app.command()
def stats(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON only."),
) -> None:
    """Count documents, vectors, quads and scopes, and name the embedder (read-only).

    Example:

    ```
    trails --db ./kb stats --json
    ```
    """
    with _open(ctx) as opened:
        counts = opened.stats()
    if as_json:
        _print_json(counts)
        return
    table = _table("", "")
    table.show_header = False
    for key, value in counts.items():
        table.add_row(key, ", ".join(value) if isinstance(value, list) else _cell(value))
    Console().print(table)


@app.command()
def verify(
    ctx: typer.Context,
    repair: bool = typer.Option(
        False, "--repair", help="Remove what an interrupted ingest left (opens for writing)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON only."),
) -> None:
    """Check that the graph and the vectors agree (read-only unless --repair).

    Exits 0 when consistent and 2 when inconsistencies were found, whether or not --repair
    removed them (run it again to confirm). Repair deletes stale parts and documents that
    cannot be made whole; ingesting their sources again restores them.

    Example:

    ```
    trails --db ./kb verify || trails --db ./kb verify --repair
    ```
    """
    with _open(ctx, write=repair) as opened:
        report = opened.verify(repair=repair)
    if as_json:
        from dataclasses import asdict

        _print_json({"ok": report.ok, **asdict(report)})
    else:
        typer.echo(report.summary())
    if not report.ok:
        raise typer.Exit(EXIT_PARTIAL)


_EVAL_SYSTEMS = ("keyword", "vector", "rrf", "hybrid", "rerank")
EvalMode = enum.Enum("EvalMode", {m: m for m in _EVAL_SYSTEMS}, type=str)
Chunking = enum.Enum("Chunking", {c: c for c in ("default", "whole")}, type=str)


@app.command("eval")
def eval_(
    ctx: typer.Context,
    dataset: str = typer.Argument(
        ..., metavar="DATASET",
        help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), or a name such as "
             "scifact looked up in $TRAILS_BEIR_DIR, then shared/data/beir."),
    split: str = typer.Option("test", "--split", metavar="SPLIT",
                              help="The qrels file to score (qrels/SPLIT.tsv)."),
    modes: list[EvalMode] = typer.Option(
        [], "--mode", help="System to score (repeatable; default keyword, vector, rrf, "
        "hybrid): keyword = BM25 only, vector = cosine only, rrf = plain RRF k=60, hybrid = "
        "retrieve(fusion='auto'), rerank = hybrid + --reranker."),
    model: Optional[str] = typer.Option(  # noqa: UP045
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
    trails eval ../shared/data/beir/nfcorpus --mode vector --mode hybrid --limit 50
    ```
    """
    from trails.evaluation import (
        chunker_for,
        evaluate,
        find_dataset,
        format_table,
        ingest_dataset,
        load_beir,
    )

    data = load_beir(find_dataset(dataset))
    data.split(split)  # an unknown split fails before any ingestion
    systems = [m.value for m in modes] or ["keyword", "vector", "rrf", "hybrid"]
    ranker = None
    if "rerank" in systems:
        if reranker is None:
            raise ConfigurationError("--mode rerank needs --reranker DIR (a cross-encoder model)")
        from trails.rank.rerank import CrossEncoderReranker

        ranker = CrossEncoderReranker(str(reranker))
    db = ctx.find_root().obj
    if db is None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", (model or DEFAULT_MODEL).split("/")[-1])
        db = Path(".trails") / "eval" / f"{data.name}-{slug}-{chunking.value}"
    embedder = None if model is None and _has_context(db) else make_embedder(
        model or DEFAULT_MODEL)
    console = Console(stderr=True)
    show = not quiet and not as_json and console.is_terminal
    with _context(db, embedder=embedder) as opened:
        if show:
            console.print(f"ingesting {data.name} ({len(data.corpus)} documents) into {db}")
        stats = ingest_dataset(data, opened, chunker=chunker_for(chunking.value))
        if show:
            console.print(stats.summary(), highlight=False)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      console=console, disable=not show) as bar:
            tasks: dict[str, Any] = {}

            def progress(system: str, done: int, total: int) -> None:
                if system not in tasks:
                    tasks[system] = bar.add_task(system, total=total)
                bar.update(tasks[system], completed=done)

            results = evaluate(data, split, opened, systems=systems, reranker=ranker,
                               limit=limit, progress=progress)
    if as_json:
        _print_json([{"dataset": r.dataset, "split": r.split, "system": r.system,
                      **r.scores, "queries": r.queries, "seconds": round(r.seconds, 3)}
                     for r in results])
        return
    typer.echo(f"{data.name}, split {split}, {results[0].queries} queries, context {db}")
    typer.echo(format_table(results))


def main() -> None:
    """The console script: ``trails ...`` (exits with the command's code)."""
    typer.main.get_command(app).main(prog_name="trails")


if __name__ == "__main__":
    main()
