"""The main job on the embedded defaults: ingest this project's docs, run a hybrid query.

Run with `make demo`. Builds a context in ./demo-context with the local all-MiniLM-L6-v2
model, ingests the Markdown under docs/ and adr/ (their front matter carries dates), then asks a
question restricted by SPARQL to documents created on or after a date.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from trails import retrieve
from trails.context import Context
from trails.display.results import hit_passage
from trails.ingest import ingest_all
from trails.kg import IRI, select

ROOT = Path(__file__).resolve().parent.parent
QUESTION = sys.argv[1] if len(sys.argv) > 1 else "how are results kept exact when filtering?"
SINCE = dt.date(2024, 1, 1)
# Every hit traces back to its document, its date and its scope through the graph.
DOCUMENT = "SELECT ?name ?created WHERE { ?doc schema:name ?name ; schema:dateCreated ?created }"
FILTER = """
SELECT ?iri WHERE {
  ?iri schema:isPartOf ?doc .
  ?doc schema:dateCreated ?created .
  FILTER(?created >= ?since)
}"""


def main() -> None:
    console = Console() if sys.stdout.isatty() else Console(width=140)  # e.g. piped to a file
    target = ROOT / "demo-context"
    shutil.rmtree(target, ignore_errors=True)
    with Context.open(target) as ctx:
        stats = ingest_all([ROOT / "docs", ROOT / "adr"], ctx=ctx, root=ROOT, include=["*.md"])
        console.print(f"[bold]ingested[/] {stats.summary()}")
        for problem in stats.problems():  # every failure named, with what to do about it
            console.print(problem, markup=False, highlight=False)
        hits = retrieve(QUESTION, ctx, mode="hybrid", k=5, sparql_filter=FILTER,
                        bindings={"since": SINCE})
        table = Table(title=f"{QUESTION!r} — documents created since {SINCE}")
        # "vec" / "kw": the hit's place in the vector and keyword rankings that were fused.
        for column in ("#", "score", "vec", "kw", "document", "created"):
            table.add_column(column, no_wrap=column != "document", max_width=36)
        table.add_column("passage", ratio=1)
        for rank, hit in enumerate(hits, start=1):
            doc = select(ctx.kg, DOCUMENT, {"doc": IRI(hit.metadata["doc_iri"])}).rows[0]
            # The score components say why a hit ranks here: its place in each ranking.
            places = [str(hit.components.get(f"{name}_rank", "-"))
                      for name in ("vector", "keyword")]
            table.add_row(str(rank), f"{hit.score:.3f}", *places, doc["name"],
                          str(doc["created"]), hit_passage(hit, 200))
        console.print(table)
        console.print(hits.explain())


if __name__ == "__main__":
    main()
