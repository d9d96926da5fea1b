"""The five filter shapes of ``benchmarks/scale.py`` written other ways an analyst writes them
(a property path, an inverse link, VALUES, a UNION, MINUS, OPTIONAL with !BOUND, the chunk
type beside the link, documents returned by the filter itself): each form's first run beside the natural form's, and whether both
select the same chunks.

Build a context once with ``scale.py --keep DIR``, then:

    .venv/bin/python benchmarks/filter_forms.py DIR [--read-only] [--queries 3]

Prints one JSON line per form and share: the filter path ``explain()`` names, the chunks, the
median first run (a filter text never seen before) of exact hybrid and of the fused default in
milliseconds, and ``same``: the form's candidates are the natural form's. The first line is
the unfiltered vector query, the floor the ratios in docs/benchmarks.md are taken against.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scale
from first_runs import milliseconds, query_texts

from trails.context import Context
from trails.retrieval.candidates import filter_candidates
from trails.retrieval.retrieve import retrieve
from trails.vector import MockEmbedder

LINK = scale.LINK
# shape -> form -> the filter text from the share's bindings (the same bindings are passed)
Form = Callable[[dict[str, Any]], str]
FORMS: dict[str, dict[str, Form]] = {
    "date since (the seed's)": {
        "path": lambda b: ("SELECT ?iri WHERE { ?iri schema:isPartOf/schema:dateCreated ?d . "
                           "FILTER(?d >= ?since) }"),
        "inverse link": lambda b: ("SELECT ?iri WHERE { ?doc ^schema:isPartOf ?iri . "
                                   "?doc schema:dateCreated ?d . FILTER(?since <= ?d) }"),
        "documents returned": lambda b: ("SELECT ?doc WHERE { ?doc schema:dateCreated ?d . "
                                         "FILTER(?d >= ?since) }"),
        "chunk typed": lambda b: ("SELECT ?iri WHERE { ?iri a trails:Chunk ; schema:isPartOf "
                                  "?doc . ?doc schema:dateCreated ?d . FILTER(?d >= ?since) }"),
    },
    "equality": {
        "VALUES": lambda b: (f"SELECT ?iri WHERE {{ {LINK} ?doc meta:jurisdiction ?v . "
                             f"VALUES ?v {{ \"{b['j']}\" }} }}"),
        "UNION": lambda b: (f"SELECT ?iri WHERE {{ {LINK} {{ ?doc meta:jurisdiction "
                            f"\"{b['j']}\" }} UNION {{ ?doc meta:jurisdiction \"none\" }} }}"),
    },
    "scope + date range": {
        "path, two FILTERs": lambda b: ("SELECT ?iri WHERE { ?iri schema:isPartOf/"
                                        "schema:dateCreated ?d . FILTER(?d >= ?from) "
                                        "FILTER(?d < ?to) }"),
    },
    "taxonomy subClassOf*": {
        "path": lambda b: (f"SELECT ?iri WHERE {{ {LINK} ?doc meta:topic/rdfs:subClassOf* "
                           "?broad }"),
    },
    "FILTER NOT EXISTS": {
        "MINUS": lambda b: f"SELECT ?iri WHERE {{ {LINK} MINUS {{ ?doc meta:classification ?c }} }}",
        "OPTIONAL, !BOUND": lambda b: (f"SELECT ?iri WHERE {{ {LINK} OPTIONAL {{ ?doc "
                                       "meta:classification ?k FILTER(?k = ?c) } "
                                       "FILTER(!BOUND(?k)) }"),
    },
}


def chunks(ctx: Context, text: str, bindings: dict[str, Any], scope: str | None) -> set[str]:
    scopes = None if scope is None else [scope]
    return set(ctx.vectors.expand_ids(filter_candidates(ctx.kg, text, bindings, scopes)))


def first_run(ctx: Context, query: str, text: str, bindings: dict[str, Any], scope: str | None,
              fusion: str | None) -> tuple[float, str | None]:
    """Milliseconds of one search with a filter text never seen before, and its filter path."""
    found = []
    ms = milliseconds(lambda: found.append(retrieve(query, ctx, sparql_filter=text,
                                                    bindings=bindings, scope=scope,
                                                    fusion=fusion)))
    return ms, found[0].filter_path


def time_first_runs(row: dict[str, object], ctx: Context, texts: list[str], text: str,
                    bindings: dict[str, Any], scope: str | None, unique: scale.Unique) -> None:
    """Into ``row``: the median first run of exact hybrid and of the fused default (a text
    never seen before each time) and the filter path the last one named."""
    for fusion, label in ((None, "exact_first"), ("auto", "fused_first")):
        timed = [first_run(ctx, q, unique(text), bindings, scope, fusion) for q in texts]
        row[label] = round(statistics.median(ms for ms, _ in timed))
        row["path"] = timed[-1][1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a context built by scale.py --keep")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--queries", type=int, default=3)
    args = parser.parse_args()
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384), read_only=args.read_only)
    texts = query_texts(args.queries)
    unique = scale.Unique()
    retrieve(texts[0], ctx, mode="vector")
    floor = statistics.median(milliseconds(lambda q=q: retrieve(q, ctx, mode="vector"))
                              for q in texts)
    print(json.dumps({"read_only": args.read_only, "vector_ms": round(floor, 1)}), flush=True)
    for shape, (natural, _, per_share, scope) in scale.shapes().items():
        for share, bindings in zip(scale.SHARES, per_share):
            expected = chunks(ctx, scale.select(natural), bindings, scope)
            for form, text_of in FORMS[shape].items():
                text = text_of(bindings)
                used = {k: v for k, v in bindings.items() if f"?{k}" in text}
                found = chunks(ctx, unique(text), used, scope)
                row: dict[str, object] = {"shape": shape, "share": share, "form": form,
                                          "chunks": len(found), "same": found == expected}
                time_first_runs(row, ctx, texts, text, used, scope, unique)
                print(json.dumps(row), flush=True)
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
