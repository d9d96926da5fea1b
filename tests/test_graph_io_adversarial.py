"""Graph I/O under odd input: what ``trails sparql`` prints loads back, and a load's mistakes
(a base IRI that is no IRI, a gzip'd file, a file whose suffix names another format) are
TrailsErrors saying what to do, with nothing loaded."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from rdf_strategies import canonical
from trails.cli import app
from trails.context import Context
from trails.errors import InvalidArgumentError, RdfSyntaxError
from trails.kg.oxigraph import OxigraphGraph

EX = "https://ex.org/"
ODD = f"""@prefix ex: <{EX}> .
ex:a ex:p "line1\\nline2 \\"q\\" \\u00e9 \\U0001F600"@en ; ex:q [ ex:r "blank" ] ;
    ex:t <<( ex:a ex:p ex:b )>> ; ex:u "\\r\\t\\u0085"^^ex:dt .
<{EX}caf%C3%A9/%C3%BC?x=1&y=%22#frag> ex:p ex:b .
"""
runner = CliRunner()


def trails(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "kb"
    assert trails("--db", path, "init", "--model", "mock:8").exit_code == 0
    return path


def default_graph(db: Path) -> ox.Dataset:
    with Context.open(db, read_only=True) as ctx:
        return canonical(ox.Quad(q.subject, q.predicate, q.object)
                         for q in ox.parse(ctx.kg.dump(format="ntriples").encode(),
                                           format=ox.RdfFormat.N_TRIPLES))


@pytest.mark.parametrize("query", [
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?p), 'https://ex.org/')) }",
    "DESCRIBE <https://ex.org/a> <https://ex.org/caf%C3%A9/%C3%BC?x=1&y=%22#frag>",
])
def test_what_sparql_constructs_loads_back_as_the_same_triples(db, tmp_path, query):
    source = tmp_path / "odd.ttl"
    source.write_text(ODD, encoding="utf-8")
    assert trails("--db", db, "load", source).exit_code == 0
    printed = trails("--db", db, "sparql", query)
    assert printed.exit_code == 0, printed.output
    out = tmp_path / "out.nt"
    out.write_text(printed.stdout, encoding="utf-8")
    fresh = tmp_path / "fresh"
    assert trails("--db", fresh, "init", "--model", "mock:8").exit_code == 0
    loaded = trails("--db", fresh, "load", out)
    assert loaded.exit_code == 0, loaded.output
    expected = canonical(ox.Quad(q.subject, q.predicate, q.object) for q in ox.parse(
        ODD.encode(), format=ox.RdfFormat.TURTLE))
    assert default_graph(fresh) == expected


TRIPLE = b'<https://ex.org/a> <https://ex.org/p> "x" .\n'


@pytest.mark.parametrize("base", ["not an iri", "relative/", ""])
def test_a_base_iri_that_is_no_iri_is_named_not_a_bare_value_error(base):
    kg = OxigraphGraph()
    with pytest.raises(InvalidArgumentError, match="base_iri.*no absolute IRI"):
        kg.load(b'<a> <b> "c" .', base_iri=base)
    assert len(list(kg._quads(None))) == 0


def test_a_base_iri_that_is_no_iri_is_one_line_from_the_cli(db, tmp_path):
    source = tmp_path / "rel.ttl"
    source.write_bytes(b'<a> <b> "c" .\n')
    result = trails("--db", db, "load", source, "--base-iri", "bad iri")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "--base-iri" in result.stderr and "no absolute IRI" in result.stderr


@pytest.mark.parametrize("name", ["facts.ttl.gz", "facts.ttl", "facts.nt"])
def test_a_gzip_file_says_to_decompress_it(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(TRIPLE))
    kg = OxigraphGraph()
    with pytest.raises(RdfSyntaxError, match="gzip-compressed.*decompress"):
        kg.load(path)
    with pytest.raises(RdfSyntaxError, match="gzip-compressed"):
        kg.load(gzip.compress(TRIPLE))
    assert len(list(kg._quads(None))) == 0


@pytest.mark.parametrize(("name", "text", "named"), [
    ("onto.rdf", b"@prefix ex: <https://ex.org/> .\nex:a ex:p ex:b .\n", "trig"),
    ("onto.ttl", b"<https://ex.org/g> { <https://ex.org/a> <https://ex.org/p> 1 . }\n", "trig"),
    ("onto.ttl", b'{"@id": "https://ex.org/a", "https://ex.org/p": "x"}', "jsonld"),
    ("onto.nt", (b'<?xml version="1.0"?><rdf:RDF xmlns:rdf='
                 b'"http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>'), "rdfxml"),
])
def test_a_file_whose_suffix_names_another_format_says_which(tmp_path, name, text, named):
    path = tmp_path / name
    path.write_bytes(text)
    kg = OxigraphGraph()
    with pytest.raises(RdfSyntaxError, match=f"reads as .*--format {named}") as raised:
        kg.load(path)
    assert raised.value.source == str(path)
    assert len(list(kg._quads(None))) == 0
    assert kg.load(path, format=named) >= 0  # and the format it names loads it
