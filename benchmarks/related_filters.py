"""Two more shapes analysts write, on the context ``benchmarks/scale.py`` builds: documents of a
class of their own ontology or any subclass (``?doc a ?type . ?type rdfs:subClassOf*
?broad``), and a date compared with another resource's (``?claim ex:filed ?c . FILTER(?d >=
?c)``, "evidence dated after the claim was filed").

Build a context once with ``scale.py --keep DIR``; then ``--prepare`` writes what the two
shapes read, once (each document's class from its topic, one ``INSERT ... WHERE`` per class
and scope; one claim per share, filed on the date that leaves that share of the documents):

    .venv/bin/python benchmarks/related_filters.py DIR --prepare
    .venv/bin/python benchmarks/related_filters.py DIR [--read-only] [--queries 3]

Prints one JSON line per shape and share: the filter path ``explain()`` names, the chunks,
the median first run (a filter text never seen before) of exact hybrid and of the fused
default in milliseconds, and ``same``: the planned candidates are the filter's as Oxigraph
runs it as written. The first line is the unfiltered vector query, the floor of the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import _scale_corpus as corpus
import scale
from filter_forms import chunks, time_first_runs
from first_runs import milliseconds, query_texts

from trails.context import Context
from trails.kg import IRI
from trails.retrieval.retrieve import retrieve
from trails.vector import MockEmbedder

CLAIMS = "https://example.org/claims/"
PROLOGUE = f"PREFIX ex: <{CLAIMS}> PREFIX meta: <https://trails.dev/meta#> "
SHAPES = {
    "class or subclass": "?doc a ?type . ?type rdfs:subClassOf* ?broad .",
    "date after a claim's": "?doc schema:dateCreated ?d . ?claim ex:filed ?c . FILTER(?d >= ?c)",
}


def bindings() -> dict[str, list[dict[str, Any]]]:
    """Each shape's bindings, one per share of scale.SHARES."""
    topics = [{"broad": IRI(f"{corpus.TOPIC_NS}T{n}")} for n, _ in reversed(corpus.TOPIC_SHARES)]
    claims = [{"claim": IRI(f"{CLAIMS}leaving-{f}")} for f in scale.FRACTIONS]
    return {"class or subclass": topics, "date after a claim's": claims}


def prepare(path: Path) -> None:
    """Each document typed by its topic class, in the graph its topic is in; the claims."""
    ctx = Context.open(path, embedder=MockEmbedder(dim=384))
    classes = [f"<{corpus.TOPIC_NS}T{b}_{n}>" for b in range(corpus.BROAD)
               for n in range(corpus.NARROW)]
    for graph in ("", "GRAPH <urn:trails:scope:legal> "):
        def within(pattern: str, graph: str = graph) -> str:
            return f"{graph}{{ {pattern} }}" if graph else pattern
        for c in classes:  # a class named, not a variable: no write that could type a chunk
            ctx.kg.update(f"{PROLOGUE}INSERT {{ {within(f'?doc a {c}')} }} "
                          f"WHERE {{ {within(f'?doc meta:topic {c}')} }}")
    filed = " ".join(f'<{CLAIMS}leaving-{f}> ex:filed "{corpus.date_for_fraction(f)}"^^xsd:date .'
                     for f in scale.FRACTIONS)
    ctx.kg.update(f"{PROLOGUE}INSERT DATA {{ {filed} }}")
    ctx.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a context built by scale.py --keep")
    parser.add_argument("--prepare", action="store_true", help="write the classes and claims")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--queries", type=int, default=3)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.context)
        return 0
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384), read_only=args.read_only)
    texts = query_texts(args.queries)
    unique = scale.Unique()
    retrieve(texts[0], ctx, mode="vector")
    floor = statistics.median(milliseconds(lambda q=q: retrieve(q, ctx, mode="vector"))
                              for q in texts)
    print(json.dumps({"read_only": args.read_only, "vector_ms": round(floor, 1)}), flush=True)
    for shape, per_share in bindings().items():
        text = f"{PROLOGUE}SELECT ?iri WHERE {{ {scale.LINK} {SHAPES[shape]} }}"
        for share, bound in zip(scale.SHARES, per_share):
            planned = chunks(ctx, unique(text), bound, None)
            written = set(ctx.vectors.expand_ids(ctx.kg.select_iris(text, bound)))
            row: dict[str, object] = {"shape": shape, "share": share, "chunks": len(planned),
                                      "same": planned == written}
            time_first_runs(row, ctx, texts, text, bound, None, unique)
            print(json.dumps(row), flush=True)
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
