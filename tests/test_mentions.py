"""Chunks linked to the user's entities at ingest, as part of their version (ADR 0031).

Mentions are written with the chunk triples of a version and leave with them: a new version,
a delete, a repair of what was never committed; a metadata-only change keeps them. Expected
links are computed by hand from the texts (``str.find``), never by the linker.
"""

from __future__ import annotations

import pytest

from trails import retrieve
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import Document, graph_updates, ingest_all
from trails.ingest.linking import LabelLinker, Mention
from trails.kg.base import select
from trails.testing import fresh_context

ONTOLOGY = """PREFIX ex: <https://ex.org/> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
INSERT DATA {
  ex:acme rdfs:label "ACME" ; skos:altLabel "Acme Holdings" .
  ex:globex rdfs:label "Globex" ; ex:subOrganizationOf ex:acme .
  ex:initech rdfs:label "Initech" ; ex:subOrganizationOf ex:globex .
  ex:hooli rdfs:label "Hooli" .
  ex:umbrella rdfs:label "Umbrella"@en , "Parapluie"@fr .
}"""
EX = "https://ex.org/"


def links(ctx, scope: str | None = None) -> set[tuple[str, str]]:
    """(chunk, entity) for every trails:mentions triple."""
    rows = select(ctx.kg, "SELECT ?c ?e WHERE { ?c trails:mentions ?e }",
                  scopes=None if scope is None else [scope])
    return {(r["c"], r["e"]) for r in rows}


def mention_nodes(ctx) -> list[dict[str, object]]:
    rows = select(ctx.kg, "SELECT ?c ?m ?e ?text ?start ?end ?label ?p WHERE { "
                          "?c trails:hasMention ?m . ?m a trails:Mention ; trails:entity ?e ; "
                          "trails:matchedText ?text ; trails:matchStart ?start ; "
                          "trails:matchEnd ?end ; trails:label ?label ; "
                          "trails:labelPredicate ?p }")
    return [dict(r) for r in rows]


def no_orphan_mentions(ctx) -> bool:
    """Every mention node hangs off a chunk of trails (none outlived its chunk)."""
    nodes = set(select(ctx.kg, "SELECT ?m WHERE { ?m ?p ?o FILTER(CONTAINS(STR(?m), '/m/')) }"
                       ).column("m"))
    linked = set(select(ctx.kg, "SELECT ?m WHERE { ?c a trails:Chunk ; trails:hasMention ?m }"
                        ).column("m"))
    return nodes == linked


def leftovers(ctx) -> int:
    """Triples about mention nodes or mention links, wherever they are."""
    return len(select(ctx.kg, "SELECT * WHERE { { ?m a trails:Mention } UNION "
                              "{ ?m trails:entity ?e } UNION { ?c trails:mentions ?x } UNION "
                              "{ ?c trails:hasMention ?y } }"))


@pytest.fixture
def ctx():
    with fresh_context(dim=32) as ctx:
        ctx.kg.update(ONTOLOGY)
        yield ctx


def doc(i: str, text: str, **metadata: object) -> Document:
    return Document(id=i, source=i, text=text, metadata=metadata)


def expected(ctx, words: dict[str, str]) -> set[tuple[str, str]]:
    """(chunk, entity) for each live chunk whose text holds one of ``words`` (label ->
    entity) as a whole word, by hand."""
    out = set()
    rows = select(ctx.kg, "SELECT ?c ?text WHERE { ?c a trails:Chunk ; schema:text ?text }")
    for row in rows:
        text = str(row["text"]).lower()
        for word, entity in words.items():
            at = text.find(word.lower())
            while at >= 0:
                before = text[at - 1] if at else " "
                after = text[at + len(word)] if at + len(word) < len(text) else " "
                if not before.isalnum() and not after.isalnum():
                    out.add((row["c"], EX + entity))
                at = text.find(word.lower(), at + 1)
    return out


WORDS = {"ACME": "acme", "Acme Holdings": "acme", "Globex": "globex", "Initech": "initech",
         "Hooli": "hooli", "Umbrella": "umbrella", "Parapluie": "umbrella"}


