"""``load`` / ``dump`` / ``to_rdflib`` on a graph behind a SPARQL endpoint (a real
``oxigraph serve``): the same answers as the embedded graph, one request per load."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
import rdflib
import rdflib.compare
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdf_strategies import LEGAL, OTHER, canonical, in_graph, quads
from trails.errors import ConfigurationError, RdfSyntaxError
from trails.kg import OxigraphGraph, SparqlEndpointGraph
from trails.testing.servers.oxigraph import OxigraphServer

EX = "https://ex.org/"
TURTLE = f"""@prefix ex: <{EX}> .
ex:alice ex:name "Alice"@en ; ex:age 42 ; ex:knows [ ex:name "Bob" ] .
"""


# rdflib 7.6's own N-Quads parser and serialiser call its deprecated Dataset.default_context.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Dataset.(default_context|contexts) is deprecated:DeprecationWarning")

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with OxigraphServer(tmp_path_factory.mktemp("oxigraph")) as running:
        yield running


@pytest.fixture
def remote(server):
    kg = SparqlEndpointGraph(server.query_url, batch_size=2)
    kg.update("DROP SILENT ALL")
    yield kg
    kg.update("DROP SILENT ALL")
    kg.close()


def on_server(kg: SparqlEndpointGraph) -> list[ox.Quad]:
    """Everything the server holds, read with its own N-Quads export (the Graph Store
    Protocol), not with the code under test."""
    response = kg.client.get(kg.query_url.rsplit("/", 1)[0] + "/store",
                             headers={"Accept": "application/n-quads"})
    response.raise_for_status()
    return list(ox.parse(response.content, format=ox.RdfFormat.N_QUADS))


def updates_sent(kg: SparqlEndpointGraph) -> list[str]:
    sent: list[str] = []
    kg.client.event_hooks["request"].append(
        lambda request: sent.append(request.url.path) if request.url.path.endswith("/update")
        else None)
    return sent


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=quads(max_size=15), fmt=st.sampled_from(["trig", "nquads", "jsonld"]))
def test_load_then_dump_on_the_server_gives_the_same_dataset(remote, data, fmt):
    remote.update("DROP SILENT ALL")
    if not in_graph(data, LEGAL):  # a scope that holds nothing is refused
        data = [*data, ox.Quad(ox.NamedNode(f"{EX}s"), ox.NamedNode(f"{EX}p"), ox.Literal("x"),
                               LEGAL)]
    text = ox.serialize(data, format=ox.RdfFormat.N_QUADS) or b""
    remote.load(text, format="nquads")
    assert canonical(on_server(remote)) == canonical(data)
    local = OxigraphGraph()
    local.load(remote.dump(format=fmt).encode(), format=fmt)
    assert canonical(local.store) == canonical(data)
    legal = OxigraphGraph()
    legal.load(remote.dump(format="turtle", scope="legal").encode(), scope="legal")
    assert canonical(legal.store) == canonical(in_graph(data, LEGAL))


def test_an_export_of_a_scope_the_server_does_not_hold_is_refused(remote):
    from trails.errors import UnknownScopeError

    remote.update("DROP SILENT ALL")
    remote.load(f'<{EX}a> <{EX}name> "legal" .', scope="legal")
    with pytest.raises(UnknownScopeError, match="'legl'"):
        remote.dump(format="turtle", scope="legl")


def test_each_triple_is_exported_in_its_own_graph(remote):
    remote.load(f'<{EX}a> <{EX}name> "legal" .', scope="legal")
    remote.load(f'<{EX}a> <{EX}name> "default" .')
    remote.load(f'<{EX}a> <{EX}name> "other" <{OTHER.value}> .', format="nquads")
    assert sorted(remote.dump(format="nquads").splitlines()) == [
        f'<{EX}a> <{EX}name> "default" .',
        f'<{EX}a> <{EX}name> "legal" <urn:trails:scope:legal> .',
        f'<{EX}a> <{EX}name> "other" <{OTHER.value}> .',
    ]
    assert remote.dump(format="ntriples") == f'<{EX}a> <{EX}name> "default" .\n'
    assert remote.dump(format="ntriples", scope="legal") == f'<{EX}a> <{EX}name> "legal" .\n'
    assert remote.scopes() == ["default", "legal"]


def test_a_blank_node_in_two_graphs_stays_one_node(remote):
    shared = ox.BlankNode()
    data = [ox.Quad(shared, ox.NamedNode(f"{EX}name"), ox.Literal("in default")),
            ox.Quad(shared, ox.NamedNode(f"{EX}name"), ox.Literal("in legal"), LEGAL)]
    remote.load(ox.serialize(data, format=ox.RdfFormat.N_QUADS), format="nquads")
    local = OxigraphGraph()
    local.load(remote.dump(format="trig").encode())
    assert canonical(local.store) == canonical(data)


def test_a_load_is_one_request_whatever_the_batch_size(remote):
    sent = updates_sent(remote)
    assert remote.load(TURTLE, scope="legal") == 4  # batch_size=2
    assert len(sent) == 1
    assert canonical(on_server(remote)) == canonical(_legal(TURTLE))


def _legal(text: str) -> list[ox.Quad]:
    return [ox.Quad(q.subject, q.predicate, q.object, LEGAL)
            for q in ox.parse(text.encode(), format=ox.RdfFormat.TURTLE)]


def test_a_syntax_error_sends_nothing(remote, tmp_path):
    sent = updates_sent(remote)
    bad = tmp_path / "bad.ttl"
    bad.write_text(TURTLE + "ex:carol ex:name .\n")
    with pytest.raises(RdfSyntaxError, match=r"bad\.ttl is not valid Turtle, line 3, column 18"):
        remote.load(bad)
    assert sent == [] and on_server(remote) == []


def test_a_graph_named_by_a_blank_node_is_refused_before_sending(remote):
    sent = updates_sent(remote)
    with pytest.raises(ConfigurationError, match="graph named by a blank node.*nothing was loaded"):
        remote.load(f'<{EX}a> <{EX}name> "A" _:g .', format="nquads")
    assert sent == [] and on_server(remote) == []


def test_scoped_queries_see_what_was_loaded_into_their_scope(remote):
    remote.load(TURTLE, scope="legal")
    assert remote.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["legal"])
    assert not remote.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["default"])


def test_to_rdflib_and_back_through_the_server(remote):
    remote.load(TURTLE, scope="legal")
    dataset = remote.to_rdflib()
    expected = rdflib.Graph().parse(data=TURTLE, format="turtle")
    assert rdflib.compare.isomorphic(dataset.graph(rdflib.URIRef("urn:trails:scope:legal")),
                                     expected)
    remote.update("DROP SILENT ALL")
    assert remote.load(dataset) == 4
    assert canonical(on_server(remote)) == canonical(_legal(TURTLE))


def test_a_file_loaded_again_with_replace_replaces_it_on_the_server(remote, tmp_path):
    """One update on the server: the triples (and blank nodes) the file no longer holds go,
    and the record of the load answers no query of every graph twice."""
    onto = tmp_path / "o.ttl"
    onto.write_text(TURTLE)
    remote.load(onto, scope="legal", replace=True)
    remote.load(onto, scope="legal", replace=True)
    names = remote.query(f"SELECT ?n WHERE {{ ?x <{EX}name> ?n }}")
    assert sorted(str(r["n"]) for r in names) == ["Alice", "Bob"]
    onto.write_text(f'@prefix ex: <{EX}> .\nex:alice ex:name "Alicia"@en .\n')
    sent = updates_sent(remote)
    assert remote.load(onto, scope="legal", replace=True) == 1
    assert len(sent) == 1
    assert canonical([q for q in on_server(remote) if q.graph_name == LEGAL]) == canonical(
        _legal(onto.read_text()))


def test_a_source_emptied_since_its_replace_load_is_refused_on_a_server(remote):
    """As on the embedded graph (tests/test_load_emptied.py): the server keeps every triple."""
    remote.load(TURTLE.encode(), format="turtle", replace="people")
    before = sorted(map(str, on_server(remote)))
    with pytest.raises(ConfigurationError, match="people holds no triples now.* 4 triples"):
        remote.load(b"", format="turtle", replace="people")
    assert sorted(map(str, on_server(remote))) == before
    assert remote.load(b"", format="turtle", replace="people", allow_empty=True) == 0
    assert on_server(remote) == []
