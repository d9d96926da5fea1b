"""Metadata that links: IRIs written as <...>, known CURIEs and JSON-LD {"@id": ...} become IRI
objects, lists become several values, and a per-context mapping sends a key to any predicate."""

from __future__ import annotations

import json

import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import ConfigurationError
from trails.ingest import ingest_all
from trails.kg import IRI
from trails.testing import fresh_context
from trails.vector import MockEmbedder

EX = "https://ex.org/"
MEMO = f"""---
type: <{EX}Memo>
subject: schema:Legislation
homepage: https://ex.org/plain-url
tags: [rails, routing]
related:
  - <{EX}doc/1>
  - <{EX}doc/2>
author: ann
---
Rails routing memo.
"""


def objects(ctx, doc, predicate):
    return ctx.kg.query("SELECT ?o WHERE { ?d ?p ?o }", {"d": IRI(doc), "p": IRI(predicate)}).column("o")


def test_front_matter_iris_curies_and_lists(tmp_path):
    (tmp_path / "memo.md").write_text(MEMO)
    with fresh_context() as ctx:
        ingest_all(tmp_path, ctx=ctx)
        doc = "trails://local/doc/memo.md"
        meta = "https://trails.dev/meta#"
        assert objects(ctx, doc, meta + "type") == [IRI(f"{EX}Memo")]
        assert objects(ctx, doc, meta + "subject") == [IRI("https://schema.org/Legislation")]
        assert objects(ctx, doc, meta + "homepage") == ["https://ex.org/plain-url"]  # a string
        assert sorted(objects(ctx, doc, meta + "tags")) == ["rails", "routing"]
        assert sorted(objects(ctx, doc, meta + "related")) == [IRI(f"{EX}doc/1"), IRI(f"{EX}doc/2")]
        assert ctx.kg.query(f"ASK {{ <{doc}> meta:type ?t FILTER(isIRI(?t)) }}")


def test_json_lines_at_id_objects(tmp_path):
    records = [{"id": "r1", "text": "Rails memo.", "owner": {"@id": f"{EX}people/ann"},
                "refs": [{"@id": "schema:Thing"}, {"note": "a plain object"}]}]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    with fresh_context() as ctx:
        ingest_all(tmp_path, ctx=ctx)
        doc = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")[0]
        meta = "https://trails.dev/meta#"
        assert objects(ctx, doc, meta + "owner") == [IRI(f"{EX}people/ann")]
        refs = objects(ctx, doc, meta + "refs")
        assert IRI("https://schema.org/Thing") in refs
        assert '{"note": "a plain object"}' in refs


def test_a_mapping_sends_keys_to_any_predicate_and_is_recorded(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "memo.md").write_text(MEMO)
    db = tmp_path / "kb"
    mapping = {"author": "dcterms:creator", "tags": "<https://schema.org/keywords>"}
    with Context.open(db, embedder=MockEmbedder(dim=16), metadata_predicates=mapping) as ctx:
        ingest_all(tmp_path / "docs", ctx=ctx)
    with Context.open(db) as ctx:  # reopened: the mapping comes from trails.json
        doc = "trails://local/doc/memo.md"
        assert objects(ctx, doc, "http://purl.org/dc/terms/creator") == ["ann"]
        assert sorted(objects(ctx, doc, "https://schema.org/keywords")) == ["rails", "routing"]
        assert objects(ctx, doc, "https://trails.dev/meta#author") == []
    # A new mapping is recorded; the next ingest rewrites the triples without embedding.
    with Context.open(db, metadata_predicates={"author": "schema:author"}) as ctx:
        stats = ingest_all(tmp_path / "docs", ctx=ctx)
        assert stats.metadata_updated == 1
        assert objects(ctx, "trails://local/doc/memo.md", "https://schema.org/author") == ["ann"]
        assert objects(ctx, "trails://local/doc/memo.md", "http://purl.org/dc/terms/creator") == []


def test_a_bad_mapping_is_refused():
    with pytest.raises(ConfigurationError, match="'author' maps to 'nope'"):
        _context_with({"author": "nope"})


def _context_with(mapping):
    base = fresh_context()
    return Context(base.kg, base.vectors, base.embedder, metadata_predicates=mapping)


def test_documents_join_a_loaded_ontology_in_a_hybrid_filter(tmp_path):
    for name, kind in (("memo.md", "Memo"), ("letter.md", "Letter"), ("note.md", "Note")):
        (tmp_path / name).write_text(f"---\ntype: <{EX}{kind}>\n---\nRails routing {kind}.\n")
    with fresh_context() as ctx:
        ingest_all(tmp_path, ctx=ctx)
        ctx.kg.load(f"""@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
            ex:Memo rdfs:subClassOf ex:Correspondence . ex:Letter rdfs:subClassOf ex:Correspondence .
            ex:Correspondence rdfs:subClassOf ex:Record .""")
        hits = retrieve("rails routing", ctx, k=10, sparql_filter=f"""
            SELECT ?c WHERE {{ ?c schema:isPartOf ?doc .
                               ?doc meta:type/rdfs:subClassOf* <{EX}Record> }}""")
        assert {h.title for h in hits} == {"memo.md", "letter.md"}