def test_ingest_links_chunks_to_the_entities_their_text_names(ctx):
    text = ("Initech signed with ACME in May. " * 20 + "Nothing else. " * 30
            + "Later Hooli bought parapluie stock from acme holdings. " * 20)
    stats = ingest_all([doc("a", text), doc("b", "No entity at all.")], ctx=ctx,
                       linker=LabelLinker())
    assert stats.failed == 0
    chunks = select(ctx.kg, "SELECT (COUNT(?c) AS ?n) WHERE { ?c a trails:Chunk }")
    assert chunks.column("n")[0] > 2  # several chunks, so offsets are relative to the document
    assert links(ctx) == expected(ctx, WORDS)
    nodes = mention_nodes(ctx)
    assert nodes
    for node in nodes:  # provenance: the document's characters, the label and its predicate
        assert text[node["start"]:node["end"]] == node["text"]
        assert str(node["label"]).lower() in {w.lower() for w in WORDS}
    assert {str(n["p"]) for n in nodes} == {"http://www.w3.org/2000/01/rdf-schema#label",
                                           "http://www.w3.org/2004/02/skos/core#altLabel"}


def test_a_linker_is_optional_and_checked(ctx):
    ingest_all([doc("a", "ACME and Globex.")], ctx=ctx)
    assert links(ctx) == set()
    with pytest.raises(InvalidArgumentTypeError, match="linker"):
        ingest_all([doc("b", "ACME")], ctx=ctx, linker=object())


def test_languages_and_predicates_are_configurable(ctx):
    text = "Umbrella and Parapluie and Globex."
    ingest_all([doc("a", text)], ctx=ctx, linker=LabelLinker(languages=["fr"]))
    assert {e for _, e in links(ctx)} == {EX + "umbrella"}
    assert {str(n["text"]) for n in mention_nodes(ctx)} == {"Parapluie"}
    with fresh_context(dim=32) as other:
        other.kg.update(ONTOLOGY)
        ingest_all([doc("a", text + " Acme Holdings.")], ctx=other,
                   linker=LabelLinker(["http://www.w3.org/2004/02/skos/core#altLabel"]))
        assert {e for _, e in links(other)} == {EX + "acme"}


def test_documents_and_chunks_are_no_entities(ctx):
    # A document's title is its schema:name, a default label predicate: it links nothing.
    ingest_all([Document(id="memo", source="memo", title="Quarterly", text="Quarterly memo.")],
               ctx=ctx, linker=LabelLinker())
    ingest_all([doc("b", "The Quarterly numbers.")], ctx=ctx, linker=LabelLinker())
    assert links(ctx) == set()


def test_labels_of_another_scope_never_link(ctx):
    ctx.kg.update('INSERT DATA { GRAPH <urn:trails:scope:hr> { <https://ex.org/secret> '
                  '<http://www.w3.org/2000/01/rdf-schema#label> "Project Falcon" } }')
    ingest_all([doc("a", "Project Falcon and ACME.")], ctx=ctx, scope="legal",
               linker=LabelLinker())
    assert links(ctx) == set()  # the legal scope's graph holds no labels at all
    ctx.kg.update('INSERT DATA { GRAPH <urn:trails:scope:legal> { <https://ex.org/acme> '
                  '<http://www.w3.org/2000/01/rdf-schema#label> "ACME" } }')
    ingest_all([doc("b", "Project Falcon and ACME.")], ctx=ctx, scope="legal",
               linker=LabelLinker())
    assert {e for _, e in links(ctx, "legal")} == {EX + "acme"}
    assert links(ctx, "default") == set()


def test_a_new_version_replaces_the_mentions_of_the_old(ctx):
    linker = LabelLinker()
    ingest_all([doc("a", "ACME and Globex.")], ctx=ctx, linker=linker)
    ingest_all([doc("a", "Only Hooli now.")], ctx=ctx, linker=linker)
    assert {e for _, e in links(ctx)} == {EX + "hooli"}
    assert [str(n["text"]) for n in mention_nodes(ctx)] == ["Hooli"]
    assert no_orphan_mentions(ctx)
    assert ctx.verify().ok


def test_a_metadata_only_update_keeps_the_mentions(ctx):
    ingest_all([doc("a", "ACME and Globex.", owner="ann")], ctx=ctx, linker=LabelLinker())
    before = links(ctx), mention_nodes(ctx)
    stats = ingest_all([doc("a", "ACME and Globex.", owner="bob")], ctx=ctx, linker=LabelLinker())
    assert stats.metadata_updated == 1
    assert (links(ctx), mention_nodes(ctx)) == before


