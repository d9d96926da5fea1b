"""No silent empty answers: a filter that selects nothing because a binding's type never
compares with the values it is compared with (a date against dateTimes, a number against
strings), or because it names a term the scopes never hold (a typo), says so in a note; a
filter that is merely empty, or that selects something, has none."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context

UTC = dt.UTC
SINCE = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:%s ?v . FILTER(?v >= ?x) }"


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "mem", "Rails routing.", metadata={
        "signed": dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC), "day": dt.date(2024, 5, 1),
        "code": "4983", "pages": 12})], ctx=context)
    ingest_all([Document("z", "mem", "Rails elsewhere.", metadata={"code": 7})], ctx=context,
               scope="legal")
    yield context
    context.close()


@pytest.mark.parametrize(("key", "bound", "held", "hint"), [
    ("signed", dt.date(2024, 1, 1), "xsd:dateTime", "bind a datetime.datetime"),
    ("day", dt.datetime(2024, 1, 1, tzinfo=UTC), "xsd:date", "bind a datetime.date"),
    ("code", 5000, "string", "bind a string"),
    ("pages", "10", "number", "bind a number"),
])
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_binding_of_a_type_the_values_never_take_is_named(ctx, key, bound, held, hint, mode):
    result = retrieve("rails", ctx, mode=mode, sparql_filter=SINCE % key, bindings={"x": bound})
    assert len(result) == 0
    (note,) = [n for n in result.notes if "nothing could" in n]
    assert f"?v holds {held} values" in note and "?x is bound to" in note and hint in note
    assert note in result.explain()


def test_values_of_another_scope_are_not_what_the_filter_compares(ctx):
    """"code" is a number in the legal scope alone: searching default, the strings decide."""
    note = " ".join(retrieve("rails", ctx, sparql_filter=SINCE % "code",
                             bindings={"x": 5000}).notes)
    assert "holds string values" in note and "number" in note
    legal = retrieve("rails", ctx, sparql_filter=SINCE % "code", bindings={"x": 5000},
                     scope="legal")
    assert len(legal) == 0 and not any("nothing could" in n for n in legal.notes)


def test_other_filters_on_the_same_query_still_bind(ctx):
    both = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:code ?v ; meta:day ?d "
            "FILTER(?v = ?x) FILTER(?d >= ?from && ?d < ?to) }")
    notes = retrieve("rails", ctx, mode="graph", sparql_filter=both, bindings={
        "x": 4983, "from": dt.date(2024, 1, 1), "to": dt.date(2025, 1, 1)}).notes
    assert [n.split(",")[0] for n in notes if "nothing could" in n] == ["nothing matched"]
    assert "?x is bound to a number" in " ".join(notes)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([
    ("signed", st.datetimes(timezones=st.just(UTC))),
    ("day", st.dates()),
    ("code", st.text(alphabet="0123456789", max_size=6)),
    ("pages", st.integers(-10**6, 10**6))]).flatmap(
        lambda pair: st.tuples(st.just(pair[0]), pair[1])),
       st.sampled_from([">=", "<", "="]))
def test_a_binding_of_the_values_type_never_raises_the_note(ctx, case, operator):
    key, value = case
    text = SINCE.replace(">=", operator) % key
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text, bindings={"x": value})
    assert not any("nothing could" in n for n in result.notes)


def test_a_filter_the_probe_cannot_rewrite_gives_no_note_and_no_error(ctx):
    text = ("SELECT ?iri WHERE { { SELECT ?iri ?v WHERE { ?iri schema:isPartOf ?doc . "
            "?doc meta:code ?v } LIMIT 5 } FILTER(?v >= ?x) }")
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text, bindings={"x": 5000})
    assert len(result) == 0


def test_the_command_line_prints_the_note(tmp_path):
    db, notes = tmp_path / "kb", tmp_path / "n.jsonl"
    notes.write_text('{"id": "a", "text": "Rails routing.", "code": "4983"}\n')
    runner = CliRunner()
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:16"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(db), "ingest", str(notes), "-q"]).exit_code == 0
    result = runner.invoke(app, ["--db", str(db), "query", "rails", "--local", "--sparql",
                                 SINCE % "code", "--bind", "x=5000"])
    assert result.exit_code == 0
    assert "holds string values" in " ".join((result.output + str(result.stderr)).split())


# -- terms the scopes never hold ------------------------------------------------------------

TYPO = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc %s }"


@pytest.mark.parametrize(("pattern", "term", "near"), [
    ("schema:dateCreatd ?d", "schema:dateCreatd", None),
    ("meta:cod ?v", "meta:cod", "meta:code"),
    ("meta:signd ?v", "meta:signd", "meta:signed"),
    ("<https://trails.dev/meta#pagess> ?v", "<https://trails.dev/meta#pagess>", "meta:pages"),
    ("a trails:Documnt", "trails:Documnt", "trails:Document"),
])
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_term_no_triple_of_the_scopes_holds_is_named(ctx, pattern, term, near, mode):
    result = retrieve("rails", ctx, mode=mode, sparql_filter=TYPO % pattern)
    assert len(result) == 0
    (note,) = [n for n in result.notes if "in no triple" in n]
    assert note.startswith(f"nothing matched: {term} is in no triple of the scope default")
    if near is not None:
        assert note.endswith(f"did you mean {near}?")
    assert note in result.explain()


def test_a_document_iri_of_another_scope_is_named_and_found_in_its_own(ctx):
    text = ("SELECT ?iri WHERE { VALUES ?doc { <trails://local/scope/legal/doc/z> } "
            "?iri schema:isPartOf ?doc }")
    notes = retrieve("rails", ctx, mode="graph", sparql_filter=text).notes
    assert any("<trails://local/scope/legal/doc/z> is in no triple of the scope default" in n
               for n in notes)
    legal = retrieve("rails", ctx, mode="graph", sparql_filter=text, scope="legal")
    assert not any("in no triple" in n for n in legal.notes)


@pytest.mark.parametrize("text", [
    # datatypes, graph names, functions and values inside expressions are no nodes to look for
    TYPO % 'meta:day "2031-01-01"^^xsd:date',
    TYPO % 'meta:day ?d FILTER(?d > xsd:date("2031-01-01"))',
    "SELECT ?iri WHERE { GRAPH <urn:trails:scope:default> { ?iri schema:isPartOf <x:nowhere> } }"
    .replace("<x:nowhere>", "?doc . ?doc meta:code \"none\""),
    TYPO % 'meta:code ?v FILTER(?v = "<https://ex.org/not-a-term>")',
    "# a comment naming ex:gone\n" + TYPO % "meta:code 'none'",
])
def test_terms_that_are_no_nodes_or_that_the_scopes_hold_raise_no_note(ctx, text):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text)
    assert len(result) == 0 and not any("in no triple" in n for n in result.notes)


def test_a_filter_that_selects_something_is_not_probed(ctx, monkeypatch):
    from trails.retrieval import absent_terms, mismatched

    def fail(*args, **kwargs):
        raise AssertionError("probed a filter that selected something")

    monkeypatch.setattr(absent_terms, "_pattern_terms", fail)
    monkeypatch.setattr(mismatched, "_compared", fail)
    result = retrieve("rails", ctx, mode="graph", sparql_filter=TYPO % "meta:code '4983'")
    assert len(result) == 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["meta:code", "meta:day", "meta:signed", "meta:pages",
                                 "schema:isPartOf", "trails:documentId", "schema:name"]),
                min_size=1, max_size=3, unique=True),
       st.text(alphabet="abc", min_size=1, max_size=4))
def test_terms_the_scope_holds_never_raise_the_note(ctx, predicates, value):
    """Patterns over predicates the scope uses, with a value no triple has: empty, no note."""
    patterns = " ".join(f"?doc {p} ?v{i} ." for i, p in enumerate(predicates))
    text = f'SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc . {patterns} ?doc meta:code "{value}" }}'
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text)
    assert len(result) == 0 and not any("in no triple" in n for n in result.notes)
_XSD = "http://www.w3.org/2001/XMLSchema#"
_HELD = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc <https://ex.org/%s> ?v . FILTER(%s) }"


@pytest.fixture(scope="module")
def held():
    """A document whose graph values are a duration, an IRI and a number (loaded by hand)."""
    context = fresh_context()
    ingest_all([Document("a", "mem", "Rails routing.")], ctx=context)
    context.kg.load(
        f'<trails://local/doc/a> <https://ex.org/took> "P2D"^^<{_XSD}duration> ; '
        f'<https://ex.org/span> "P1Y"^^<{_XSD}yearMonthDuration> ; '
        '<https://ex.org/kind> <https://ex.org/K> ; <https://ex.org/n> 3 .')
    yield context
    context.close()


@pytest.mark.parametrize(("key", "bound"), [
    ("took", ("P5D", "dayTimeDuration")),  # every duration compares with every other
    ("took", ("P5D", "duration")),
    ("span", ("P2Y", "duration")),
    ("span", ("P2Y", "yearMonthDuration")),
])
def test_durations_of_the_three_types_compare_and_raise_no_note(held, key, bound):
    import pyoxigraph as ox

    value = ox.Literal(bound[0], datatype=ox.NamedNode(_XSD + bound[1]))
    result = retrieve("rails", held, mode="graph", sparql_filter=_HELD % (key, "?v >= ?x"),
                      bindings={"x": value})
    assert len(result) == 0 and not any("nothing could" in n for n in result.notes)


@pytest.mark.parametrize("condition", [
    "!(?v = ?x) && ?doc = <https://ex.org/none>",  # the comparison fails, the ! makes it true
    "(?v = ?x || ?doc = <https://ex.org/none>) && ?doc = <https://ex.org/none>",
    "IF(?v = ?x, false, true) && ?doc = <https://ex.org/none>",
    "?v NOT IN (?x) && ?doc = <https://ex.org/none>",
])
def test_a_comparison_a_filter_negates_or_weighs_with_another_gives_no_note(held, condition):
    """The filter selected nothing because of its other test: that the comparison can never
    hold is not why, and may even make it true."""
    result = retrieve("rails", held, mode="graph", sparql_filter=_HELD % ("kind", condition),
                      bindings={"x": "K"})
    assert len(result) == 0 and not any("nothing could" in n for n in result.notes)


def test_a_comparison_outside_any_filter_gives_no_note(held):
    text = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc <https://ex.org/kind> ?v . "
            "BIND(IF(?v = ?x, 1, 0) AS ?s) FILTER(?s = 2) }")
    result = retrieve("rails", held, mode="graph", sparql_filter=text, bindings={"x": "K"})
    assert len(result) == 0 and not any("nothing could" in n for n in result.notes)


def test_a_plain_comparison_of_an_iri_with_a_string_still_says_so(held):
    result = retrieve("rails", held, mode="graph", sparql_filter=_HELD % ("kind", "?v = ?x"),
                      bindings={"x": "K"})
    (note,) = [n for n in result.notes if "nothing could" in n]
    assert "?v holds IRI values" in note


def test_a_name_sharing_only_its_namespace_is_no_suggestion(ctx):
    """meta:secretcod is not meta:code misspelt: the namespace they share is no likeness."""
    result = retrieve("rails", ctx, mode="graph", sparql_filter=TYPO % "meta:secretcod ?v")
    (note,) = [n for n in result.notes if "in no triple" in n]
    assert "did you mean" not in note and note.endswith("and the scopes searched")


def test_a_probe_that_fails_costs_the_note_not_the_answer(monkeypatch, caplog):
    """Why a filter selected nothing is worked out after the answer: a probe that fails (a
    term it cannot write, a graph that errs) leaves the empty answer, with the other notes."""
    import sys

    from trails.errors import SparqlError
    from trails.ingest import Document, ingest_all
    from trails.testing import fresh_context

    def failing(*args, **kwargs):
        raise SparqlError("a probe the graph cannot parse")

    ctx = fresh_context()
    ingest_all([Document(id="a", source="a.md", text="rails notes.")], ctx=ctx)
    retrieve_module = sys.modules["trails.retrieval.retrieve"]  # the package names a function so
    monkeypatch.setattr(retrieve_module, "mismatch_notes", failing)
    result = retrieve_module.retrieve(
        "rails", ctx, sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?d . "
        "?d schema:dateCreatd ?x }")
    assert list(result) == []
    assert any("schema:dateCreatd" in note for note in result.notes)  # the other probes ran
    assert "could not tell why the filter selected nothing" in caplog.text
