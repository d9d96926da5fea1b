"""The audit graph is PROV-O that satisfies ontologies/trails-audit-shapes.ttl (pyshacl), the
shapes reject what breaks them, and any record survives its trip through JSON and the graph."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
import rdflib
from hypothesis import given, settings
from hypothesis import strategies as st
from pyshacl import validate

from conftest import ROOT
from trails import retrieve
from trails.audit import AUDIT_GRAPH, DeletionRecord, HitRecord, SearchRecord
from trails.audit.prov import quads, read_records
from trails.audit.records import from_json
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

SHAPES = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit-shapes.ttl", format="turtle")
ONTOLOGY = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit.ttl", format="turtle")
AUDIT = rdflib.Namespace("https://trails.dev/ns/audit#")


def audit_graph(ctx: Context) -> rdflib.Graph:
    text = ctx.kg.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?s ?p ?o }} }}")
    nt = "".join(f"{t.subject} {t.predicate} {t.object} .\n" for t in text)
    return rdflib.Graph().parse(data=nt, format="nt")


def conforms(graph: rdflib.Graph) -> tuple[bool, str]:
    ok, _, report = validate(graph, shacl_graph=SHAPES, inference="none")
    return ok, report


def test_every_kind_of_search_folds_into_conforming_prov(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=f"Text {i} about seals.",
                             metadata={"date": f"202{i}-02-01"}) for i in range(4)], ctx=ctx)
        since = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d schema:dateCreated ?c "
                 "FILTER(?c >= ?since) }")
        retrieve("seals", ctx)
        retrieve("seals", ctx, mode="vector", k=2)
        retrieve("seals", ctx, sparql_filter=since, bindings={"since": dt.date(2022, 1, 1)})
        retrieve("x", ctx, mode="graph", sparql_filter=since, bindings={"since": dt.date(2021, 1, 1)})
        retrieve("nothing matches", ctx, sparql_filter=since, bindings={"since": dt.date(2099, 1, 1)})
        ctx.audit.record(DeletionRecord(run_id="d" * 32, caller="janitor", started="2024-01-01T00:00:00+00:00",
                                        ended="2024-01-01T00:00:01+00:00", reason="expired",
                                        documents=["trails://local/doc/d0"]))
        ctx.audit.fold()
        graph = audit_graph(ctx)
    ok, report = conforms(graph)
    assert ok, report
    prov = rdflib.Namespace("http://www.w3.org/ns/prov#")
    assert len(set(graph.subjects(rdflib.RDF.type, prov.Activity))) == 6
    assert len(set(graph.subjects(rdflib.RDF.type, AUDIT.Search))) == 5
    # Every audit: term used is declared in the vocabulary.
    used = {p for p in graph.predicates() if str(p).startswith(str(AUDIT))}
    used |= {o for o in graph.objects(None, rdflib.RDF.type) if str(o).startswith(str(AUDIT))}
    declared = set(ONTOLOGY.subjects(rdflib.RDF.type, rdflib.RDF.Property)) | set(
        ONTOLOGY.subjects(rdflib.RDF.type, rdflib.RDFS.Class))
    assert used <= declared, used - declared
    # How each filter ran is kept beside it, and only where there was a filter.
    paths = {str(graph.value(run, AUDIT.filterPath)) if graph.value(run, AUDIT.filterPath) else None
             for run in graph.subjects(rdflib.RDF.type, AUDIT.Search)
             if graph.value(run, AUDIT.filter) is not None}
    assert paths == {"documents-columns", "as-written"}, paths  # graph mode runs as written
    unfiltered = [run for run in graph.subjects(rdflib.RDF.type, AUDIT.Search)
                  if graph.value(run, AUDIT.filter) is None]
    assert len(unfiltered) == 2
    assert all(graph.value(run, AUDIT.filterPath) is None for run in unfiltered)


def test_a_search_record_keeps_how_its_filter_ran(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id="d", source="d.md", text="Seals rest on rocks.")], ctx=ctx)
        chunk = next(iter(ctx.vectors.all_ids()))
        ctx.kg.update(f"INSERT DATA {{ <{chunk}> schema:isPartOf <https://example.org/elsewhere> }}")
        result = retrieve("seals", ctx, sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?d }")
        record = ctx.audit.get(result.run_id)
    assert isinstance(record, SearchRecord)
    assert record.filter_path == result.filter_path
    assert record.filter_path.startswith("chunks-reordered (chunk links or document types "
                                         "changed by hand")


def test_the_shapes_reject_broken_records():
    record = SearchRecord(run_id="e" * 32, caller="x", started="2024-01-01T00:00:00+00:00",
                          ended="2024-01-01T00:00:01+00:00", query_sha256="f" * 64,
                          scopes=["default"], hits=[HitRecord(rank=1, iri="urn:x:c", score=0.5)],
                          filter="SELECT ?iri WHERE { ?iri ?p ?o }",
                          filter_path="chunks-reordered (chunk links changed by hand: trails verify "
                                      "plans it again)")
    good = rdflib.Graph().parse(data="".join(f"{q.subject} {q.predicate} {q.object} .\n"
                                             for q in quads(record)), format="nt")
    assert conforms(good)[0]
    run = rdflib.URIRef(record.iri)
    for predicate, value in ((AUDIT.querySha256, rdflib.Literal("not-a-digest")),
                             (AUDIT.mode, rdflib.Literal("psychic")),
                             (AUDIT.filterPath, rdflib.Literal("fast")),
                             (AUDIT.filterPath, rdflib.Literal("as-written ")),
                             (AUDIT.k, rdflib.Literal(0))):
        broken = rdflib.Graph() + good
        broken.set((run, predicate, value))
        assert not conforms(broken)[0], predicate
    unranked = rdflib.Graph() + good
    unranked.remove((rdflib.URIRef(record.iri + "/hit/1"), AUDIT.rank, None))
    assert not conforms(unranked)[0]


_TERMS = st.sampled_from(['"2024-01-01"^^<http://www.w3.org/2001/XMLSchema#date>', "<urn:x:doc>",
                          '"plain"', '"42"^^<http://www.w3.org/2001/XMLSchema#integer>'])
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_HITS = st.lists(st.builds(
    HitRecord, rank=st.integers(1, 50), iri=st.just("urn:x:chunk"),
    score=st.none() | st.floats(-1, 1), document=st.none() | st.just("urn:x:doc"),
    components=st.dictionaries(_NAMES, st.floats(-5, 5), max_size=3),
    admitted_by=st.none() | st.dictionaries(_NAMES, _TERMS, max_size=3)), max_size=4)


@settings(max_examples=60, deadline=None)
@given(query=st.none() | _TEXT, caller=_TEXT.filter(str.strip), filter_=st.none() | _TEXT,
       bindings=st.dictionaries(_NAMES, _TERMS, max_size=3), hits=_HITS,
       notes=st.lists(_TEXT, max_size=2), candidates=st.none() | st.integers(0, 10**6),
       path=st.none() | st.sampled_from(["documents-columns", "as-written (the planned form failed)"]))
def test_a_search_record_survives_json_and_the_graph(query, caller, filter_, bindings, hits,
                                                      notes, candidates, path):
    record = SearchRecord(run_id="a" * 32, caller=caller, started="2024-01-01T00:00:00+00:00",
                          ended="2024-01-01T00:00:00.5+00:00", query=query,
                          query_sha256="0" * 64, filter=filter_, bindings=bindings,
                          scopes=["default"], notes=notes, candidates=candidates, hits=hits,
                          filter_path=path)
    assert from_json(record.to_json()) == record
    store = ox.Store()
    store.extend(quads(record))
    rows = store.query(f"SELECT ?r WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?s <{AUDIT}record> ?r }} }}")
    assert read_records([row["r"].value for row in rows]) == [record]
    label = store.query(f"SELECT ?l WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?a a <http://www.w3.org/ns/prov#Agent> ; "
                        "<http://www.w3.org/2000/01/rdf-schema#label> ?l } }")
    assert [row["l"].value for row in label] == [caller]


def test_feedback_folds_into_conforming_prov_in_declared_terms(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id="d", source="d.md", text="Seals rest on rocks.")], ctx=ctx)
        run = retrieve("seals", ctx).run_id
        ctx.audit.feedback(run, "down", note="wrong rocks")
        ctx.audit.feedback(run, "up")
        ctx.audit.fold()
        graph = audit_graph(ctx)
    ok, report = conforms(graph)
    assert ok, report
    feedback = set(graph.subjects(rdflib.RDF.type, AUDIT.Feedback))
    assert len(feedback) == 2
    assert {graph.value(f, AUDIT.feedbackOn) for f in feedback} == {
        rdflib.URIRef(f"urn:trails:run:{run}")}
    used = {p for p in graph.predicates() if str(p).startswith(str(AUDIT))}
    declared = set(ONTOLOGY.subjects(rdflib.RDF.type, rdflib.RDF.Property))
    assert used <= declared, used - declared
    (one,) = feedback & set(graph.subjects(AUDIT.rating, rdflib.Literal("up")))
    broken = rdflib.Graph() + graph
    broken.set((one, AUDIT.rating, rdflib.Literal("sideways")))
    assert not conforms(broken)[0]