def test_delete_removes_mentions_and_keeps_the_users_triples(ctx):
    ingest_all([doc("a", "ACME and Globex.")], ctx=ctx, linker=LabelLinker())
    (chunk, _), *_ = links(ctx)
    ctx.kg.update(f'INSERT DATA {{ <{chunk}> <https://ex.org/reviewedBy> "ann" }}')
    assert ctx.delete_document(ctx.base_iri + "doc/a")
    assert leftovers(ctx) == 0
    assert len(select(ctx.kg, "SELECT * WHERE { ?c <https://ex.org/reviewedBy> ?who }")) == 1
    assert len(select(ctx.kg, "SELECT * WHERE { ?e rdfs:label ?l }")) == 6  # the ontology


def test_repair_removes_the_mentions_of_a_version_never_committed(ctx, monkeypatch):
    ingest_all([doc("a", "ACME once.")], ctx=ctx, linker=LabelLinker())
    committed = links(ctx), mention_nodes(ctx)

    class Killed(BaseException):
        pass

    def killed(self, versions):  # a kill at the commit point: steps 1 and 2 are done
        raise Killed

    monkeypatch.setattr(type(ctx.vectors), "publish", killed)
    with pytest.raises(Killed):
        ingest_all([doc("a", "Globex and Hooli, a new version.")], ctx=ctx, linker=LabelLinker())
    monkeypatch.undo()
    assert {e for _, e in links(ctx)} == {EX + "acme", EX + "globex", EX + "hooli"}
    # A filter on mentions still shows only the committed version (its chunks are the live ones).
    hits = retrieve("anything", ctx, mode="hybrid", sparql_filter=(
        "SELECT ?iri WHERE { ?iri trails:mentions ?e }"))
    assert {h.iri for h in hits} == {c for c, _ in committed[0]}
    report = ctx.verify(repair=True)
    assert report.stale_chunks and ctx.verify().ok
    assert (links(ctx), mention_nodes(ctx)) == committed
    assert no_orphan_mentions(ctx)


def test_step_four_removes_stale_mentions_in_a_named_scope(ctx):
    ctx.kg.update('INSERT DATA { GRAPH <urn:trails:scope:legal> { <https://ex.org/acme> '
                  '<http://www.w3.org/2000/01/rdf-schema#label> "ACME" } }')
    ingest_all([doc("a", "ACME here.")], ctx=ctx, scope="legal", linker=LabelLinker())
    ingest_all([doc("a", "ACME here, changed.")], ctx=ctx, scope="legal", linker=LabelLinker())
    rows = select(ctx.kg, "SELECT ?m WHERE { ?m a trails:Mention }", scopes=["legal"])
    assert len(rows) == 1
    assert len(links(ctx, "legal")) == 1
    assert ctx.verify().ok


def test_mention_deletes_touch_only_trails_triples():
    update = graph_updates.mention_deletes("default", "VALUES ?c { <urn:x:c> }")
    assert "trails:Mention" in update and "?m ?mp ?mo" in update


def test_entity_scoped_filter_is_exact(ctx):
    """Chunks mentioning any subsidiary of ACME (transitively), against a hand computation."""
    texts = {"d1": "Initech hired staff.", "d2": "Globex cut prices.", "d3": "ACME itself.",
             "d4": "Hooli is unrelated.", "d5": "Nothing here.", "d6": "initech and hooli."}
    ingest_all([doc(i, t) for i, t in texts.items()], ctx=ctx, linker=LabelLinker(),
               batch_size=2)
    subsidiaries = {"initech", "globex", "acme"}  # ex:acme is subOrganizationOf* itself
    by_hand = {i for i, t in texts.items() if any(s in t.lower() for s in subsidiaries)}
    query = ("PREFIX ex: <https://ex.org/> SELECT ?iri WHERE { "
             "?iri trails:mentions ?e . ?e ex:subOrganizationOf* ex:acme }")
    for mode in ("hybrid", "graph"):
        hits = retrieve("staff prices", ctx, mode=mode, k=100, sparql_filter=query)
        assert {h.metadata["doc_iri"].rsplit("/", 1)[-1] for h in hits} == by_hand, mode
    strict = query.replace("subOrganizationOf*", "subOrganizationOf+")
    hits = retrieve("staff", ctx, mode="hybrid", k=100, sparql_filter=strict)
    assert {h.metadata["doc_iri"].rsplit("/", 1)[-1] for h in hits} == by_hand - {"d3"}


