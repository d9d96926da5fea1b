"""Your own RDF in and out on the embedded graph: ``kg.load`` / ``kg.dump`` / ``kg.to_rdflib``.

The remote backend is in tests/test_graph_io_remote.py, the commands (and ingestion refusing
RDF files) in tests/test_graph_io_cli.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
import rdflib.compare
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdf_strategies import HR, LEGAL, OTHER, canonical, in_graph, quads
from trails import retrieve
from trails.errors import ConfigurationError, MissingExtraError, RdfSyntaxError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.testing import fresh_context

EX = "https://ex.org/"
TURTLE = f"""@prefix ex: <{EX}> .
ex:Memo <http://www.w3.org/2000/01/rdf-schema#subClassOf> ex:Record .
ex:alice ex:name "Alice"@en ; ex:age 42 ; ex:knows [ ex:name "Bob" ] .
"""
RDFXML = ('<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
          f'xmlns:ex="{EX}"><rdf:Description rdf:about="{EX}a"><ex:name>A</ex:name>'
          '</rdf:Description></rdf:RDF>')
ALICE = ox.NamedNode(f"{EX}alice")
NAME = ox.NamedNode(f"{EX}name")
# rdflib 7.6's own N-Quads parser and serialiser call its deprecated Dataset.default_context.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Dataset.(default_context|contexts) is deprecated:DeprecationWarning")
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def everything(kg: OxigraphGraph) -> list[ox.Quad]:
    """Every quad but the records of what each file loaded (trails' own, ADR 0051)."""
    return [q for q in kg.store if not (isinstance(q.graph_name, ox.NamedNode)
                                        and q.graph_name.value.startswith("urn:trails:loaded:"))]


def filled(data: list[ox.Quad]) -> OxigraphGraph:
    kg = OxigraphGraph()
    kg.extend(data)
    return kg


# -- round trips -------------------------------------------------------------------------------

@SLOW
@given(data=quads(), fmt=st.sampled_from(["trig", "nquads", "jsonld"]))
def test_dump_then_load_gives_the_same_dataset(data, fmt):
    target = OxigraphGraph()
    target.load(filled(data).dump(format=fmt).encode(), format=fmt)
    assert canonical(everything(target)) == canonical(data)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=quads(), suffix=st.sampled_from([".trig", ".nq", ".jsonld"]))
def test_a_dump_to_a_file_loads_back_by_its_suffix(data, suffix, tmp_path):
    path = tmp_path / f"backup{suffix}"
    assert filled(data).dump(path) is None
    target = OxigraphGraph()
    assert target.load(path) == len(ox.Dataset(data))
    assert canonical(everything(target)) == canonical(data)


@SLOW
@given(data=quads(xml=True), fmt=st.sampled_from(["turtle", "ntriples", "n3", "rdfxml"]))
def test_one_scope_round_trips_through_every_triple_format(data, fmt):
    if not in_graph(data, LEGAL):  # a scope that holds nothing is refused (see below)
        data = [*data, ox.Quad(ox.NamedNode(f"{EX}s"), NAME, ox.Literal("x"), LEGAL)]
    text = filled(data).dump(format=fmt, scope="legal")
    target = OxigraphGraph()
    target.load(text.encode(), format=fmt, scope="legal")
    assert canonical(everything(target)) == canonical(in_graph(data, LEGAL))


@SLOW
@given(data=quads(), fmt=st.sampled_from(["turtle", "ntriples", "n3"]))
def test_the_default_scope_round_trips_through_triple_formats(data, fmt):
    text = filled(data).dump(format=fmt)  # a triple format without scope: the default scope
    target = OxigraphGraph()
    target.load(text.encode(), format=fmt)
    assert canonical(everything(target)) == canonical(in_graph(data, ox.DefaultGraph()))


@SLOW
@given(data=quads(), fmt=st.sampled_from(["trig", "nquads", "jsonld"]))
def test_one_scope_in_a_dataset_format_keeps_its_graph(data, fmt):
    if not in_graph(data, HR):  # a scope that holds nothing is refused (see below)
        data = [*data, ox.Quad(ox.NamedNode(f"{EX}s"), NAME, ox.Literal("x"), HR)]
    text = filled(data).dump(format=fmt, scope="hr")
    target = OxigraphGraph()
    target.load(text.encode(), format=fmt)
    assert canonical(everything(target)) == canonical(in_graph(data, HR))


