"""Every graph ingestion writes satisfies ontologies/trails-shapes.ttl (checked with pyshacl),
and the shapes do reject graphs that break them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from pyshacl import validate
from rdflib.namespace import RDF

from conftest import ROOT
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

SHAPES = ROOT / "ontologies" / "trails-shapes.ttl"
ONTOLOGY = ROOT / "ontologies" / "trails.ttl"
TRAILS = rdflib.Namespace("https://trails.dev/ns#")
SCHEMA = rdflib.Namespace("https://schema.org/")
SH = rdflib.Namespace("http://www.w3.org/ns/shacl#")
XSD = rdflib.Namespace("http://www.w3.org/2001/XMLSchema#")  # open: pytest probes closed ones


@pytest.fixture(scope="module")
def shapes() -> rdflib.Graph:
    return rdflib.Graph().parse(SHAPES, format="turtle")


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    sentences = " ".join(f"Sentence {i} is about subject{i % 5} and more." for i in range(80))
    (folder / "long.md").write_text(
        f"---\ntitle: Long\ndate: 2024-05-01\nexpires: 2100-01-01\nrating: 3\n---\n{sentences}\n")
    (folder / "stamped.md").write_text("---\ncreated: 2024-05-01T10:20:30\ntags: [a, b]\n---\nHi.\n")
    (folder / "plain.txt").write_text("Plain text without any metadata.")
    (folder / "page.html").write_text("<title>Page</title><p>An HTML paragraph.</p>")
    records = [{"id": "r1", "text": "First record.", "lang": "en", "score": 0.5},
               {"id": "r2", "text": "Second record.", "nested": {"k": 1}}]
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (folder / "empty.txt").write_text("")
    return folder


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, bytes]:
    """graph name -> N-Triples of that graph, after ingesting, re-ingesting a change, scoping."""
    root = tmp_path_factory.mktemp("shapes")
    folder = _corpus(root / "kb")
    with Context.open(root / "ctx", embedder=MockEmbedder(dim=32)) as ctx:
        assert ingest_all(folder, ctx=ctx).failed == 0
        (folder / "plain.txt").write_text("Plain text, changed. It has two sentences now.")
        assert ingest_all(folder, ctx=ctx).ingested == 1
        assert ingest_all(folder, ctx=ctx, scope="tenant-1").ingested == 7
        ingest_all([Document(id="x", source="mem", text="In memory.", title="X")], ctx=ctx,
                   scope="other")
        store = ctx.kg.store
        graphs = {"default": store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())}
        for graph in store.named_graphs():
            graphs[graph.value] = store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
    return graphs


def _graph(data: bytes) -> rdflib.Graph:
    return rdflib.Graph().parse(data=data.decode("utf-8"), format="nt")


def _violations(data: rdflib.Graph, shapes: rdflib.Graph) -> tuple[bool, set[tuple[str, str]]]:
    """(conforms, {(focus node, result path)}) of a SHACL validation."""
    conforms, report, _ = validate(data, shacl_graph=shapes, inference="none")
    found = set()
    for result in report.subjects(RDF.type, SH.ValidationResult):
        focus = report.value(result, SH.focusNode)
        path = report.value(result, SH.resultPath)
        found.add((str(focus), str(path)))
    return conforms, found


def test_every_ingested_graph_conforms(exported, shapes):
    # Each scope's graph, and the manifests of what trails wrote (ADR 0012), kept apart.
    assert set(exported) == {"default", "urn:trails:scope:tenant-1", "urn:trails:scope:other",
                             "urn:trails:minted"}
    manifests = _graph(exported.pop("urn:trails:minted"))
    documents = {d for data in exported.values()
                 for d in _graph(data).subjects(RDF.type, TRAILS.Document)}
    assert set(manifests.subjects(TRAILS.minted, None)) == documents  # one for each document
    for name, data in exported.items():
        graph = _graph(data)
        documents = set(graph.subjects(RDF.type, TRAILS.Document))
        chunks = set(graph.subjects(RDF.type, TRAILS.Chunk))
        assert documents and chunks, f"{name} has nothing to validate"
        conforms, found = _violations(graph, shapes)
        assert conforms, f"{name}: {sorted(found)}"
    default = _graph(exported["default"])
    assert len(set(default.subjects(RDF.type, TRAILS.Document))) == 7  # 5 files + 2 records
    dated = set(default.objects(None, SCHEMA.dateCreated))
    assert {(str(d), d.datatype) for d in dated} == {("2024-05-01", XSD.date),
                                                     ("2024-05-01T10:20:30+00:00", XSD.dateTime)}


def _valid_default(exported) -> rdflib.Graph:
    return _graph(exported["default"])


def _a_chunk(graph: rdflib.Graph) -> rdflib.URIRef:
    return min(graph.subjects(RDF.type, TRAILS.Chunk))


def _a_document(graph: rdflib.Graph) -> rdflib.URIRef:
    return min(graph.subjects(RDF.type, TRAILS.Document))


def _set(graph: rdflib.Graph, subject, predicate, value) -> rdflib.URIRef:
    graph.remove((subject, predicate, None))
    graph.add((subject, predicate, value))
    return subject


def _break_is_part_of(g: rdflib.Graph):
    chunk = _a_chunk(g)
    g.remove((chunk, SCHEMA.isPartOf, None))
    return chunk, SCHEMA.isPartOf


def _break_hash(g: rdflib.Graph):
    return _set(g, _a_document(g), TRAILS.contentHash, rdflib.Literal("not-a-sha256")), TRAILS.contentHash


def _break_hash_case(g: rdflib.Graph):
    doc = _a_document(g)
    upper = str(g.value(doc, TRAILS.contentHash)).upper()
    assert len(upper) == 64
    return _set(g, doc, TRAILS.contentHash, rdflib.Literal(upper)), TRAILS.contentHash


def _break_count_type(g: rdflib.Graph):
    return _set(g, _a_document(g), TRAILS.chunkCount, rdflib.Literal("1")), TRAILS.chunkCount


def _break_date_type(g: rdflib.Graph):
    return _set(g, _a_document(g), SCHEMA.dateCreated, rdflib.Literal("2024-05-01")), SCHEMA.dateCreated


def _break_two_names(g: rdflib.Graph):
    doc = _a_document(g)
    g.add((doc, SCHEMA.name, rdflib.Literal("A second name")))
    return doc, SCHEMA.name


def _break_parent_class(g: rdflib.Graph):
    orphan = rdflib.URIRef("trails://local/doc/not-a-document")
    return _set(g, _a_chunk(g), SCHEMA.isPartOf, orphan), SCHEMA.isPartOf


def _break_position(g: rdflib.Graph):
    minus = rdflib.Literal("-1", datatype=XSD.integer)
    return _set(g, _a_chunk(g), SCHEMA.position, minus), SCHEMA.position


def _break_version(g: rdflib.Graph):
    chunk = _a_chunk(g)
    g.remove((chunk, TRAILS.version, None))
    return chunk, TRAILS.version


def _break_offset(g: rdflib.Graph):
    return _set(g, _a_chunk(g), TRAILS.startOffset, rdflib.Literal("0")), TRAILS.startOffset


BREAKAGES = [_break_is_part_of, _break_hash, _break_hash_case, _break_count_type,
             _break_date_type, _break_two_names, _break_parent_class, _break_position,
             _break_version, _break_offset]


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__[len("_break_"):])
def test_a_broken_graph_fails_on_the_broken_property(exported, shapes, breakage):
    graph = _valid_default(exported)
    focus, path = breakage(graph)
    conforms, found = _violations(graph, shapes)
    assert not conforms
    assert (str(focus), str(path)) in found, sorted(found)


def test_the_issue_example_missing_is_part_of_and_bad_hash(exported, shapes):
    graph = _valid_default(exported)
    chunk, _ = _break_is_part_of(graph)
    doc, _ = _break_hash(graph)
    conforms, found = _violations(graph, shapes)
    assert not conforms
    assert {(str(chunk), str(SCHEMA.isPartOf)), (str(doc), str(TRAILS.contentHash))} <= found


def test_every_trails_term_written_is_declared_in_the_ontology(exported):
    ontology = rdflib.Graph().parse(ONTOLOGY, format="turtle")
    declared = {s for s in ontology.subjects(RDF.type, None) if str(s).startswith(str(TRAILS))}
    used = set()
    for data in exported.values():
        graph = _graph(data)
        used |= {p for p in graph.predicates() if str(p).startswith(str(TRAILS))}
        used |= {o for o in graph.objects(None, RDF.type) if str(o).startswith(str(TRAILS))}
    assert used, "nothing in the trails namespace was written"
    assert used <= declared, sorted(str(t) for t in used - declared)