def test_linked_graphs_satisfy_the_shapes_and_a_broken_mention_does_not(ctx):
    from pathlib import Path

    import rdflib
    from pyshacl import validate

    shapes = rdflib.Graph().parse(Path(__file__).parents[1] / "ontologies" / "trails-shapes.ttl")
    ingest_all([doc("a", "Initech signed with ACME. Hooli too.")], ctx=ctx, linker=LabelLinker())
    data = rdflib.Dataset()
    data.parse(data=str(ctx.kg.dump(format="nquads")), format="nquads")
    graph = rdflib.Graph()
    for s, p, o, _ in data.quads((None, None, None, None)):
        graph.add((s, p, o))
    assert validate(graph, shacl_graph=shapes, inference="none")[0]
    node = next(graph.subjects(rdflib.RDF.type, rdflib.URIRef("https://trails.dev/ns#Mention")))
    graph.remove((node, rdflib.URIRef("https://trails.dev/ns#entity"), None))
    assert not validate(graph, shacl_graph=shapes, inference="none")[0]


def test_link_after_the_ontology_changes_reports_what_changed(ctx):
    ingest_all([doc("a", "Initech and Hooli."), doc("b", "Acme Holdings only.")], ctx=ctx,
               linker=LabelLinker())
    before = links(ctx)
    assert ctx.link().added == [] and links(ctx) == before  # nothing changed: nothing to do
    ctx.kg.update('PREFIX ex: <https://ex.org/> PREFIX skos: <http://www.w3.org/2004/02/skos/core#> '
                  'DELETE DATA { ex:hooli rdfs:label "Hooli" } ; '
                  'INSERT DATA { ex:acme skos:altLabel "Initech" }')
    report = ctx.link()
    chunk_a = next(c for c, e in before if e == EX + "initech")
    assert report.added == [(chunk_a, EX + "acme")]
    assert report.removed == [(chunk_a, EX + "hooli")]
    assert (report.mentions_added, report.mentions_removed) == (1, 1)
    assert links(ctx) == before - {(chunk_a, EX + "hooli")} | {(chunk_a, EX + "acme")}
    assert no_orphan_mentions(ctx) and ctx.verify().ok
    assert ctx.link().added == []  # run again: nothing left to do
    ingest_all([doc("c", "Globex.")], ctx=ctx)  # ingested without a linker
    assert ctx.link().added == [(next(iter(c for c, e in links(ctx) if "doc/c" in c)),
                                 EX + "globex")]


def test_link_refuses_a_scope_that_holds_nothing_or_is_no_scope_name(ctx):
    """A typo must not read as "nothing to link": nothing is linked and the error says why."""
    from trails.errors import InvalidArgumentError, UnknownScopeError

    ctx.kg.update('PREFIX ex: <https://ex.org/> INSERT DATA { GRAPH <urn:trails:scope:legal> '
                  '{ ex:acme rdfs:label "ACME" } }')
    ingest_all([doc("a", "ACME and Hooli.")], ctx=ctx, scope="legal")  # linked later
    with pytest.raises(UnknownScopeError, match="'legl'.*did you mean 'legal'"):
        ctx.link(scopes="legl")
    with pytest.raises(UnknownScopeError, match="'nope'"):
        ctx.link(scopes=["legal", "nope"])
    for bad in ("no scope", [], ""):
        with pytest.raises(InvalidArgumentError, match="scope"):
            ctx.link(scopes=bad)
    with pytest.raises(InvalidArgumentTypeError, match="scope"):
        ctx.link(scopes=7)
    assert links(ctx) == set()  # nothing was linked by any of them
    assert [e for _, e in ctx.link(scopes="legal").added] == [EX + "acme"]


def test_link_is_refused_on_a_read_only_context(ctx, tmp_path):
    from trails.context import Context
    from trails.errors import ConfigurationError

    with Context.open(tmp_path / "c", embedder=ctx.embedder) as writable:
        writable.kg.update(ONTOLOGY)
        ingest_all([doc("a", "ACME.")], ctx=writable)
    with Context.open(tmp_path / "c", read_only=True) as reader, pytest.raises(
            ConfigurationError, match="read-only"):
        reader.link()


