"""How long `trails query` takes from the terminal: cold (a new process: interpreter, imports,
opening the context, loading the model, the search) against warm (a process that already has
the model loaded and the context open), with the packaged all-MiniLM-L6-v2.

A context of SciFact documents ($TRAILS_BEIR_DIR/scifact, else ../shared/data/beir/scifact)
is built once; then each query runs as `python -m trails.cli --db DIR query TEXT --json` in a
new process (cold), and as `retrieve()` on an open context, and as the whole `trails query`
command run again inside one process (warm). Parts of the cold time are measured on their
own: the interpreter alone, `import trails.cli`, and opening the context with its model.

    .venv/bin/python benchmarks/cli_query.py                     # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/cli_query.py --quick --no-write  # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import SCIFACT
from _docs import write_region
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.service.client import ServiceClient
from trails.service.discovery import read_service


def documents(limit: int) -> list[Document]:
    docs = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if n >= limit:
                break
            row = json.loads(line)
            docs.append(Document(id=row["_id"], source=f"scifact/{row['_id']}",
                                 title=row.get("title") or None, text=row["text"]))
    return docs


def queries(limit: int) -> list[str]:
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines][:limit]


def wall(command: list[str]) -> float:
    """Seconds a new process takes, from start to exit."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} failed: {done.stderr[-2000:]}")
    return seconds


def through_service(db: Path, cli: list[str], asked: list[str]) -> list[float]:
    """Wall times of the same command while `trails serve` serves the directory (the
    console script's launcher sends the query to the warm service)."""
    server = subprocess.Popen([sys.executable, "-m", "trails.cli", "--db", str(db), "serve",
                               "--port", "0", "--read-only", "--log-level", "warning"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        info = None
        while info is None or ServiceClient(info).health().get("status") != "ready":
            if server.poll() is not None:
                raise SystemExit(f"trails serve exited: {server.stderr.read()[-2000:]}")
            info = read_service(db)
            time.sleep(0.1)
        wall([*cli, asked[0], "--json"])
        return [wall([*cli, query, "--json"]) for query in asked]
    finally:
        server.terminate()
        server.wait(timeout=60)


def milliseconds(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus, few runs")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    # --quick is a smoke run (tests/test_benchmarks_smoke.py): each figure measured once.
    size, runs = (20, 1) if args.quick else (1500, 9)  # 20: a context with the model, no more
    asked = queries(runs)
    python = [sys.executable]
    env_note = "HF_HUB_OFFLINE=1" if os.environ.get("HF_HUB_OFFLINE") else ""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "kb"
        with Context.open(db) as ctx:  # the packaged model, as `trails init` records it
            ingest_all(documents(size), ctx=ctx)
            model = ctx.embedder.identity.describe()
        cli = [*python, "-m", "trails.cli", "--db", str(db), "query"]
        parts = {
            "interpreter alone (`python -c pass`)": [wall([*python, "-c", "pass"])
                                                     for _ in range(runs)],
            "`import trails.cli.commands` (the whole command line)": [
                wall([*python, "-c", "import trails.cli.commands"]) for _ in range(runs)],
            "import, open the context, load the model, embed one query": [
                wall([*python, "-c", ("from trails.context import Context; "
                      f"Context.open({str(db)!r}, read_only=True).embedder.embed('warm')")])
                for _ in range(runs)],
        }
        cold = [wall([*cli, query, "--json", "--local"]) for query in asked]
        # warm: the model loaded and the context open in this process
        with Context.open(db, read_only=True) as ctx:
            retrieve(asked[0], ctx)
            warm_retrieve = []
            for query in asked:
                started = time.perf_counter()
                retrieve(query, ctx)
                warm_retrieve.append(time.perf_counter() - started)
        served = through_service(db, cli, asked)
        runner = CliRunner()
        runner.invoke(app, ["--db", str(db), "query", asked[0], "--json"])  # loads the model
        warm_cli = []
        for query in asked:
            started = time.perf_counter()
            result = runner.invoke(app, ["--db", str(db), "query", query, "--json"])
            warm_cli.append(time.perf_counter() - started)
            if result.exit_code != 0:
                raise SystemExit(result.output)
    rows = [("cold: `trails --db DIR query TEXT --json --local`, a new process", milliseconds(cold)),
            (("through a running service: the same command while `trails serve --db DIR` "
              "runs, a new process"), milliseconds(served)),
            *((f"cold, part: {name}", milliseconds(samples)) for name, samples in parts.items()),
            (("warm: the same command again in a process that has run it (context reopened, "
              "model kept)"), milliseconds(warm_cli)),
            ("warm: `retrieve()` on an open context", milliseconds(warm_retrieve))]
    for name, value in rows:
        print(f"{value:9.1f} ms  {name}")
    if args.no_write:
        return
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    table = "\n".join(f"| {name} | {value:,.0f} |" for name, value in rows)
    write_region("cli-query", f"""## A query from the terminal: cold and warm

`{env_note + ' ' if env_note else ''}.venv/bin/python benchmarks/cli_query.py` ({dt.date.today()}, {machine}, a shared machine): {size:,} SciFact documents, {model}, hybrid mode (the default), k=10, {runs} queries. Medians in milliseconds of wall time.

| what | ms |
|---|---:|
{table}

A cold `trails query` is a new Python process: most of its time is the interpreter and the
imports (numpy, pydantic, pyoxigraph, typer and rich, then ONNX Runtime and the tokenizer
when the model loads), not the search. While `trails serve` serves the directory, the same
command goes to it: the console script reads `service.json`, sends the query over loopback
HTTP and prints the answer without importing the engine or loading the model (the
*through a running service* row: a new process every time). Once a process has the model
loaded, the same command answers in the warm figure, and `retrieve()` on an open context in
the last one. The model is the ONNX int8 export cached beside the packaged model, so no torch is
imported on the query path.""", after="audit")


if __name__ == "__main__":
    main()