@SLOW
@given(data=quads(graphs=[ox.DefaultGraph(), LEGAL, OTHER]))
def test_rdflib_round_trip_gives_the_same_dataset(data):
    target = OxigraphGraph()
    target.load(filled(data).to_rdflib())
    assert canonical(everything(target)) == canonical(data)


# -- what load reads ---------------------------------------------------------------------------

def test_a_path_a_file_name_and_text_are_told_apart(tmp_path, monkeypatch):
    (tmp_path / "facts.ttl").write_text(TURTLE)
    monkeypatch.chdir(tmp_path)
    kg = OxigraphGraph()
    assert kg.load(tmp_path / "facts.ttl") == 5           # a Path
    assert kg.load(str(tmp_path / "facts.ttl")) == 5      # a str naming a file
    assert kg.load("facts.ttl") == 5                      # relative to the working directory
    assert kg.load(TURTLE) == 5                           # several lines: content
    assert kg.load(TURTLE.encode()) == 5                  # bytes: content
    assert kg.load(f'<{EX}x> <{EX}name> "X" .') == 1      # one line that names no file
    (tmp_path / "oneliner").write_text(f'<{EX}y> <{EX}name> "Y" .')
    assert kg.load(Path("oneliner"), format="ntriples") == 1


def test_a_file_name_read_from_a_list_keeps_naming_the_file(tmp_path):
    """A file name with the newline of the line it was read from ("onto.ttl\\n") was taken
    for RDF text: a syntax error at line 1, column 1, for a file that exists or not."""
    (tmp_path / "onto.ttl").write_text(TURTLE)
    (tmp_path / "files.txt").write_text(f"{tmp_path / 'onto.ttl'}\n{tmp_path / 'gone.ttl'}\r\n")
    with open(tmp_path / "files.txt", newline="") as listed:
        present, missing = listed.readlines()
    kg = OxigraphGraph()
    assert kg.load(present) == 5
    assert kg.load(f"  {present}") == 5
    with pytest.raises(ConfigurationError, match=f"no such file: {tmp_path / 'gone.ttl'};"):
        kg.load(missing)
    assert kg.load(f'<{EX}a> <{EX}name> "A" .\n') == 1  # one line of RDF is still RDF


def test_a_missing_file_is_no_such_file_not_a_syntax_error(tmp_path):
    kg = OxigraphGraph()
    with pytest.raises(ConfigurationError, match=r"no such file: .*facts\.ttl"):
        kg.load(str(tmp_path / "facts.ttl"))
    with pytest.raises(ConfigurationError, match=r"no such file: .*facts\.nq"):
        kg.load(tmp_path / "facts.nq")
    with pytest.raises(RdfSyntaxError, match=r"no file 'factz' exists"):
        kg.load("factz")  # no RDF suffix: read as text, and the error says so
    with pytest.raises(ConfigurationError, match="cannot read"):
        kg.load(tmp_path)  # a folder
    with pytest.raises(TypeError, match="got int"):
        kg.load(42)
    assert len(kg) == 0


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("facts.ttl", TURTLE, 5),
    ("facts.trig", f"<{EX}g> {{ <{EX}a> <{EX}name> \"A\" }}", 1),
    ("facts.nt", f'<{EX}a> <{EX}name> "A" .\n<{EX}b> <{EX}name> "B" .', 2),
    ("facts.nq", f'<{EX}a> <{EX}name> "A" <{EX}g> .', 1),
    ("facts.n3", TURTLE, 5),
    ("facts.rdf", RDFXML, 1),
    ("facts.owl", RDFXML, 1),
    ("facts.xml", RDFXML, 1),
    ("facts.jsonld", f'{{"@id": "{EX}a", "{EX}name": "A"}}', 1),
    ("facts.json", f'[{{"@id": "{EX}a", "{EX}name": "A"}}]', 1),
])
def test_the_format_comes_from_the_suffix(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text)
    kg = OxigraphGraph()
    assert kg.load(tmp_path / name) == expected
    assert kg.query(f"ASK {{ ?s <{EX}name> ?o }}")


