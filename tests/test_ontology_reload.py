"""An ontology loaded again replaces what the same source loaded before (ADR 0051).

Loading only ever added: a label taken out of the user's ontology file stayed in the graph
and kept linking chunks. Expected triples and links are written out by hand.
"""

from __future__ import annotations

import pytest

from trails.errors import ConfigurationError, InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.ingest.linking import LabelLinker
from trails.kg import OxigraphGraph
from trails.kg.base import select
from trails.testing import fresh_context

EX = "https://ex.org/"
HEAD = ("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
        "@prefix ex: <https://ex.org/> . @prefix owl: <http://www.w3.org/2002/07/owl#> .\n")


def labels(kg, scope: str = "default") -> set[tuple[str, str]]:
    rows = select(kg, "SELECT ?e ?l WHERE { ?e rdfs:label ?l }", scopes=[scope])
    return {(str(r["e"]).removeprefix(EX), str(r["l"])) for r in rows}


def triples(kg, scope: str = "default") -> int:
    return len(select(kg, "SELECT * WHERE { ?s ?p ?o }", scopes=[scope]))


def links(ctx) -> set[str]:
    rows = select(ctx.kg, "SELECT ?e WHERE { ?c trails:mentions ?e }")
    return {str(r["e"]).removeprefix(EX) for r in rows}


def test_a_label_taken_out_of_the_file_goes_with_replace(tmp_path):
    onto = tmp_path / "onto.ttl"
    kg = OxigraphGraph()
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME", "Acme Corp" . ex:gone rdfs:label "Gone" .')
    assert kg.load(onto, replace=True) == 3  # the first load with replace records it
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" . ex:new rdfs:label "New" .')
    assert kg.load(onto, replace=True) == 2
    assert labels(kg) == {("acme", "ACME"), ("new", "New")}
    # The same file again, unchanged: nothing changes.
    kg.load(onto, replace=True)
    assert labels(kg) == {("acme", "ACME"), ("new", "New")}


def test_without_replace_loading_only_adds_and_records_nothing(tmp_path):
    onto = tmp_path / "onto.ttl"
    kg = OxigraphGraph()
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" .')
    kg.load(onto)
    onto.write_text(HEAD + 'ex:globex rdfs:label "Globex" .')
    kg.load(onto)
    assert labels(kg) == {("acme", "ACME"), ("globex", "Globex")}
    assert len(kg) == 2  # no record: a plain load writes the file's quads and nothing else
    onto.write_text(HEAD + 'ex:initech rdfs:label "Initech" .')
    kg.load(onto, replace=True)  # no load of it was recorded: what plain loads added stays
    assert labels(kg) == {("acme", "ACME"), ("globex", "Globex"), ("initech", "Initech")}
    onto.write_text(HEAD)
    kg.load(onto, replace=True, allow_empty=True)  # what the recorded load added goes
    assert labels(kg) == {("acme", "ACME"), ("globex", "Globex")}


def test_replace_keeps_the_users_other_triples_and_other_scopes(tmp_path):
    onto, other = tmp_path / "onto.ttl", tmp_path / "other.ttl"
    kg = OxigraphGraph()
    kg.update('INSERT DATA { <https://ex.org/mine> rdfs:label "Mine" }')
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" . ex:shared rdfs:label "Shared" .')
    other.write_text(HEAD + 'ex:shared rdfs:label "Shared" . ex:o rdfs:label "Other" .')
    kg.load(onto, replace=True)
    kg.load(other, replace=True)
    kg.load(onto, scope="legal", replace=True)
    onto.write_text(HEAD)
    kg.load(onto, replace=True, allow_empty=True)
    # The triple the other file also loaded stays, and so does the user's own.
    assert labels(kg) == {("mine", "Mine"), ("shared", "Shared"), ("o", "Other")}
    assert labels(kg, "legal") == {("acme", "ACME"), ("shared", "Shared")}
    kg.load(onto, scope="legal", replace=True, allow_empty=True)
    assert labels(kg, "legal") == set()
    assert labels(kg) == {("mine", "Mine"), ("shared", "Shared"), ("o", "Other")}


