"""Which bindings a query uses is read from its text once, however many bindings come: a
filter of 600 KB with 3,000 bindings was scanned once per binding (40 s a search, minutes
through the service for a body of 1 MB). The answer is the one the per-name definition gives:
a binding is used when ``?name`` or ``$name`` is in the query's code, followed by no other
word character."""

from __future__ import annotations

import re

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.kg import bindings as bindings_module
from trails.kg.bindings import check_bindings_used
from trails.kg.sparql import code_only
from trails.retrieval import candidates as candidates_module
from trails.testing import fresh_context


def _used_by_definition(query: str, name: str) -> bool:
    """SPARQL's VARNAME runs on through letters, digits, _, U+00B7 and U+00C0 onwards."""
    return re.search(rf"[?$]{re.escape(name)}(?![\w\u00b7\u00c0-\ufffd])",
                     code_only(query)) is not None


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,4}", fullmatch=True)
PIECES = st.lists(st.one_of(NAMES.map(lambda n: "?" + n), NAMES.map(lambda n: "$" + n), NAMES,
                            st.sampled_from([" ", "é", "\u00b7", "?", "$", "'?a'", "# ?b\n", "<urn:?c>",
                                             "??", "(", ")", "{", "}", "."])), max_size=12)


@settings(max_examples=300, deadline=None)
@given(pieces=PIECES, names=st.lists(NAMES, max_size=5))
def test_a_binding_is_used_exactly_when_its_variable_is_written(pieces, names):
    query = "SELECT * WHERE { " + " ".join(pieces) + " }"
    unused = [name for name in names if not _used_by_definition(query, name)]
    if unused:
        with pytest.raises(InvalidArgumentError, match=re.escape(repr(unused[0]))):
            check_bindings_used(query, names)
    else:
        check_bindings_used(query, names)


class _CountingRe:
    """The ``re`` module, counting the scans made through its functions."""

    def __init__(self) -> None:
        self.scans = 0

    def __getattr__(self, name):
        attribute = getattr(re, name)
        if name not in ("search", "findall", "finditer", "match", "fullmatch"):
            return attribute

        def counted(*args, **kwargs):
            self.scans += 1
            return attribute(*args, **kwargs)
        return counted


NAMES_1000 = [f"v{i}" for i in range(1000)]
# A filter that uses every binding (each in a VALUES row), over one document's chunks.
USES_ALL = ("SELECT ?iri WHERE { ?iri a trails:Chunk VALUES (" + " ".join("?" + n for n in NAMES_1000)
            + ") { (" + " ".join("1" for _ in NAMES_1000) + ") } }")


def test_the_query_is_read_once_whatever_the_number_of_bindings(monkeypatch):
    reads = []
    real = bindings_module.code_only
    monkeypatch.setattr(bindings_module, "code_only", lambda text: reads.append(1) or real(text))
    counting = _CountingRe()
    monkeypatch.setattr(bindings_module, "re", counting)
    check_bindings_used(USES_ALL, NAMES_1000)
    assert len(reads) == 1
    assert counting.scans <= 1


def test_a_search_reads_which_bindings_its_planned_filter_uses_once(monkeypatch):
    ctx = fresh_context()
    ingest_all([Document("a", "a", "Alpine glaciers retreat every summer.")], ctx=ctx)
    counting = _CountingRe()
    monkeypatch.setattr(candidates_module, "re", counting)
    hits = retrieve("glaciers", ctx, sparql_filter=USES_ALL,
                    bindings=dict.fromkeys(NAMES_1000, 1))
    assert [hit.document for hit in hits] == ["trails://local/doc/a"]
    assert counting.scans < 10  # not one per binding
    ctx.close()


def test_only_typed_text_is_read_back_by_the_graph_engine(monkeypatch):
    """Every binding was made a term and then cast by the graph engine to prove it well
    typed, a query each, three times a search: 200,000 numbers in a 3 MB body held a
    service worker for 30 s before it was refused. A Python value's own form is always a
    value of its type; only a literal typed by the caller is cast (and still refused)."""
    casts = []

    class Casts:
        def query(self, text):
            casts.append(text)
            return real.query(text)

    real = bindings_module._CASTS
    monkeypatch.setattr(bindings_module, "_CASTS", Casts())
    ctx = fresh_context()
    with pytest.raises(InvalidArgumentError, match="binding 'b0' names no variable"):
        retrieve("x", ctx, sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }",
                 bindings={f"b{i}": i for i in range(2000)})
    assert casts == []
    with pytest.raises(InvalidArgumentError, match="no xsd:date value"):
        retrieve("x", ctx, sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk FILTER(?d) }",
                 bindings={"d": ox.Literal("2024-13-01", datatype=ox.NamedNode(
                     "http://www.w3.org/2001/XMLSchema#date"))})
    assert len(casts) == 1
    ctx.close()


def test_a_name_written_only_inside_a_longer_name_is_not_used():
    # SPARQL names may hold a middle dot after their first character: ?via·z is one variable,
    # so a binding of ?via is bound to nothing the query reads.
    with pytest.raises(InvalidArgumentError, match="binding 'via' names no variable"):
        check_bindings_used("SELECT ?s WHERE { ?s ?p ?via\u00b7z }", ["via"])
    check_bindings_used("SELECT ?s WHERE { ?s ?p ?via\u00b7z }", ["via\u00b7z"])
    check_bindings_used("SELECT ?s WHERE { ?s ?p ?via . ?s ?q $via }", ["via"])