def test_formats_are_named_or_guessed_or_refused(tmp_path):
    kg = OxigraphGraph()
    with pytest.raises(ConfigurationError, match="unknown RDF format 'yaml'.*turtle, trig"):
        kg.load(TURTLE, format="yaml")
    odd = tmp_path / "facts.data"
    odd.write_text(TURTLE)
    with pytest.raises(ConfigurationError, match=r"cannot tell the RDF format.*\.jsonld.*\.ttl"):
        kg.load(odd)
    assert kg.load(odd, format="turtle") == 5
    assert kg.load(odd, format="text/turtle") == 5  # a media type names a format too
    assert kg.load(f'<{EX}a> <{EX}name> "A" <{EX}g> .', format="nq") == 1
    assert kg.load(f'  [{{"@id": "{EX}j", "{EX}name": "J"}}]') == 1  # JSON-LD by its look
    assert kg.query(f'ASK {{ <{EX}j> <{EX}name> "J" }}')



def test_n_quads_text_without_a_format_loads_as_n_quads():
    """A dump's N-Quads given back as text (kg.load(kg.dump(format="nquads"))) was read as
    TriG and refused at its first graph name ("A dot is expected")."""
    source = OxigraphGraph()
    source.load(f'<{EX}a> <{EX}name> "A" <urn:trails:scope:legal> .\n'
                f'<{EX}b> <{EX}name> "B" .\n_:x <{EX}name> "X" <{EX}g> .', format="nquads")
    kg = OxigraphGraph()
    assert kg.load(source.dump(format="nquads")) == 3
    assert canonical(everything(kg)) == canonical(everything(source))
    # A mistake in N-Quads text is named where it is, as N-Quads.
    with pytest.raises(RdfSyntaxError, match="not valid N-Quads, line 2") as raised:
        kg.load(f'<{EX}a> <{EX}name> "A" <{EX}g> .\n<{EX}b> <{EX}name> "B" oops .\n')
    assert raised.value.line == 2
    # Turtle's mistakes are still Turtle's.
    with pytest.raises(RdfSyntaxError, match="not valid Turtle/TriG, line 4"):
        kg.load(TURTLE + "ex:carol ex:name .\n")
    assert len(kg) == 3


# -- errors: where, and nothing loaded ---------------------------------------------------------

@pytest.mark.parametrize(("fmt", "text", "line", "column"), [
    ("turtle", TURTLE + "ex:carol ex:name .\n", 4, 18),
    ("ntriples", f'<{EX}a> <{EX}name> "A" .\n<{EX}b> <{EX}name> .\n', 2, 42),  # line end
    ("nquads", f'<{EX}a> <{EX}name> "A" <{EX}g> <{EX}h> .\n', 1, 65),  # the fifth term
    ("trig", f'<{EX}g> {{\n  <{EX}a> <{EX}name> "A" \n', 3, 1),  # the end of the text
    ("jsonld", f'{{"@id": "{EX}a",\n "{EX}name": {{"@value": 1 ', 2, 38),  # the end
])
def test_a_syntax_error_names_the_line_and_column_and_loads_nothing(tmp_path, fmt, text, line,
                                                                     column):
    kg = OxigraphGraph()
    kg.load(TURTLE)
    before = canonical(everything(kg))
    bad = tmp_path / f"bad.{fmt}"
    bad.write_text(text)
    with pytest.raises(RdfSyntaxError) as caught:
        kg.load(bad, format=fmt)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(bad), line, column)
    assert f"{bad}" in str(error) and f"line {line}, column {column}" in str(error)
    assert "nothing was loaded" in str(error)
    assert canonical(everything(kg)) == before


@pytest.mark.parametrize("syntax, text", [
    ("OWL/XML", ('<?xml version="1.0"?>\n<!-- saved by an editor -->\n<Ontology xmlns='
                '"http://www.w3.org/2002/07/owl#" ontologyIRI="https://ex.org/o">\n'
                '<Declaration><Class IRI="https://ex.org/Company"/></Declaration></Ontology>\n')),
    ("OWL functional syntax", ("# exported\nPrefix(:=<https://ex.org/o#>)\n"
                              "Ontology(<https://ex.org/o>\nDeclaration(Class(:Company)))\n")),
    ("OWL Manchester syntax", ("Prefix: : <https://ex.org/o#>\nOntology: <https://ex.org/o>\n"
                              "Class: Company\n")),
])
def test_an_owl_file_in_a_syntax_that_is_no_rdf_says_so(tmp_path, syntax, text):
    """Protégé saves OWL/XML, functional and Manchester syntax under .owl too: loading one
    said only "XML namespaces are required in RDF/XML" or "Unexpected text event"."""
    path = tmp_path / "ontology.owl"
    path.write_text(text)
    with pytest.raises(RdfSyntaxError, match=f"this is {syntax}, not RDF: save the ontology "
                                             "as RDF/XML or Turtle"):
        OxigraphGraph().load(path)
    with pytest.raises(RdfSyntaxError) as turtle:  # an RDF mistake gets no such hint
        OxigraphGraph().load(b"PREFIX : <https://ex.org/o#>\n:a :b .\n", format="turtle")
    assert "OWL" not in str(turtle.value)