def test_the_command_line_links_at_ingest_and_re_links(tmp_path):
    import json

    from typer.testing import CliRunner

    from trails.cli.commands import app

    runner = CliRunner()
    kb, notes, onto = tmp_path / "kb", tmp_path / "notes", tmp_path / "onto.ttl"
    notes.mkdir()
    (notes / "a.md").write_text("Initech signed with Hooli.\n")
    onto.write_text('<https://ex.org/initech> <http://www.w3.org/2000/01/rdf-schema#label> '
                    '"Initech" .\n')

    def run(*args: str):
        result = runner.invoke(app, ["--db", str(kb), *args])
        assert result.exit_code == 0, result.output
        return result.output

    run("init", "--model", "mock")
    run("load", str(onto))
    run("ingest", str(notes), "--link", "--quiet")
    onto.write_text('<https://ex.org/hooli> <http://www.w3.org/2000/01/rdf-schema#label> '
                    '"Hooli" .\n')
    run("load", str(onto))
    report = json.loads(run("link", "--json"))
    assert [e for _, e in report["added"]] == [EX + "hooli"] and report["removed"] == []
    assert "0 links added" in run("link")


def test_a_scope_whose_graph_holds_no_labels_is_named_not_linked_in_silence(ctx):
    """The ontology is in the default scope, the documents in "legal": the linker reads
    labels from the chunks' own scope, so it linked nothing and said nothing."""
    stats = ingest_all([doc("a", "ACME and Hooli.")], ctx=ctx, scope="legal",
                       linker=LabelLinker())
    assert links(ctx) == set()
    [(source, message)] = stats.warnings
    assert source == "scope legal"
    assert "no labels" in message and "trails load FILE --scope legal" in message
    report = ctx.link()
    assert len(report.warnings) == 1 and "'legal'" in report.warnings[0]
    assert report.summary().endswith("1 warning")
    # With the ontology in that scope too, it links and warns of nothing.
    ctx.kg.update('INSERT DATA { GRAPH <urn:trails:scope:legal> { <https://ex.org/acme> '
                  '<http://www.w3.org/2000/01/rdf-schema#label> "ACME" } }')
    report = ctx.link()
    assert report.warnings == [] and [e for _, e in report.added] == [EX + "acme"]
    assert ingest_all([doc("b", "ACME.")], ctx=ctx, scope="legal",
                      linker=LabelLinker()).warnings == []


def test_the_command_line_names_a_scope_without_labels_on_stderr(tmp_path):
    from typer.testing import CliRunner

    from trails.cli.commands import app

    runner = CliRunner()
    kb, notes, onto = tmp_path / "kb", tmp_path / "notes", tmp_path / "onto.ttl"
    notes.mkdir()
    (notes / "a.md").write_text("Initech signed.\n")
    onto.write_text('<https://ex.org/initech> <http://www.w3.org/2000/01/rdf-schema#label> '
                    '"Initech" .\n')
    for args in (["init", "--model", "mock"], ["load", str(onto)]):
        assert runner.invoke(app, ["--db", str(kb), *args]).exit_code == 0
    for args in (["ingest", str(notes), "--link", "--quiet", "--scope", "legal"],
                 ["link"], ["link", "--json"]):
        result = runner.invoke(app, ["--db", str(kb), *args])
        assert result.exit_code == 0, result.output
        assert "no labels to link to in the graph of scope 'legal'" in result.stderr, args


def test_a_new_version_written_without_a_linker_into_a_linked_scope_is_named(ctx):
    """A document edited and ingested again without the linker lost its links in silence:
    filters on mentions no longer found it."""
    assert ingest_all([doc("a", "ACME and Globex."), doc("b", "Hooli.")], ctx=ctx,
                      linker=LabelLinker()).warnings == []
    unchanged = ingest_all([doc("a", "ACME and Globex.")], ctx=ctx)
    assert unchanged.warnings == []  # nothing written: nothing lost its links
    stats = ingest_all([doc("a", "ACME and Globex, edited.")], ctx=ctx)
    [(source, message)] = stats.warnings
    assert source == "scope default" and "1 document it wrote mention nothing" in message
    assert "trails link" in message
    assert {e for _, e in links(ctx)} == {EX + "hooli"}
    assert [e for _, e in sorted(ctx.link().added, key=lambda x: x[1])] == [EX + "acme",
                                                                            EX + "globex"]
    # A scope nobody linked: no warning.
    assert ingest_all([doc("c", "ACME.")], ctx=ctx, scope="other").warnings == []


