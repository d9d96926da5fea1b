"""The audit record lists the entities a filter used: the user's entities (IRIs with a label,
or that a chunk mentions) the filter names, written out, by prefix or bound; never its
predicates, classes or trails' own documents. Expected sets are written by hand."""

from __future__ import annotations

import pytest

from trails import retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.ingest.linking import LabelLinker
from trails.kg import IRI
from trails.vector.embedders.mock import MockEmbedder

EX = "https://ex.org/"
ONTOLOGY = """PREFIX ex: <https://ex.org/> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
INSERT DATA {
  ex:acme rdfs:label "ACME" ; a ex:Company .
  ex:globex rdfs:label "Globex" ; ex:subOrganizationOf ex:acme .
  ex:hooli rdfs:label "Hooli" .
}"""
SUBSIDIARIES = ("PREFIX ex: <https://ex.org/> SELECT ?iri WHERE { ?iri trails:mentions ?e . "
                "?e ex:subOrganizationOf* ex:acme }")


@pytest.fixture
def ctx(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ctx.kg.update(ONTOLOGY)
        ingest_all([Document(id="a", source="a", text="Globex bought a stake."),
                    Document(id="b", source="b", text="Hooli news.")], ctx=ctx,
                   linker=LabelLinker())
        yield ctx


def recorded(ctx, result) -> list[str]:
    return ctx.audit.get(result.run_id).entities


@pytest.mark.parametrize("text", [
    SUBSIDIARIES,
    SUBSIDIARIES.replace("ex:acme", "<https://ex.org/acme>"),
    SUBSIDIARIES.replace("PREFIX ex: <https://ex.org/> ", "PREFIX org: <https://ex.org/> "
                         ).replace("ex:", "org:"),
])
def test_the_record_names_the_entities_the_filter_writes(ctx, text):
    result = retrieve("stake", ctx, sparql_filter=text)
    assert len(result) == 1
    assert recorded(ctx, result) == [EX + "acme"]


def test_bound_entities_are_named_and_strings_that_look_alike_are_not(ctx):
    text = SUBSIDIARIES.replace("ex:acme }", "?org } # ex:hooli").replace(
        "trails:mentions ?e .", 'trails:mentions ?e . FILTER(?e != "ex:globex")')
    result = retrieve("stake", ctx, sparql_filter=text, bindings={"org": IRI(EX + "acme")})
    assert recorded(ctx, result) == [EX + "acme"]


def test_a_filter_naming_no_entity_records_none(ctx):
    result = retrieve("stake", ctx, sparql_filter=(
        "PREFIX ex: <https://ex.org/> SELECT ?iri WHERE { ?iri a trails:Chunk ; "
        "trails:mentions ?e . ?e a ?type FILTER(?type != ex:Company) }"))
    assert recorded(ctx, result) == []
    assert recorded(ctx, retrieve("stake", ctx)) == []