def test_json_ld_with_a_context_on_the_web_says_what_to_do(tmp_path):
    """JSON-LD naming its @context by URL (schema.org's, the usual) failed with "No
    LoadDocumentCallback has been set to load remote contexts": no word of what to do."""
    path = tmp_path / "people.jsonld"
    path.write_text('[{"@context": ["https://schema.org/", {"ex": "https://ex.org/"}], '
                    '"@id": "ex:alice", "name": "Alice"}]')
    with pytest.raises(RdfSyntaxError, match="its @context https://schema.org/ is a document "
                                             "on the web, which load does not fetch: put the "
                                             "context itself in the file"):
        OxigraphGraph().load(path)
    inline = '{"@context": {"name": "https://schema.org/name"}, "@id": "https://ex.org/a", '
    assert OxigraphGraph().load(inline + '"name": "A"}') == 1


def test_an_error_after_many_good_triples_still_loads_nothing():
    good = "".join(f'<{EX}s{i}> <{EX}name> "n{i}" .\n' for i in range(20_000))
    kg = OxigraphGraph()
    with pytest.raises(RdfSyntaxError, match="line 20001"):
        kg.load(good + f"<{EX}broken> <{EX}name> .\n")
    assert len(kg) == 0
    assert kg.load(good) == 20_000


def test_rdfxml_errors_without_a_position_still_name_the_file(tmp_path):
    bad = tmp_path / "bad.rdf"
    bad.write_text("<rdf:RDF><rdf:Description/></rdf:RDF>")
    with pytest.raises(RdfSyntaxError, match=r"bad\.rdf is not valid RDF/XML: Unknown prefix rdf"):
        OxigraphGraph().load(bad)


def test_a_read_only_graph_refuses_to_load(tmp_path):
    OxigraphGraph(tmp_path / "kg").close()
    reader = OxigraphGraph(tmp_path / "kg", read_only=True)
    with pytest.raises(ConfigurationError, match="read-only"):
        reader.load(TURTLE)
    assert len(reader) == 0


# -- scopes ------------------------------------------------------------------------------------

def test_loaded_triples_are_confined_to_their_scope(tmp_path):
    (tmp_path / "facts.ttl").write_text(TURTLE)
    kg = OxigraphGraph()
    assert kg.load(tmp_path / "facts.ttl", scope="legal") == 5
    assert kg.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["legal"])
    assert not kg.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["default"])
    assert not kg.query(f"ASK {{ GRAPH ?g {{ <{EX}alice> ?p ?o }} }}", scopes=["hr"])
    assert kg.scopes() == ["default", "legal"]
    kg.load(TURTLE)  # no scope: the default scope
    assert kg.query(f"ASK {{ <{EX}alice> ?p ?o }}", scopes=["default"])


def test_a_scope_takes_triples_and_refuses_rdf_that_names_its_own_graphs():
    kg = OxigraphGraph()
    trig_default_only = f'{{ <{EX}a> <{EX}name> "A" }} <{EX}b> <{EX}name> "B" .'
    assert kg.load(trig_default_only, format="trig", scope="legal") == 2
    assert kg.load(f'{{"@id": "{EX}c", "{EX}name": "C"}}', format="jsonld", scope="legal") == 1
    assert {str(q.graph_name) for q in everything(kg)} == {"<urn:trails:scope:legal>"}
    for fmt, text in [
        ("nquads", f'<{EX}a> <{EX}name> "A" .\n<{EX}a> <{EX}name> "A" <{EX}g> .'),
        ("trig", f'<{EX}g> {{ <{EX}a> <{EX}name> "A" }}'),
        ("jsonld", f'{{"@id": "{EX}g", "@graph": [{{"@id": "{EX}a", "{EX}name": "A"}}]}}'),
    ]:
        with pytest.raises(ConfigurationError, match=rf"names graphs of its own \(<{EX}g>\)"):
            kg.load(text, format=fmt, scope="hr")
    assert len(kg) == 3
    assert kg.load(f'<{EX}a> <{EX}name> "A" <urn:trails:scope:hr> .', format="nquads") == 1
    assert kg.scopes() == ["default", "hr", "legal"]


