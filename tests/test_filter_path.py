"""Every filtered answer says how its filter was answered (``explain()``, ``to_dict()``, the
service and MCP answers): over documents from the graph's columns, over documents by a planned
query, over chunks reordered, or as written (with why a lift was refused); a kept answer says
how it was first found (retrieval/candidates.py, ADR 0013)."""

from __future__ import annotations

import pytest

from trails import retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.records import RetrievalResult
from trails.testing import fresh_context
from trails.vector import MockEmbedder

SINCE = ('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d '
         'FILTER(?d >= "2022-01-01"^^xsd:date) }')
# "undated, or dated after D": the documents with no date, or a date passing
UNDATED_OR_SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . OPTIONAL { ?doc "
                    "schema:dateCreated ?d } FILTER(!BOUND(?d) || ?d >= \"2022-01-01\"^^xsd:date) }")
OPTIONAL_FIRST = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . OPTIONAL { ?doc schema:name "
                  "?n } ?doc schema:dateCreated ?d }")
LIMITED = "SELECT ?iri WHERE { ?iri a trails:Chunk } LIMIT 3"
# another form of the same question (a path as two patterns, a UNION as VALUES, no ORDER BY),
# run over chunks in that form, not reordered (an OPTIONAL fixes the order): no filter as written
REWRITTEN = [("SELECT ?iri WHERE { ?iri schema:isPartOf/schema:dateCreated ?d . "
              "OPTIONAL { ?iri schema:position ?n } }"),
             ('SELECT ?iri WHERE { { ?iri schema:position 0 } UNION { ?iri schema:position 1 } '
              "OPTIONAL { ?iri schema:isPartOf ?doc } }"),
             ("SELECT ?iri WHERE { ?iri schema:position ?n . OPTIONAL { ?iri schema:isPartOf "
              "?doc } } ORDER BY ?n")]


def documents() -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}.md", text=f"Rails memo {i}. It explains routes.",
                     metadata={"date": f"202{i % 4}-01-01"}) for i in range(8)]


@pytest.fixture
def ctx():
    with fresh_context(dim=16) as context:
        ingest_all(documents(), ctx=context)
        yield context


@pytest.mark.parametrize(("text", "path"), [
    (SINCE, "documents-columns"),
    (UNDATED_OR_SINCE, "documents-columns"),
    (OPTIONAL_FIRST, "documents-query"),
    (LIMITED, "as-written"),
    *((text, "chunks-rewritten") for text in REWRITTEN),
])
def test_explain_names_the_filter_path(ctx, text, path):
    first = retrieve("rails", ctx, sparql_filter=text)
    assert first.filter_path == path
    assert f"filter={path}, " in first.explain()
    again = retrieve("rails", ctx, sparql_filter=text)
    assert again.filter_path == path  # kept from the first: found the same way
    assert RetrievalResult.from_dict(again.to_dict()).filter_path == again.filter_path


def test_an_unfiltered_answer_names_no_filter_path(ctx):
    result = retrieve("rails", ctx)
    assert result.filter_path is None and "filter=" not in result.explain()
    assert result.to_dict()["filter_path"] is None


def test_graph_mode_filters_over_chunks(ctx):
    result = retrieve("rails", ctx, sparql_filter=SINCE, mode="graph")
    assert result.filter_path in ("chunks-reordered", "as-written")


def test_a_refused_lift_says_why(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all(documents(), ctx=ctx)
        chunk = next(iter(ctx.vectors.all_ids()))
        ctx.kg.update(f"INSERT DATA {{ <{chunk}> schema:isPartOf <https://example.org/other> }}")
        hand = retrieve("rails", ctx, sparql_filter=SINCE)
        assert hand.filter_path == ("chunks-reordered (chunk links or document types changed "
                                    "by hand: trails verify plans it again)")
        ctx.kg.update(f"DELETE DATA {{ <{chunk}> schema:isPartOf <https://example.org/other> }}")
        ctx.kg.update("INSERT DATA { <https://example.org/a> schema:isPartOf "
                      "<https://example.org/b> . <https://example.org/a> a trails:Chunk . "
                      "<https://example.org/c> schema:isPartOf <https://example.org/b> }")
        assert ctx.verify().hand_links == []  # no live chunk's link: the marks go
        counted = retrieve("rails", ctx, sparql_filter=SINCE)
        assert counted.filter_path == ("chunks-reordered (the graph has schema:isPartOf "
                                       "triples trails did not write)")


def test_a_filter_that_fails_as_written_is_reported_once(caplog):
    """A filter selecting literals fails as written too: that is the caller's error, said once,
    with no warning about a planned form before it."""
    import pytest

    from trails.errors import SparqlError
    from trails.ingest import Document, ingest_all
    from trails.retrieval.retrieve import retrieve
    from trails.testing import fresh_context

    ctx = fresh_context()
    ingest_all([Document(id="a", source="a.md", text="rails", metadata={"date": "2024-01-01"})],
               ctx=ctx)
    with pytest.raises(SparqlError, match="none is an IRI"):
        retrieve("rails", ctx, sparql_filter="SELECT ?d WHERE { ?iri schema:isPartOf ?doc . "
                 "?doc schema:dateCreated ?d }")
    assert "planned filter failed" not in caplog.text