def test_a_run_with_a_linker_that_skips_documents_never_linked_says_so(ctx, tmp_path):
    """ingest --link run again over documents ingested without it linked nothing (they are
    current, so skipped) and said nothing: filters on mentions found none of them."""
    ingest_all([doc("a", "ACME and Globex."), doc("b", "Hooli.")], ctx=ctx)
    stats = ingest_all([doc("a", "ACME and Globex."), doc("b", "Hooli."), doc("c", "Initech.")],
                       ctx=ctx, linker=LabelLinker())
    assert stats.skipped == 2 and {e for _, e in links(ctx)} == {EX + "initech"}
    [(source, message)] = stats.warnings
    assert source == "scope default" and "2 documents this run skipped" in message
    assert "trails link" in message
    assert len(ctx.link().added) == 3  # acme, globex, hooli: what the warning pointed at
    # Linked once, a run that skips documents warns no more.
    assert ingest_all([doc("a", "ACME and Globex.")], ctx=ctx,
                      linker=LabelLinker()).warnings == []
    from trails import Context
    from trails.vector import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as stored:
        stored.kg.update('INSERT DATA { <https://ex.org/x> rdfs:label "Zorg" }')
        ingest_all([doc("a", "Nothing to link here.")], ctx=stored, linker=LabelLinker())
        # Its scope holds no mention, but a linker ran there: nothing was missed.
        assert ingest_all([doc("a", "Nothing to link here.")], ctx=stored,
                          linker=LabelLinker()).warnings == []


class _Linker:
    """A linker of one's own, whose mentions are ``make(chunk)``."""

    def __init__(self, make):
        self.make = make

    def for_scope(self, kg, scope):
        return self

    def mentions(self, chunk):
        return self.make(chunk)


BAD_MENTIONS = {
    "no absolute IRI": lambda c: [Mention(c.start, c.start + 3, "acme", c.text[:3])],
    "outside the chunk": lambda c: [Mention(c.end + 5, c.end + 9, EX + "x", "zzzz")],
    "not the text it spans": lambda c: [Mention(c.start, c.start + 3, EX + "x", "Nope")],
    "not a trails Mention": lambda c: [(EX + "x", c.start, c.start + 3)],
    "name the linker": lambda c: [Mention(c.start, c.start + 3, EX + "x", c.text[:3], linker="")],
}


@pytest.mark.parametrize("problem", sorted(BAD_MENTIONS))
def test_a_linkers_bad_mentions_fail_its_document_alone_and_are_refused_by_link(ctx, problem):
    """A linker of one's own that returned a mention of no IRI aborted the whole ingest with a
    raw ValueError at its commit; one with offsets or text that are not the chunk's was
    written as provenance that says what is not so."""
    bad = _Linker(lambda c: BAD_MENTIONS[problem](c) if "bad" in c.text else [])
    stats = ingest_all([doc("a", "A bad one."), doc("b", "A good one.")], ctx=ctx, linker=bad)
    assert stats.ingested == 1 and stats.failed == 1
    [(source, reason)] = stats.failures
    assert source == "a" and problem in reason and "fix the linker" in reason
    assert leftovers(ctx) == 0
    ingest_all([doc("a", "A bad one.")], ctx=ctx)
    with pytest.raises(InvalidArgumentError, match=problem):
        ctx.link(bad)
    assert leftovers(ctx) == 0


def test_labels_of_blank_nodes_are_named_not_left_out_in_silence(ctx):
    """An ontology whose entities are blank nodes ([ rdfs:label "Umbrella" ]): no link can
    point at one, so chunks naming them were left unlinked without a word."""
    ctx.kg.update('INSERT DATA { [] rdfs:label "Vandelay" . _:x rdfs:label "Pendant"@en }')
    stats = ingest_all([doc("a", "ACME met Vandelay and Pendant.")], ctx=ctx,
                       linker=LabelLinker())
    assert {e for _, e in links(ctx)} == {EX + "acme"}
    [(source, message)] = stats.warnings
    assert source == "scope default" and message.startswith("2 labels in the graph of scope "
                                                            "'default' are of blank nodes")
    assert ctx.link().warnings == [message]
    # Only the labels the linker would read count: English ones here.
    assert ctx.link(LabelLinker(languages=["en"])).warnings[0].startswith("1 label in the")
