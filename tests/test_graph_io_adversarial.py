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
from trails.errors import ConfigurationError, RdfSyntaxError

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