def test_a_graph_named_like_a_scope_is_that_scope_or_refused():
    """A TriG file's <urn:trails:scope:default> went into a named graph the default scope
    never reads, and <urn:trails:scope:legal/contracts> into one no scope reads: loaded, and
    never found by a search."""
    kg = OxigraphGraph()
    text = (f'<urn:trails:scope:default> {{ <{EX}a> <{EX}name> "A" }}\n'
            f'<urn:trails:scope:legal> {{ <{EX}b> <{EX}name> "B" }}')
    assert kg.load(text, format="trig") == 2
    assert {(str(q.subject), str(q.graph_name)) for q in everything(kg)} == {
        (f"<{EX}a>", "DEFAULT"), (f"<{EX}b>", "<urn:trails:scope:legal>")}
    assert kg.select_iris(f"SELECT ?iri WHERE {{ ?iri <{EX}name> ?n }}",
                          scopes=["default"]) == [f"{EX}a"]
    for graph in ("urn:trails:scope:", "urn:trails:scope:legal/contracts",
                  "urn:trails:scope:-x"):
        bad = f'<{EX}c> <{EX}name> "C" .\n<{EX}c> <{EX}name> "C" <{graph}> .'
        with pytest.raises(ConfigurationError, match=f"<{graph}>, which is no scope's"):
            kg.load(bad, format="nquads")
    assert len(kg) == 2  # nothing of them was loaded


@pytest.mark.parametrize("fmt, text", [
    ("n3", f'@prefix ex: <{EX}> .\nex:a ex:says {{ ex:b ex:is ex:c }} .\nex:d ex:name "D" .'),
    ("trig", f'@prefix ex: <{EX}> .\n_:g {{ ex:b ex:is ex:c }}\nex:d ex:name "D" .'),
    ("nquads", f'<{EX}b> <{EX}is> <{EX}c> _:g .\n<{EX}d> <{EX}name> "D" .'),
])
@pytest.mark.parametrize("scope", [None, "legal"])
def test_a_graph_named_by_a_blank_node_is_refused(fmt, text, scope):
    """An N3 formula's triples went into a graph named by a blank node, renamed on load: no
    scope read them and no query could name the graph again. Loaded, counted, never found."""
    kg = OxigraphGraph()
    with pytest.raises(ConfigurationError, match="graph named by a blank node.*nothing was "
                       "loaded") as caught:
        kg.load(text, format=fmt, scope=scope)
    assert "N3 formula { ... }" in str(caught.value)
    assert len(kg) == 0


@pytest.mark.parametrize("suffix, text", [
    (".ttl", f'@prefix ex: <{EX}> .\nex:a ex:name "A" .\n'),
    (".nt", f'<{EX}a> <{EX}name> "A" .\n'),
    (".nq", f'<{EX}a> <{EX}name> "A" <urn:trails:scope:legal> .\n'),
    (".trig", f'<urn:trails:scope:legal> {{ <{EX}a> <{EX}name> "A" }}\n'),
])
def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path, suffix, text):
    """Editors on Windows save UTF-8 with a byte-order mark first: Turtle, N-Triples, N-Quads
    and TriG files saved so were syntax errors at line 1, column 1, about an invisible
    character; a UTF-16 file was "Invalid UTF-8" with no word of what to do."""
    path = tmp_path / f"saved{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert OxigraphGraph().load(path) == 1
    assert OxigraphGraph().load(path.read_bytes(), format=suffix[1:]) == 1
    path.write_text(text, encoding="utf-16")
    kg = OxigraphGraph()
    with pytest.raises(RdfSyntaxError, match="UTF-16 text .*save it as UTF-8"):
        kg.load(path)
    assert len(kg) == 0


def test_a_bad_scope_name_is_refused_before_anything_loads():
    kg = OxigraphGraph()
    with pytest.raises(ValueError, match="scope names"):
        kg.load(TURTLE, scope="no spaces")
    assert len(kg) == 0