def test_blank_nodes_the_file_no_longer_holds_go_too(tmp_path):
    onto = tmp_path / "onto.ttl"
    kg = OxigraphGraph()
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" ; rdfs:subClassOf [ a owl:Restriction ; '
                           'owl:onProperty ex:owns ; owl:someValuesFrom ex:Firm ] .')
    kg.load(onto, scope="s", replace=True)
    assert triples(kg, "s") == 5
    onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" .')
    kg.load(onto, scope="s", replace=True)
    assert triples(kg, "s") == 1
    # Kept blank nodes are not doubled by a replace either.
    onto.write_text(HEAD + 'ex:acme rdfs:comment [ rdfs:label "note" ] .')
    kg.load(onto, scope="s", replace=True)
    kg.load(onto, scope="s", replace=True)
    assert triples(kg, "s") == 2


def test_rdf_text_is_replaced_by_name_and_refused_without_one():
    kg = OxigraphGraph()
    kg.load(b'<https://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "A" .',
            replace="facts")
    kg.load(b'<https://ex.org/b> <http://www.w3.org/2000/01/rdf-schema#label> "B" .',
            replace="facts")
    assert labels(kg) == {("b", "B")}
    with pytest.raises(InvalidArgumentError, match="RDF text, not a file"):
        kg.load(b'<https://ex.org/c> <https://ex.org/p> "C" .', replace=True)
    with pytest.raises(InvalidArgumentError, match="empty name"):
        kg.load(b'<https://ex.org/c> <https://ex.org/p> "C" .', replace=" ")
    assert labels(kg) == {("b", "B")}


def test_replace_refuses_rdf_naming_graphs_of_its_own(tmp_path):
    trig = tmp_path / "g.trig"
    trig.write_text("<https://ex.org/g1> { <https://ex.org/a> <https://ex.org/p> 1 } "
                    "<https://ex.org/g2> { <https://ex.org/a> <https://ex.org/p> 2 }")
    kg = OxigraphGraph()
    with pytest.raises(ConfigurationError, match="graphs of its own"):
        kg.load(trig, replace=True)
    assert len(kg) == 0


def test_relinking_after_a_replace_removes_the_links_of_a_removed_label(tmp_path):
    onto = tmp_path / "onto.ttl"
    with fresh_context(dim=32) as ctx:
        onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" . ex:hooli rdfs:label "Hooli" .')
        ctx.kg.load(onto, replace=True)
        ingest_all([Document(id="a", source="a", text="ACME bought Hooli.")], ctx=ctx,
                   linker=LabelLinker())
        assert links(ctx) == {"acme", "hooli"}
        onto.write_text(HEAD + 'ex:acme rdfs:label "ACME" .')
        ctx.kg.load(onto, replace=True)
        report = ctx.link()
        assert [e.removeprefix(EX) for _, e in report.removed] == ["hooli"]
        assert links(ctx) == {"acme"}


def test_the_command_line_replaces_with_replace(tmp_path):
    from typer.testing import CliRunner

    from trails.cli.commands import app
    from trails.context import Context

    runner = CliRunner()
    kb, notes, onto = tmp_path / "kb", tmp_path / "notes", tmp_path / "onto.ttl"
    notes.mkdir()
    (notes / "a.md").write_text("Initech signed with Hooli.\n")

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--db", str(kb), *args])
        assert result.exit_code == 0, result.output
        return result.output

    run("init", "--model", "mock")
    onto.write_text(HEAD + 'ex:initech rdfs:label "Initech" . ex:hooli rdfs:label "Hooli" .')
    run("load", str(onto), "--scope", "team", "--replace")
    run("ingest", str(notes), "--link", "--quiet", "--scope", "team")
    onto.write_text(HEAD + 'ex:hooli rdfs:label "Hooli" .')
    run("load", str(onto), "--scope", "team", "--replace")
    relinked = run("link")
    assert "1 removed" in relinked and f"trails:mentions {EX}initech" in relinked
    with Context.open(kb, read_only=True) as ctx:
        assert labels(ctx.kg, "team") == {("hooli", "Hooli")}
        assert links(ctx) == {"hooli"}


