"""Your own RDF in and out: ``kg.load`` / ``kg.dump`` / ``kg.to_rdflib`` on both graph
backends, ``trails load`` / ``trails export``, and ingestion refusing RDF files."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.errors import ConfigurationError, RdfSyntaxError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph, SparqlEndpointGraph
from trails.testing import fresh_context
from trails.testing.servers.oxigraph import OxigraphServer

EX = "https://ex.org/"
TURTLE = f"""@prefix ex: <{EX}> .
ex:Memo <http://www.w3.org/2000/01/rdf-schema#subClassOf> ex:Record .
ex:alice ex:name "Alice"@en ; ex:age 42 ; ex:knows [ ex:name "Bob" ] .
"""


def canonical(quads) -> ox.Dataset:
    dataset = ox.Dataset(quads)
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return dataset


iris = st.sampled_from([f"{EX}{n}" for n in "abcdef"]).map(ox.NamedNode)
literals = st.one_of(
    st.text(max_size=12).map(ox.Literal),
    st.integers(-10**6, 10**6).map(ox.Literal),
    st.tuples(st.text(max_size=6), st.sampled_from(["en", "de-ch"])).map(
        lambda t: ox.Literal(t[0], language=t[1])),
)
blanks = st.sampled_from(["b1", "b2"]).map(ox.BlankNode)
graphs = st.sampled_from([ox.DefaultGraph(), ox.NamedNode("urn:trails:scope:legal"),
                          ox.NamedNode("urn:trails:scope:hr")])
quads = st.lists(st.builds(ox.Quad, st.one_of(iris, blanks), iris,
                           st.one_of(iris, literals, blanks), graphs), max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=quads, fmt=st.sampled_from(["trig", "nquads", "jsonld"]))
def test_dump_then_load_gives_the_same_dataset(data, fmt):
    source = OxigraphGraph()
    source.extend(data)
    text = source.dump(format=fmt)
    target = OxigraphGraph()
    target.load(text, format=fmt)
    assert canonical(target._quads(None)) == canonical(source._quads(None))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=quads, fmt=st.sampled_from(["turtle", "ntriples", "rdfxml", "n3"]))
def test_one_scope_round_trips_through_every_triple_format(data, fmt):
    source = OxigraphGraph()
    source.extend(data)
    text = source.dump(format=fmt, scope="legal")
    target = OxigraphGraph()
    target.load(text, format=fmt, scope="legal")
    legal = ox.NamedNode("urn:trails:scope:legal")
    assert canonical(target._quads("legal")) == canonical(
        q for q in source._quads("legal") if q.graph_name == legal)


def test_loaded_triples_are_confined_to_their_scope(tmp_path):
    (tmp_path / "facts.ttl").write_text(TURTLE)
    kg = OxigraphGraph()
    assert kg.load(tmp_path / "facts.ttl", scope="legal") == 5
    assert kg.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["legal"])
    assert not kg.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["default"])
    assert kg.scopes() == ["default", "legal"]


def test_a_syntax_error_names_the_place_and_loads_nothing(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text(TURTLE + "ex:carol ex:name .\n")
    kg = OxigraphGraph()
    with pytest.raises(RdfSyntaxError, match=r"bad\.ttl.*line 4"):
        kg.load(bad)
    assert len(kg) == 0


def test_formats_are_named_or_guessed_or_refused(tmp_path):
    kg = OxigraphGraph()
    with pytest.raises(ConfigurationError, match="unknown RDF format 'yaml'"):
        kg.load(TURTLE, format="yaml")
    odd = tmp_path / "facts.data"
    odd.write_text(TURTLE)
    with pytest.raises(ConfigurationError, match="cannot tell the RDF format"):
        kg.load(odd)
    with pytest.raises(ConfigurationError, match="names its own graphs"):
        kg.load("<urn:a> <urn:b> <urn:c> <urn:g> .", format="nquads", scope="legal")
    assert kg.load(TURTLE) == 5  # text defaults to Turtle


def test_rdflib_both_ways():
    kg = OxigraphGraph()
    kg.load(TURTLE, scope="legal")
    dataset = kg.to_rdflib()
    assert len(dataset) == 5
    assert (rdflib.URIRef(f"{EX}alice"), rdflib.URIRef(f"{EX}age"), rdflib.Literal(42)) in \
        dataset.graph(rdflib.URIRef("urn:trails:scope:legal"))
    graph = rdflib.Graph()
    graph.parse(data=TURTLE, format="turtle")
    other = OxigraphGraph()
    assert other.load(graph) == 5
    assert other.query(f'ASK {{ <{EX}alice> <{EX}name> "Alice"@en }}')


def test_a_loaded_ontology_joins_ingested_documents_in_a_filter():
    with fresh_context() as ctx:
        ingest_all([Document("memo", "mem", "Rails memo about routing.",
                             metadata={"kind": "memo"}),
                    Document("note", "mem", "Rails note about routing.",
                             metadata={"kind": "note"})], ctx=ctx)
        ctx.kg.load(f"""@prefix ex: <{EX}> . @prefix meta: <https://trails.dev/meta#> .
            <trails://local/doc/memo> a ex:Memo .
            ex:Memo <http://www.w3.org/2000/01/rdf-schema#subClassOf> ex:Record .""")
        hits = retrieve("rails routing", ctx, sparql_filter=f"""
            SELECT ?c WHERE {{ ?c schema:isPartOf ?doc . ?doc a/rdfs:subClassOf* <{EX}Record> }}""")
        assert {h.document for h in hits} == {"trails://local/doc/memo"}


def test_the_remote_graph_loads_and_dumps_the_same(tmp_path):
    with OxigraphServer(tmp_path / "server") as server:
        remote = SparqlEndpointGraph(server.query_url)
        assert remote.load(TURTLE, scope="legal") == 5
        local = OxigraphGraph()
        local.load(remote.dump(format="nquads"), format="nquads")
        assert canonical(local._quads(None)) == canonical(remote._quads(None))
        assert remote.scopes() == ["default", "legal"]
        assert len(remote.to_rdflib(scope="legal")) == 5
        remote.close()


runner = CliRunner()


def test_load_and_export_on_the_command_line(tmp_path):
    db = tmp_path / "kb"
    (tmp_path / "facts.ttl").write_text(TURTLE)
    (tmp_path / "bad.ttl").write_text("ex:a ex:b .")
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:8"]).exit_code == 0
    done = runner.invoke(app, ["--db", str(db), "load", str(tmp_path / "facts.ttl"),
                               "--scope", "legal"])
    assert done.exit_code == 0 and "5 quads loaded" in done.output
    failed = runner.invoke(app, ["--db", str(db), "load", str(tmp_path / "bad.ttl")])
    assert failed.exit_code == 1 and "Traceback" not in failed.output
    out = tmp_path / "legal.nt"
    done = runner.invoke(app, ["--db", str(db), "export", "--format", "ntriples",
                               "--scope", "legal", "-o", str(out)])
    assert done.exit_code == 0 and len(out.read_text().splitlines()) == 5
    done = runner.invoke(app, ["--db", str(db), "export", "--format", "nquads"])
    assert done.exit_code == 0 and "urn:trails:scope:legal" in done.output
    typo = runner.invoke(app, ["--db", str(db), "export", "--scope", "legl"])
    assert typo.exit_code == 1
    refused = runner.invoke(app, ["--db", str(db), "ingest", str(tmp_path / "facts.ttl")])
    assert refused.exit_code == 2 and "trails load" in refused.output + str(refused.stderr)
