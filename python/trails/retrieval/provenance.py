"""A hit's title, source and date, from the graph when its vector's payload does not hold them.

The context's payload allowlist (:mod:`trails.ingest.payload`) may keep document metadata out
of the vector store; ``hit.title``, ``hit.source`` and ``hit.date`` must read the same either
way. Only the hits a retrieval returns are completed, with one ``VALUES`` query over their
documents' IRIs (one per :data:`WINDOW` documents), confined to the retrieval's scopes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pyoxigraph as ox

from trails.ingest.payload import DOCUMENT_FIELDS
from trails.kg.base import KnowledgeGraph, select
from trails.records import RetrievalResult

__all__ = ["WINDOW", "complete_provenance"]

# Documents per query: the query text stays far below the SPARQL size limit.
WINDOW = 500
# Where trails writes each document field in the graph (ingest/minting.py).
_PREDICATES = {"source": "trails:source", "title": "schema:name", "date": "schema:dateCreated"}


def complete_provenance(result: RetrievalResult, kg: KnowledgeGraph,
                        scopes: Sequence[str]) -> RetrievalResult:
    """``result`` with every hit's missing ``source``, ``title`` and ``date`` read from its
    document in the graph (None where the graph has none); the hits are replaced in place,
    so everything else about the result stays as it was. Values the payload holds win.

    Raises:
        SparqlError, StorageError: the graph cannot be read.
    """
    _complete_chunks(result, kg, scopes)
    wanting = {str(hit.metadata["doc_iri"]) for hit in result
               if hit.metadata.get("doc_iri")
               and any(f not in hit.metadata for f in DOCUMENT_FIELDS)}
    if not wanting:
        return result
    found = _document_fields(kg, sorted(wanting), scopes)
    for i, hit in enumerate(result):
        fields = found.get(str(hit.metadata.get("doc_iri")))
        if fields is not None and any(f not in hit.metadata for f in DOCUMENT_FIELDS):
            result[i] = dataclasses.replace(hit, metadata={**fields, **hit.metadata})
    return result


def _complete_chunks(result: RetrievalResult, kg: KnowledgeGraph,
                     scopes: Sequence[str]) -> None:
    """Give a hit whose row names an ingested chunk by ``metadata["iri"]`` under another id
    (and holds no ``doc_iri``) the chunk's document and offsets, as the chunk's own row has."""
    chunks = sorted({str(_node(hit.iri)) for hit in result
                     if not hit.metadata.get("doc_iri") and _node(hit.iri) is not None})
    found: dict[str, dict[str, object]] = {}
    for start in range(0, len(chunks), WINDOW):
        values = " ".join(chunks[start : start + WINDOW])
        for row in select(kg, f"SELECT ?c ?doc ?start ?end WHERE {{ VALUES ?c {{ {values} }}"
                              " ?c a trails:Chunk ; schema:isPartOf ?doc . OPTIONAL {"
                              " ?c trails:startOffset ?start ; trails:endOffset ?end } }",
                          scopes=list(scopes)).raw:
            fields: dict[str, object] = {"doc_iri": row["doc"].value}
            if row.get("start") is not None and row.get("end") is not None:
                fields |= {"start": int(row["start"].value), "end": int(row["end"].value)}
            found.setdefault(row["c"].value, fields)
    for i, hit in enumerate(result):
        if hit.iri in found and not hit.metadata.get("doc_iri"):
            result[i] = dataclasses.replace(hit, metadata={**hit.metadata, **found[hit.iri]})


def _node(iri: str) -> ox.NamedNode | None:
    """``iri`` as a graph IRI; None when it is not one (a row's id: ``vec-0``)."""
    try:
        return ox.NamedNode(iri)
    except ValueError:
        return None


def _document_fields(kg: KnowledgeGraph, documents: list[str], scopes: Sequence[str]
                     ) -> dict[str, dict[str, str | None]]:
    """doc IRI -> its source, title and date (the date's ISO text, as a payload holds it).

    A field with several values (a user added a second ``schema:name``) gives its smallest,
    so the same hit reads the same on every call."""
    optional = " ".join(f"OPTIONAL {{ ?doc {p} ?{f} }}" for f, p in _PREDICATES.items())
    out: dict[str, dict[str, str | None]] = {}
    for start in range(0, len(documents), WINDOW):
        window = documents[start : start + WINDOW]
        values = " ".join(str(ox.NamedNode(d)) for d in window)
        rows = select(kg, f"SELECT ?doc ?{' ?'.join(_PREDICATES)} WHERE {{ "
                          f"VALUES ?doc {{ {values} }} ?doc a trails:Document . {optional} }}",
                      scopes=list(scopes)).raw
        for row in rows:
            fields = out.setdefault(row["doc"].value, dict.fromkeys(DOCUMENT_FIELDS))
            for name in DOCUMENT_FIELDS:
                term = row.get(name)
                if term is not None and (fields[name] is None or term.value < str(fields[name])):
                    fields[name] = term.value
    return out
