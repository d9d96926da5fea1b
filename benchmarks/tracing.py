"""What tracing costs a search: the same searches with opentelemetry absent, with the API
installed but no SDK (every span a non-recording one), and with the SDK recording every span
to an in-memory exporter.

Whether opentelemetry is there is decided once per process, so each setting runs in its own
interpreter over the same synthetic corpus (MockEmbedder: retrieval alone, the worst case for
the ratio). It also times one ``with span(...)`` block on its own.

    .venv/bin/python benchmarks/tracing.py                # 2,000 documents, 200 rounds; writes docs/benchmarks.md
    .venv/bin/python benchmarks/tracing.py --quick        # a smoke run (never writes)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

from _docs import write_region

ROOT = Path(__file__).resolve().parent.parent

SETTINGS = {
    "absent": 'import sys\nsys.modules["opentelemetry"] = None\n',
    "api, no SDK": "",
    "SDK, in memory": textwrap.dedent("""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        trace.set_tracer_provider(provider)
    """),
}

MEASURE = textwrap.dedent("""
    import json, statistics, time
    from trails import retrieve
    from trails.ingest import Document, ingest_all
    from trails.testing import fresh_context
    from trails.tracing import span

    DOCUMENTS, ROUNDS = {documents}, {rounds}
    ctx = fresh_context()
    words = "river mountain forest desert ocean valley glacier meadow canyon island".split()
    ingest_all([Document(f"d{{n}}", "mem", f"{{words[n % 10]}} report {{n}} about "
                         f"{{words[(n * 7) % 10]}}", metadata={{"date": f"{{2000 + n % 24}}-01-01"}})
                for n in range(DOCUMENTS)], ctx=ctx)
    SINCE = ("SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
             "FILTER(?d >= ?since) }}")
    searches = {{
        "vector": lambda q: retrieve(q, ctx, mode="vector"),
        "hybrid": lambda q: retrieve(q, ctx),
        "hybrid+filter": lambda q: retrieve(q, ctx, sparql_filter=SINCE,
                                            bindings={{"since": "2012-01-01"}}),
    }}
    timings = {{name: [] for name in searches}}
    for round in range(ROUNDS):
        query = words[round % 10] + " report"
        for name, search in searches.items():  # interleaved: noise falls on all alike
            started = time.perf_counter()
            search(query)
            timings[name].append(time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(10_000):
        with span("trails.benchmark"):
            pass
    block = (time.perf_counter() - started) / 10_000
    print(json.dumps({{**{{n: statistics.median(t) * 1e6 for n, t in timings.items()}},
                      "one span block": block * 1e6}}))
""")


def run(setting: str, documents: int, rounds: int) -> dict[str, float]:
    code = SETTINGS[setting] + MEASURE.format(documents=documents, rounds=rounds)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python")}, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{setting}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 documents, 20 rounds")
    parser.add_argument("--no-write", action="store_true", help="print only")
    options = parser.parse_args()
    documents, rounds = (200, 20) if options.quick else (2000, 200)
    results = {setting: run(setting, documents, rounds) for setting in SETTINGS}
    columns = list(next(iter(results.values())))
    print(f"median microseconds per call, {documents} documents, {rounds} rounds")
    print(f"{'setting':<16}" + "".join(f"{c:>16}" for c in columns))
    for setting, timings in results.items():
        print(f"{setting:<16}" + "".join(f"{timings[c]:>16.1f}" for c in columns))
    if options.quick or options.no_write:
        return
    base = results["absent"]
    rows = "\n".join(
        f"| {setting} | " + " | ".join(
            f"{timings[c]:,.1f}" + ("" if c == "one span block" or setting == "absent"
                                    else f" ({timings[c] / base[c]:.2f}x)")
            for c in columns) + " |"
        for setting, timings in results.items())
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    write_region("tracing", f"""## What tracing costs (`benchmarks/tracing.py`)

`.venv/bin/python benchmarks/tracing.py` ({dt.date.today()}, {machine}, a shared machine):
{documents:,} documents (MockEmbedder: retrieval alone, the worst case for the ratio), {rounds}
rounds of each search interleaved, each setting in its own interpreter. Median microseconds
per call; in brackets, against OpenTelemetry absent.

| setting | {" | ".join(columns)} |
|---|{"---:|" * len(columns)}
{rows}

Absent (no `tracing` extra), each span is one shared do-nothing object. With the API alone
(no SDK configured), spans are the API's non-recording ones. With the SDK, every span is
recorded (here to memory; an exporter adds its own cost off the search's thread when batched).
""", after="service-load")


if __name__ == "__main__":
    main()
