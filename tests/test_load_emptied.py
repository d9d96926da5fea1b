"""A source emptied since it was loaded with replace is refused, not taken as a wish to remove
everything it loaded (ADR 0051): `trails load --replace onto.ttl` of a file truncated to 0
bytes removed the whole ontology and said only "0 quads loaded".

Removing it all on purpose is `--allow-empty` (Python: ``allow_empty=True``). Expected triples
are written out by hand.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from trails.cli.commands import app
from trails.context import Context
from trails.errors import ConfigurationError
from trails.kg import OxigraphGraph
from trails.kg.base import select

EX = "https://ex.org/"
HEAD = "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix ex: <https://ex.org/> .\n"
ONTOLOGY = HEAD + 'ex:acme rdfs:label "ACME", "Acme Corp" . ex:hooli rdfs:label "Hooli" .\n'
LABELS = {("acme", "ACME"), ("acme", "Acme Corp"), ("hooli", "Hooli")}


def labels(kg, scope: str = "default") -> set[tuple[str, str]]:
    rows = select(kg, "SELECT ?e ?l WHERE { ?e rdfs:label ?l }", scopes=[scope])
    return {(str(r["e"]).removeprefix(EX), str(r["l"])) for r in rows}


@pytest.mark.parametrize("emptied", ["", "\n", "# the ontology, cut\n", HEAD])
def test_a_file_emptied_since_its_replace_load_is_refused_and_nothing_changes(tmp_path, emptied):
    onto = tmp_path / "onto.ttl"
    onto.write_text(ONTOLOGY)
    kg = OxigraphGraph()
    assert kg.load(onto, replace=True) == 3
    before = len(kg)
    onto.write_text(emptied)
    with pytest.raises(ConfigurationError) as raised:
        kg.load(onto, replace=True)
    message = str(raised.value)
    assert str(onto) in message and "3 triples" in message
    assert "allow_empty=True" in message and "--allow-empty" in message
    assert labels(kg) == LABELS and len(kg) == before
    # The record is kept: the file put back and changed still replaces what it loaded.
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" .')
    assert kg.load(onto, replace=True) == 1
    assert labels(kg) == {("acme", "ACME")}


def test_allow_empty_removes_what_the_file_loaded_on_purpose(tmp_path):
    onto = tmp_path / "onto.ttl"
    onto.write_text(ONTOLOGY)
    kg = OxigraphGraph()
    kg.load(b'<https://ex.org/mine> <https://ex.org/p> "kept" .')  # the user's own triple
    kg.load(onto, replace=True, scope="team")
    kg.load(onto, replace=True)
    onto.write_text("")
    assert kg.load(onto, replace=True, allow_empty=True) == 0
    assert labels(kg) == set()
    assert labels(kg, "team") == LABELS  # another scope's load of it is its own
    assert len(select(kg, "SELECT * WHERE { ?s ?p ?o }", scopes=["default"])) == 1
    assert kg.load(onto, replace=True) == 0  # nothing recorded any more: nothing to lose


def test_rdf_text_emptied_under_its_name_is_refused_naming_it():
    kg = OxigraphGraph()
    kg.load(b'<https://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "A" .',
            replace="facts")
    with pytest.raises(ConfigurationError, match=r"facts holds no triples now.* 1 triple it"):
        kg.load(b"", replace="facts")
    assert labels(kg) == {("a", "A")}
    assert kg.load(b"", replace="facts", allow_empty=True) == 0
    assert labels(kg) == set()


def test_an_empty_file_never_loaded_and_plain_loads_are_not_refused(tmp_path):
    empty = tmp_path / "empty.ttl"
    empty.write_text("")
    kg = OxigraphGraph()
    assert kg.load(empty, replace=True) == 0  # nothing loaded before: nothing to lose
    onto = tmp_path / "onto.ttl"
    onto.write_text(ONTOLOGY)
    kg.load(onto)  # a plain load is not recorded
    onto.write_text("")
    assert kg.load(onto) == 0
    assert kg.load(onto, replace=True) == 0
    assert labels(kg) == LABELS  # plain loads stay (ADR 0051)


@pytest.fixture
def kb(tmp_path):
    kb = tmp_path / "kb"
    assert CliRunner().invoke(app, ["--db", str(kb), "init", "--model", "mock:8"]).exit_code == 0
    return kb


def trails(kb, *args):
    return CliRunner().invoke(app, ["--db", str(kb), *map(str, args)])


def test_the_command_line_refuses_an_emptied_file_and_removes_it_with_allow_empty(kb, tmp_path):
    onto, other = tmp_path / "onto.ttl", tmp_path / "other.ttl"
    onto.write_text(ONTOLOGY)
    other.write_text(HEAD + 'ex:initech rdfs:label "Initech" .')
    assert trails(kb, "load", "--replace", onto, other).exit_code == 0
    onto.write_text("")
    other.write_text(HEAD + 'ex:initech rdfs:label "Initech Inc" .')
    result = trails(kb, "load", "--replace", onto, other)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert str(onto) in lines[0] and "3 triples" in lines[0] and "--allow-empty" in lines[0]
    assert "quads loaded" not in result.stdout
    with Context.open(kb, read_only=True) as ctx:  # neither file changed anything
        assert labels(ctx.kg) == LABELS | {("initech", "Initech")}
    result = trails(kb, "load", "--replace", "--allow-empty", onto, other)
    assert result.exit_code == 0, result.output
    assert f"{onto}: 0 quads loaded" in result.stdout
    with Context.open(kb, read_only=True) as ctx:
        assert labels(ctx.kg) == {("initech", "Initech Inc")}


def test_allow_empty_without_replace_is_refused(kb, tmp_path):
    onto = tmp_path / "onto.ttl"
    onto.write_text(ONTOLOGY)
    result = trails(kb, "load", "--allow-empty", onto)
    assert result.exit_code == 1 and "--replace" in result.stderr
    assert "Traceback" not in result.stderr
    with Context.open(kb, read_only=True) as ctx:
        assert labels(ctx.kg) == set()