def test_retrieval_sees_loaded_facts_only_in_their_scope():
    memo, note = "trails://local/scope/legal/doc/memo", "trails://local/scope/legal/doc/note"
    restricted = f'<{memo}> <{EX}classification> "restricted" .'
    hidden = f"""SELECT ?c WHERE {{ ?c schema:isPartOf ?doc .
        FILTER NOT EXISTS {{ ?doc <{EX}classification> "restricted" }} }}"""
    with fresh_context() as ctx:
        docs = [Document("memo", "mem", "Rails memo about routing."),
                Document("note", "mem", "Rails note about routing.")]
        ingest_all(docs, ctx=ctx, scope="legal")
        ctx.kg.load(restricted)  # the default scope: a legal-scoped filter cannot see it
        hits = retrieve("rails routing", ctx, sparql_filter=hidden, scope="legal")
        assert {h.document for h in hits} == {memo, note}
        ctx.kg.load(restricted, scope="legal")
        hits = retrieve("rails routing", ctx, sparql_filter=hidden, scope="legal")
        assert {h.document for h in hits} == {note}


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


# -- load twice, blank nodes -------------------------------------------------------------------

def test_loading_again_adds_no_iri_triples_but_new_blank_nodes():
    kg = OxigraphGraph()
    assert kg.load(TURTLE) == 5
    assert kg.load(TURTLE) == 5  # the source held five quads again
    assert len(kg) == 7  # four IRI/literal triples once; the [ ex:name "Bob" ] node twice
    bobs = kg.query(f'SELECT ?b WHERE {{ <{EX}alice> <{EX}knows> ?b }}')
    assert len(bobs) == 2


# -- dump --------------------------------------------------------------------------------------

def test_dump_writes_each_format_and_turtle_is_readable():
    kg = OxigraphGraph()
    kg.load(f'<{EX}a> <https://schema.org/name> "A" .', scope="legal")
    kg.load(f'<{EX}b> <https://schema.org/name> "B" .')
    turtle = kg.dump(format="turtle", scope="legal")
    assert f'<{EX}a> schema:name "A" .' in turtle and "B" not in turtle
    assert kg.dump(format="ntriples") == f'<{EX}b> <https://schema.org/name> "B" .\n'
    assert sorted(kg.dump(format="nquads").splitlines()) == [
        f'<{EX}a> <https://schema.org/name> "A" <urn:trails:scope:legal> .',
        f'<{EX}b> <https://schema.org/name> "B" .']
    assert "<urn:trails:scope:legal> {" in kg.dump()  # TriG by default: every graph
    assert OxigraphGraph().dump(format="nquads") == ""


def test_dump_to_a_file_replaces_it_whole(tmp_path):
    kg = OxigraphGraph()
    kg.load(TURTLE)
    out = tmp_path / "out.nt"
    out.write_text("old content\n")
    assert kg.dump(out) is None
    assert len(out.read_text().splitlines()) == 5 and "old" not in out.read_text()
    with pytest.raises(ConfigurationError, match="missing does not exist"):
        kg.dump(tmp_path / "missing" / "out.nt")
    with pytest.raises(ConfigurationError, match="cannot tell the RDF format"):
        kg.dump(tmp_path / "out.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nt"]  # no temporary left


def test_an_export_of_a_scope_that_holds_nothing_is_refused(tmp_path):
    """kg.dump(path, scope="legl") (a typo) wrote an empty file over the last good export,
    and kg.to_rdflib(scope="legl") was an empty dataset: no word of the typo."""
    from trails.errors import UnknownScopeError

    kg = OxigraphGraph()
    kg.load(TURTLE, scope="legal")
    backup = tmp_path / "legal.ttl"
    kg.dump(backup, scope="legal")
    good = backup.read_text()
    for export in (lambda: kg.dump(backup, scope="legl"), lambda: kg.dump(scope="legl"),
                   lambda: kg.to_rdflib(scope="legl")):
        with pytest.raises(UnknownScopeError, match="'legl' .*did you mean 'legal'"):
            export()
    assert backup.read_text() == good and "Alice" in good
    assert kg.dump(format="turtle", scope="default") is not None  # always there, maybe empty


