"""The HotpotQA and MuSiQue samples as linked contexts, for the entity step's measurements
(``entity_cost.py`` here, ``studies/entity_study.py``).

Each paragraph's title is an entity (``rdfs:label`` the title, ``skos:altLabel`` the title
without a trailing parenthesis: "Kiss and Tell (1945 film)" is also "Kiss and Tell"); the
corpus is ingested through the real pipeline (the default chunker, onnx-int8) and linked with
``ctx.link()``, so a chunk that names another paragraph's title mentions it. ``ex:linksTo``
joins a paragraph's entity to each entity its chunks mention, the graph the step's
neighbours follow.
"""

from __future__ import annotations

import re

import eval_beir as eb
import pyoxigraph as ox

from trails import evaluation as ev
from trails.ingest.linking import RDFS_LABEL, SKOS, LabelLinker
from trails.kg.base import select

# The embedder backend of the cached contexts (the guard study's too, so they are shared).
BACKEND = "onnx-int8"
EX = "https://example.org/entity/"
LINKS_TO = EX + "linksTo"
LINKER = LabelLinker([RDFS_LABEL, SKOS + "altLabel"])


def entity(doc_id: str) -> str:
    return EX + doc_id


def ontology(data: ev.BeirDataset) -> list[ox.Quad]:
    """Each paragraph's title as an entity's label (and without a trailing parenthesis)."""
    quads = []
    for doc_id, (title, _text) in data.corpus.items():
        subject = ox.NamedNode(entity(doc_id))
        quads.append(ox.Quad(subject, ox.NamedNode(RDFS_LABEL), ox.Literal(title)))
        short = re.sub(r"\s*\([^)]*\)\s*$", "", title)
        if short and short != title:
            quads.append(ox.Quad(subject, ox.NamedNode(SKOS + "altLabel"), ox.Literal(short)))
    return quads


def linked_context(name: str):  # type: ignore[no-untyped-def]
    data = ev.load_beir(eb.dataset_dir(name))
    model = eb.embedder(BACKEND)
    ctx = eb.open_context(data, "default", model, BACKEND)
    doc_of = ev.doc_ids_by_iri(data, ctx)
    if not select(ctx.kg, f"SELECT ?s WHERE {{ ?s <{LINKS_TO}> ?o }} LIMIT 1").rows:
        ctx.kg.extend(ontology(data))
        report = ctx.link(LINKER)
        eb.log(f"{name}: linked ({report.mentions_added} mentions added)")
        rows = select(ctx.kg, "SELECT DISTINCT ?doc ?e WHERE { ?c trails:mentions ?e ; "
                              "schema:isPartOf ?doc }").rows
        edges = {(doc_of[str(r["doc"])], str(r["e"])) for r in rows if str(r["doc"]) in doc_of}
        ctx.kg.extend([ox.Quad(ox.NamedNode(entity(d)), ox.NamedNode(LINKS_TO), ox.NamedNode(e))
                       for d, e in sorted(edges) if e != entity(d)])
        eb.log(f"{name}: {len(rows)} chunk-entity links, {len(edges)} paragraph links")
    return data, ctx, doc_of