def test_linker_settings_given_are_remembered_by_ingest_and_link(tmp_path):
    """``trails link --language fr`` linked French labels only, and the next ``trails ingest
    --link`` linked with the defaults again: other mentions, in silence."""
    import json

    from typer.testing import CliRunner

    from trails.cli.commands import app

    runner = CliRunner()
    kb, notes, onto = tmp_path / "kb", tmp_path / "notes", tmp_path / "onto.ttl"
    notes.mkdir()
    (notes / "a.md").write_text("Umbrella and Parapluie.\n")
    onto.write_text(HEAD + 'ex:u rdfs:label "Umbrella"@en . ex:p rdfs:label "Parapluie"@fr .')

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--db", str(kb), *args])
        assert result.exit_code == 0, result.output
        return result.output

    def linked() -> set[str]:
        from trails.context import Context

        with Context.open(kb, read_only=True) as ctx:
            return links(ctx)

    run("init", "--model", "mock")
    run("load", str(onto))
    run("ingest", str(notes), "--quiet")
    report = json.loads(run("link", "--json", "--language", "fr"))
    assert [e.removeprefix(EX) for _, e in report["added"]] == ["p"]
    (notes / "b.md").write_text("Umbrella and Parapluie again.\n")
    run("ingest", str(notes), "--link", "--quiet")
    assert linked() == {"p"}  # b links as a did: French labels only
    report = json.loads(run("link", "--json"))  # no settings: the remembered ones
    assert report["added"] == [] and report["removed"] == []
    report = json.loads(run("link", "--json", "--match-case", "--min-length", "3"))
    assert report["added"] == [] and report["removed"] == []  # still French only
    settings = json.loads((kb / "trails.json").read_text())["linker"]
    assert (settings["languages"], settings["case"], settings["min_length"]) == (["fr"], False, 3)
    report = json.loads(run("link", "--json", "--defaults"))
    assert {e.removeprefix(EX) for _, e in report["added"]} == {"u"}
    assert json.loads((kb / "trails.json").read_text())["linker"]["languages"] is None
    result = runner.invoke(app, ["--db", str(kb), "link", "--min-length", "0"])
    assert result.exit_code != 0 and "min_length" in result.output


def test_a_linker_given_to_ingest_or_link_is_remembered(tmp_path):
    from trails.context import Context
    from trails.testing import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ctx.kg.load(HEAD.encode() + b'ex:u rdfs:label "Umbrella"@en . '
                    b'ex:p rdfs:label "Parapluie"@fr .')
        ingest_all([Document(id="a", source="a", text="Umbrella, Parapluie.")], ctx=ctx,
                   linker=LabelLinker(languages=["en"]))
        assert links(ctx) == {"u"}
        assert ctx.link().added == []  # the remembered English-only linker: nothing new
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        assert ctx.link().added == [] and links(ctx) == {"u"}
        ctx.link(LabelLinker())
        assert links(ctx) == {"u", "p"}
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all([Document(id="b", source="b", text="Parapluie.")], ctx=ctx,
                   linker=None)
        assert ctx.link().removed == []  # defaults remembered: the French label stays linked


def test_a_missing_file_loaded_with_replace_is_said_to_be_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kg = OxigraphGraph()
    for missing in ("ontology.ttl", tmp_path / "ontology.ttl"):
        with pytest.raises(ConfigurationError, match="no such file"):
            kg.load(missing, replace=True)
    assert len(kg) == 0