def test_a_triple_term_is_exported_only_where_it_loads_back(tmp_path):
    """An RDF 1.2 triple term (what an update's << s p o >> makes) exported as JSON-LD was a
    raw OSError (to a file: a StorageError blaming the disk), as N3 a file load could not
    read back, and to_rdflib an rdflib ParserError."""
    kg = OxigraphGraph()
    kg.update(f'INSERT DATA {{ << <{EX}a> <{EX}b> <{EX}c> >> <{EX}said> "so" }}')
    for fmt in ("trig", "nquads", "turtle", "rdfxml"):
        assert OxigraphGraph().load(kg.dump(format=fmt).encode(), format=fmt) == len(kg)
    backup = tmp_path / "backup.jsonld"
    backup.write_text("old")
    for fmt in ("jsonld", "n3"):
        with pytest.raises(ConfigurationError, match=f"{ox.RdfFormat.from_extension(fmt).name} "
                                                     "cannot hold the RDF 1.2 triple term"):
            kg.dump(format=fmt)
    with pytest.raises(ConfigurationError, match="export as TriG"):
        kg.dump(backup)
    assert backup.read_text() == "old"
    with pytest.raises(ConfigurationError, match="rdflib cannot hold"):
        kg.to_rdflib()


def test_rdfxml_refuses_what_xml_cannot_hold_instead_of_losing_it(tmp_path):
    kg = OxigraphGraph()
    kg.add(ox.Quad(ALICE, NAME, ox.Literal("bell\x07")))
    out = tmp_path / "out.rdf"
    out.write_text("kept")
    with pytest.raises(ConfigurationError, match="RDF/XML cannot hold.*U\\+0007"):
        kg.dump(out)
    assert out.read_text() == "kept"
    assert "bell\\u0007" in kg.dump(format="ntriples")


# -- rdflib ------------------------------------------------------------------------------------

def test_to_rdflib_is_what_rdflib_reads_from_the_same_file():
    kg = OxigraphGraph()
    kg.load(TURTLE, scope="legal")
    kg.load(f'<{EX}b> <{EX}name> "B" .')
    dataset = kg.to_rdflib()
    assert isinstance(dataset, rdflib.Dataset)
    expected = rdflib.Graph().parse(data=TURTLE, format="turtle")
    legal = dataset.graph(rdflib.URIRef("urn:trails:scope:legal"))
    assert rdflib.compare.isomorphic(legal, expected)
    assert legal.value(rdflib.URIRef(f"{EX}alice"), rdflib.URIRef(f"{EX}name")) == \
        rdflib.Literal("Alice", lang="en")
    assert set(dataset.default_graph) == {(rdflib.URIRef(f"{EX}b"), rdflib.URIRef(f"{EX}name"),
                                           rdflib.Literal("B"))}
    only_legal = kg.to_rdflib(scope="legal")
    assert len(list(only_legal.quads((None, None, None, None)))) == 5
    assert len(OxigraphGraph().to_rdflib()) == 0


def test_loading_rdflib_graphs_keeps_their_graphs_or_takes_a_scope():
    graph = rdflib.Graph().parse(data=TURTLE, format="turtle")
    kg = OxigraphGraph()
    assert kg.load(graph, scope="legal") == 5
    assert kg.query(f'ASK {{ <{EX}alice> <{EX}name> "Alice"@en }}', scopes=["legal"])
    dataset = rdflib.Dataset()
    dataset.add((rdflib.URIRef(f"{EX}d"), rdflib.URIRef(f"{EX}name"), rdflib.Literal("D")))
    dataset.graph(rdflib.URIRef("urn:trails:scope:hr")).add(
        (rdflib.URIRef(f"{EX}h"), rdflib.URIRef(f"{EX}name"), rdflib.Literal("H")))
    assert kg.load(dataset) == 2
    assert kg.query(f'ASK {{ <{EX}d> <{EX}name> "D" }}', scopes=["default"])
    assert kg.query(f'ASK {{ <{EX}h> <{EX}name> "H" }}', scopes=["hr"])
    with pytest.raises(ValueError, match="format="):
        kg.load(graph, format="turtle")
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError, match="Dataset"):
        kg.load(rdflib.ConjunctiveGraph())


def test_rdflib_is_optional_and_its_absence_names_the_extra(monkeypatch):
    kg = OxigraphGraph()
    kg.load(TURTLE)
    monkeypatch.setitem(sys.modules, "rdflib", None)
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[rdflib\]"'):
        kg.to_rdflib()
    assert kg.load(TURTLE) == 5  # paths and text never need it