def test_the_record_of_a_load_adds_no_row_to_a_query_of_every_graph(tmp_path):
    """A query that names no scope reads every graph: the record must not hold the loaded
    triples themselves, or each would be answered twice."""
    onto = tmp_path / "o.ttl"
    onto.write_text(HEAD + 'ex:a rdfs:label "A" . ex:b ex:part [ rdfs:label "B" ] .\n')
    kg = OxigraphGraph()
    kg.load(onto)
    kg.load(onto, scope="legal", replace=True)
    rows = select(kg, "SELECT ?l WHERE { ?e rdfs:label ?l }")
    assert sorted(str(r["l"]) for r in rows) == ["A", "A", "B", "B"]  # default and legal
    assert select(kg, "SELECT (COUNT(*) AS ?n) WHERE { ?e <https://ex.org/part> ?x }"
                  ).rows[0]["n"] == 2
    onto.write_text(HEAD + 'ex:a rdfs:label "A2" .\n')
    kg.load(onto, scope="legal", replace=True)
    assert labels(kg, "legal") == {("a", "A2")} and triples(kg, "legal") == 1
    assert {label for _, label in labels(kg)} == {"A", "B"}  # the default scope's, untouched


def test_a_file_with_triple_terms_is_replaced(tmp_path):
    onto = tmp_path / "o.ttl"
    onto.write_text(HEAD + 'ex:a ex:says <<( ex:b ex:p <<( ex:c ex:q "v"@en )>> )>> . '
                    'ex:d ex:r _:x . _:x ex:s <<( _:x ex:p 1 )>> .\n')
    kg = OxigraphGraph()
    assert kg.load(onto, replace=True) == 3 and triples(kg) == 3
    onto.write_text(HEAD + 'ex:a ex:says <<( ex:b ex:p "w" )>> .\n')
    assert kg.load(onto, replace=True) == 1
    (row,) = select(kg, "SELECT ?o WHERE { ?s ?p ?o }", scopes=["default"])
    assert str(row["o"]) == '<https://ex.org/b> <https://ex.org/p> "w"'


@pytest.mark.parametrize("settings", [{"predicates": ["not an iri"]}, {"predicates": []}])
def test_remembered_linker_settings_edited_wrong_name_trails_json_and_the_way_out(tmp_path,
                                                                                 settings):
    """Settings no linker takes, written into trails.json by hand: the error says where they
    come from (the user gave none) and how to be rid of them; --defaults links again."""
    import json

    from typer.testing import CliRunner

    from trails.cli.commands import app

    runner, kb = CliRunner(), tmp_path / "kb"
    assert runner.invoke(app, ["--db", str(kb), "init", "--model", "mock"]).exit_code == 0
    config = json.loads((kb / "trails.json").read_text())
    (kb / "trails.json").write_text(json.dumps({**config, "linker": settings}))
    result = runner.invoke(app, ["--db", str(kb), "link"])
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert "trails.json" in said and "--defaults" in said
    with pytest.raises(ConfigurationError, match="trails.json"):
        from trails.context import Context

        with Context.open(kb) as ctx:
            ctx.link()
    assert runner.invoke(app, ["--db", str(kb), "link", "--defaults"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(kb), "link"]).exit_code == 0


def test_threads_remembering_linkers_at_once_leave_a_whole_trails_json(tmp_path):
    """Runs of one context in several threads (a notebook's background ingest beside a
    relinking) each write trails.json: every write replaces the file whole, none fails on
    another's temporary file, and the other settings in it are kept."""
    import json
    import threading

    from trails.config import read_config
    from trails.context import Context
    from trails.ingest.linker_settings import remember_linker
    from trails.testing import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16), payload=["title"]) as ctx:
        errors: list[BaseException] = []
        lengths = list(range(1, 9))

        def remember(length: int) -> None:
            try:
                for _ in range(25):
                    remember_linker(ctx, LabelLinker(min_length=length))
                    remember_linker(ctx, LabelLinker(min_length=length + 10))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=remember, args=(n,)) for n in lengths]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        config = read_config(tmp_path / "kb")
        assert config is not None and config.payload == ["title"]
        assert config.linker is not None and config.linker.min_length in {n + 10 for n in lengths}
        assert json.loads((tmp_path / "kb" / "trails.json").read_text())["payload"] == ["title"]
        assert sorted(p.name for p in (tmp_path / "kb").glob("trails.json*")) == ["trails.json"]
