"""Filters answered from the graph's columns (kg/filter_index.py, ADR 0029) select exactly what
Oxigraph selects for the filter as written: random documents, user triples that break the
shape (a second date, a date on a non-document, a wrong datatype, the value in another scope),
taxonomies, scopes, deleted and re-ingested documents, and filters of every shape the index
answers and some it must leave to the graph."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.ingest import Document, ingest_all
from trails.kg.filter_index import FilterIndex
from trails.kg.planning import lift_to_documents, parse_filter
from trails.kg.terms import IRI
from trails.retrieval.candidates import filter_candidates
from trails.retrieval.retrieve import retrieve
from trails.testing import fresh_context
from trails.vector import MockEmbedder

META = "https://trails.dev/meta#"
TOPICS = "https://example.org/t/"
LINK = "?iri schema:isPartOf ?doc ."
DATES = [dt.date(2020, 1, 1) + dt.timedelta(days=90 * i) for i in range(12)]
PLACES = ["EU", "US", "UK", "eu"]

# (group, bindings strategy): the filter's WHERE group after the chunk link
SHAPES = {
    "date since": ("?doc schema:dateCreated ?d . FILTER(?d >= ?since)",
                   st.fixed_dictionaries({"since": st.sampled_from(DATES)})),
    "date range": ("?doc schema:dateCreated ?d . FILTER(?d >= ?from && ?d < ?to)",
                   st.fixed_dictionaries({"from": st.sampled_from(DATES),
                                          "to": st.sampled_from(DATES)})),
    "date literal": ('?doc schema:dateCreated ?d . FILTER(?d < "2021-06-01"^^xsd:date)',
                     st.just({})),
    "equality bound": ("?doc meta:place ?j .", st.fixed_dictionaries({"j": st.sampled_from(PLACES)})),
    "equality written": ('?doc meta:place "EU" .', st.just({})),
    "two properties": ("?doc meta:place ?j . ?doc schema:dateCreated ?d . FILTER(?d > ?since)",
                       st.fixed_dictionaries({"j": st.sampled_from(PLACES),
                                              "since": st.sampled_from(DATES)})),
    "taxonomy": ("?doc meta:topic ?t . ?t rdfs:subClassOf* ?broad .",
                 st.fixed_dictionaries({"broad": st.sampled_from(
                     [IRI(TOPICS + n) for n in ("A", "B", "A1", "root", "none")])})),
    "not exists bound": ("FILTER NOT EXISTS { ?doc meta:label ?c }",
                         st.fixed_dictionaries({"c": st.sampled_from(["x", "y"])})),
    "not exists any": ("?doc meta:place ?j . FILTER NOT EXISTS { ?doc meta:label ?any }",
                       st.fixed_dictionaries({"j": st.sampled_from(PLACES)})),
    "string function": ('?doc meta:place ?j . FILTER(LCASE(STR(?j)) = "eu")', st.just({})),
    "any value": ("?doc meta:label ?c .", st.just({})),
    # A user's own classes on documents, and a taxonomy of them (ADR 29, "classes joined to
    # a taxonomy"): the members of each class the taxonomy names.
    "type taxonomy": ("?doc a ?type . ?type rdfs:subClassOf* ?broad .",
                      st.fixed_dictionaries({"broad": st.sampled_from(
                          [IRI(TOPICS + n) for n in ("A", "B", "A1", "root", "none")]
                          + [IRI("https://trails.dev/ns#Document")])})),
    "type path": ("?doc a/rdfs:subClassOf* ?broad .",
                  st.fixed_dictionaries({"broad": st.sampled_from(
                      [IRI(TOPICS + n) for n in ("A", "B", "root")])})),
    "type listed": (f"?doc a ?type . FILTER(?type IN (<{TOPICS}A1>, <{TOPICS}B>))", st.just({})),
    "type alone": ("?doc a ?type .", st.just({})),
    # classes a register lists, among them RDF 1.2 triple terms (one holding a blank node)
    "type registered": (f"?doc a ?type . <{TOPICS}register> <{TOPICS}lists> ?type .", st.just({})),
    # A value compared with another resource's (a claim's filing date): the test of the
    # document's value under each solution of the patterns joined to nothing of the document.
    "date after another's": ("?doc schema:dateCreated ?d . ?claim meta:filed ?c . FILTER(?d >= ?c)",
                             st.fixed_dictionaries({}, optional={"claim": st.sampled_from(
                                 [IRI(TOPICS + n) for n in ("claim1", "claim2", "none")])})),
    "date between two others'": (
        ("?doc schema:dateCreated ?d . ?claim meta:filed ?c . ?claim meta:closed ?e . "
        "FILTER(?d >= ?c) FILTER(?d < ?e && ?e > ?since)"),
        st.fixed_dictionaries({"since": st.sampled_from(DATES)})),
    "another's triple exists": ("?doc meta:place ?j . ?claim meta:filed ?c .",
                                st.fixed_dictionaries({"claim": st.sampled_from(
                                    [IRI(TOPICS + n) for n in ("claim1", "none")])})),
    # A chunk's own properties (trails writes them on every new chunk).
    "chunk position": ("?iri schema:position ?p . FILTER(?p <= ?n)",
                       st.fixed_dictionaries({"n": st.sampled_from([0, 1, 3])})),
    "chunk class": ("?iri a trails:Chunk .", st.just({})),
    "first chunks": ("?iri schema:position 0 .", st.just({})),
    "first chunks, created since": (("?iri schema:position 0 . ?doc schema:dateCreated ?d . "
                                    "FILTER(?d >= ?since)"),
                                    st.fixed_dictionaries({"since": st.sampled_from(DATES)})),
    # A chunk's value tested beside its document's (the documents' columns answer those).
    "chunk position, created since": (("?iri schema:position ?p . ?doc schema:dateCreated ?d . "
                                       "FILTER(?p <= ?n) FILTER(?d >= ?since)"),
                                      st.fixed_dictionaries({"n": st.sampled_from([0, 2]),
                                                             "since": st.sampled_from(DATES)})),
    "chunk offset, a place": ("?iri trails:startOffset ?o . ?doc meta:place ?j . FILTER(?o < 40)",
                              st.fixed_dictionaries({"j": st.sampled_from(PLACES)})),
    # A value variable named as the index's own could be.
    "value named i": ('?doc meta:place ?i . FILTER(?i != "US")', st.just({})),
    "bound named i": ("?doc schema:dateCreated ?d . FILTER(?d >= ?i)",
                      st.fixed_dictionaries({"i": st.sampled_from(DATES)})),
    # A UNION: one group per branch (kg/unions.py), or as written where a branch is a scope
    # of its own (a FILTER there sees neither the bindings nor the rest of the group).
    "union of two properties": (("{ ?doc meta:place ?j } UNION { ?doc meta:topic ?t . "
                                 "?t rdfs:subClassOf* ?broad }"),
                                st.fixed_dictionaries({"j": st.sampled_from(PLACES),
                                                       "broad": st.sampled_from(
                                    [IRI(TOPICS + n) for n in ("A", "B1", "none")])})),
    "union beside a date": (('?doc schema:dateCreated ?d . FILTER(?d >= ?since) '
                             '{ ?doc meta:place "EU" } UNION { ?doc meta:label ?c } UNION '
                             '{ ?doc a ?c }'),
                            st.fixed_dictionaries({"since": st.sampled_from(DATES),
                                                   "c": st.sampled_from(["x", "y"])})),
    "union of tests": (('{ ?doc schema:dateCreated ?d FILTER(?d < "2021-01-01"^^xsd:date) } '
                        'UNION { ?doc meta:place ?p FILTER(?p != "US") FILTER NOT EXISTS '
                        '{ ?doc meta:label ?any } }'), st.just({})),
    "union testing a binding": (("{ ?doc schema:dateCreated ?d FILTER(?d >= ?since) } UNION "
                                 '{ ?doc meta:label "x" }'),
                                st.fixed_dictionaries({"since": st.sampled_from(DATES)})),
    "union testing the group": (('?doc meta:place ?j . { ?doc schema:dateCreated ?d '
                                 'FILTER(?j = "EU") } UNION { ?doc meta:label "y" }'),
                                st.just({})),
    "union sharing a value": (("?doc meta:place ?j . { ?doc meta:label ?j } UNION "
                               "{ ?doc meta:topic ?t }"), st.just({})),
    "union of another resource": ('{ ?doc meta:place "UK" } UNION { ?claim meta:filed ?c }',
                                  st.just({})),
    "union with a blank node": (('{ ?doc meta:place "EU" } UNION { ?doc meta:topic _:t . '
                                 "_:t rdfs:subClassOf ?broad }"),
                                st.fixed_dictionaries({"broad": st.sampled_from(
                                    [IRI(TOPICS + n) for n in ("A", "B")])})),
    # Shapes the index leaves to the graph: the answer must still be Oxigraph's.
    "optional": ("?doc meta:place ?j . OPTIONAL { ?doc meta:label ?c }", st.just({})),
    "shared value": ("?doc meta:place ?j . ?doc meta:label ?j .", st.just({})),
    # a FILTER on a value that reads the graph (not the values alone)
    "exists on a value": ("?doc meta:topic ?t . FILTER NOT EXISTS { ?t rdfs:subClassOf ?broad }",
                          st.fixed_dictionaries({"broad": st.sampled_from(
                              [IRI(TOPICS + n) for n in ("A", "B")])})),
    "exists written": (f"?doc meta:topic ?t . FILTER EXISTS {{ ?t rdfs:subClassOf <{TOPICS}A> }}",
                       st.just({})),
    # what reads the group so far before a pattern binds the document (the link then must stay)
    "optional first": ("OPTIONAL { ?doc meta:label ?c } ?doc meta:place ?j . FILTER(!BOUND(?c))",
                       st.just({})),
    "minus first": ('MINUS { ?doc meta:label "x" } ?doc meta:place ?j .', st.just({})),
    "bind first": ('BIND(STR(?doc) AS ?s) ?doc meta:place ?j . FILTER(BOUND(?s))', st.just({})),
}

documents_strategy = st.lists(st.fixed_dictionaries({
    "date": st.one_of(st.none(), st.sampled_from(DATES)),
    "place": st.one_of(st.none(), st.sampled_from(PLACES)),
    "topic": st.one_of(st.none(), st.sampled_from(["A1", "A2", "B1", "C"])),
    "label": st.one_of(st.none(), st.sampled_from(["x", "y"])),
    "class": st.one_of(st.none(), st.sampled_from(["A1", "A2", "B", "C", "triple", "blank"])),
    "scope": st.sampled_from(["default", "legal"]),
}), min_size=1, max_size=10)

# Classes that are RDF 1.2 triple terms, one holding a blank node, and a register listing
# the blank one and A1 (a blank node inside a triple term written in a query is a variable).
CLASSES = {"triple": f"<<( <{TOPICS}x> <{TOPICS}p> <{TOPICS}o> )>>",
           "blank": f"<<( _:b <{TOPICS}p> <{TOPICS}o> )>>"}
REGISTER = [f"<{TOPICS}register> <{TOPICS}lists> {CLASSES['blank']} .",
            f"<{TOPICS}register> <{TOPICS}lists> <{TOPICS}A1> ."]

USER_TRIPLES = [
    # a second date on a document, a date on something that is no document, a wrong datatype
    '<{doc}> schema:dateCreated "2019-01-01"^^xsd:date',
    '<https://example.org/other> schema:dateCreated "2024-01-01"^^xsd:date',
    '<{doc}> schema:dateCreated "not a date"',
    '<{doc}> schema:dateCreated "2023-01-01T00:00:00"^^xsd:dateTime',
    '<{doc}> meta:place "EU"@en',
    '<{doc}> meta:place <https://example.org/EU>',
    '<{doc}> meta:label "x"',
    '<{doc}> meta:topic _:b',
    # classes: a second one, one on a chunk, a blank one in the taxonomy, a literal "class"
    '<{doc}> a <https://example.org/t/B1>',
    '<{chunk}> a <https://example.org/t/A1>',
    '<{doc}> a _:k . _:k rdfs:subClassOf <https://example.org/t/A>',
    '<{doc}> a "A"',
    # a claim's value that is a blank node, or in a scope's graph only
    '<https://example.org/t/claim1> meta:filed _:f',
    '<https://example.org/t/claim3> meta:filed "2020-01-01"^^xsd:date',
    '<https://example.org/t/C> rdfs:subClassOf <https://example.org/t/B>',
    # links trails did not write: a chunk's second, a document's own, a chunk of nothing
    '<{chunk}> schema:isPartOf <https://example.org/collection>',
    '<{doc}> schema:isPartOf <https://example.org/collection>',
    '<https://example.org/other> a trails:Chunk',
    # a document's properties on a chunk: trails' writes on chunks never touch them
    '<{chunk}> schema:dateCreated "2024-06-01"^^xsd:date',
    '<{chunk}> a trails:Document',
    '<{chunk}> meta:place "EU"',
    # a chunk's own predicate written by hand: a second position, another datatype, a value
    # equal to 0 that is not the term 0, a position on a document, a chunk made by hand
    '<{chunk}> schema:position 1',
    '<{chunk}> schema:position "0"',
    '<{chunk}> schema:position 0.0',
    '<{doc}> schema:position 0',
    '<https://example.org/hand> schema:position 0 ; schema:isPartOf <{doc}>',
]
# Which user triples go on which of the documents, and which documents are deleted.
user_triples_strategy = st.lists(st.tuples(st.integers(0, len(USER_TRIPLES) - 1),
                                           st.integers(0, 9)), max_size=4)
deleted_strategy = st.lists(st.integers(0, 9), max_size=2)


def _document(n, d, text=None):
    meta = {k: v for k, v in (("date", d["date"] and d["date"].isoformat()),
                              ("place", d["place"]), ("label", d["label"])) if v is not None}
    if d["topic"]:
        meta["topic"] = f"<{TOPICS}{d['topic']}>"
    return Document(id=f"d{n}", source=f"d{n}.md",
                    text=text or f"text of document {n}. more words here.", metadata=meta)


def _class(name: str) -> str:
    return CLASSES.get(name, f"<{TOPICS}{name}>")


def build(ctx, docs, extra, deleted, revised=()):
    taxonomy = "\n".join(f"<{TOPICS}{a}> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{TOPICS}{b}> ."
                         for a, b in (("A1", "A"), ("A2", "A"), ("B1", "B"), ("A", "root"),
                                      ("B", "root")))
    ctx.kg.load(taxonomy.encode(), format="ntriples")
    date = "^^<http://www.w3.org/2001/XMLSchema#date>"
    ctx.kg.load("\n".join(f"<{TOPICS}{claim}> <{META}{p}> {value} ." for claim, p, value in (
        ("claim1", "filed", f'"2021-01-01"{date}'), ("claim1", "closed", f'"2022-06-01"{date}'),
        ("claim2", "filed", f'"2020-06-01"{date}'), ("claim2", "filed", '"2023-01-01"'),
        ("claim2", "closed", f'"2023-01-01"{date}'))).encode(), format="ntriples")
    for scope in ("default", "legal"):
        ingest_all([_document(n, d) for n, d in enumerate(docs) if d["scope"] == scope],
                   ctx=ctx, scope=scope)
    iris = {n: f"{ctx.base_iri}doc/d{n}" for n in range(len(docs))}
    classes = [f"<{iris[n]}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> {_class(d['class'])} ." for n, d in enumerate(docs)
               if d.get("class")]  # in the default graph, as a user's own RDF loads
    if classes:  # a register listing some (one load: the blank node is the classes' own)
        ctx.kg.load("\n".join([*classes, *REGISTER]).encode(), format="ntriples")
    ids = ctx.vectors.metadata(ctx.vectors.all_ids())
    doc_iris = sorted({m["doc_iri"] for m in ids.values()})
    chunks = {m["doc_iri"]: i for i, m in sorted(ids.items(), reverse=True)}  # each one's first
    for index, (which, n) in enumerate(extra):
        if not doc_iris:
            break
        doc = doc_iris[n % len(doc_iris)]
        triple = USER_TRIPLES[which].format(doc=doc, chunk=chunks[doc])
        graph = "" if index % 2 else " GRAPH <urn:trails:scope:legal> "
        ctx.kg.update(f"INSERT DATA {{ {graph}{{ {triple} }} }}" if graph else
                      f"INSERT DATA {{ {triple} }}")
    for n in revised:  # a new version with several chunks (positions 0, 1, 2...) supersedes
        d = docs[n % len(docs)]
        text = " ".join(f"Sentence {i} of the revised document {n}." for i in range(60))
        ingest_all([_document(n % len(docs), d, text)], ctx=ctx, scope=d["scope"])
    for n in deleted:
        if doc_iris:
            ctx.delete_document(doc_iris[n % len(doc_iris)])
    return iris


def as_written(ctx, text, bindings, scopes):
    return set(ctx.vectors.expand_ids(ctx.kg.select_iris(text, bindings, scopes=scopes)))


def ranked_among(ctx, candidates, scopes):
    """What a search ranks of ``candidates``: their live chunks in the searched scopes (a
    document's user triples may sit in another scope's graph; its chunks stay in its own)."""
    ids = ctx.vectors.expand_ids(candidates)
    return {i for i, m in ctx.vectors.metadata(ids).items()
            if scopes is None or m.get("scope", "default") in scopes}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy, user_triples_strategy, deleted_strategy, st.data())
def test_planned_candidates_equal_the_filter_as_written(docs, extra, deleted, data):
    planned_equal_written(docs, extra, deleted, data, sorted(SHAPES))


UNION_SHAPES = sorted(name for name in SHAPES if name.startswith("union"))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy, user_triples_strategy, deleted_strategy, st.data())
def test_planned_candidates_of_a_union_equal_the_filter_as_written(docs, extra, deleted, data):
    planned_equal_written(docs, extra, deleted, data, UNION_SHAPES)


def planned_equal_written(docs, extra, deleted, data, shapes):
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    build(ctx, docs, extra, deleted, data.draw(st.lists(st.integers(0, 9), max_size=2)))
    for name in data.draw(st.lists(st.sampled_from(shapes), min_size=1, max_size=4)):
        group, bindings_strategy = SHAPES[name]
        bindings = data.draw(bindings_strategy)
        scopes = data.draw(st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
        text = f"SELECT ?iri WHERE {{ {LINK} {group} }}"
        with ctx.vectors.snapshot():
            found = filter_candidates(ctx.kg, text, bindings, scopes)
            planned = ranked_among(ctx, found, scopes)
        written = ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes), scopes)
        assert planned == written, (name, bindings, scopes)
        coded = getattr(found, "coded", None)
        if coded is not None:  # the codes a store may hash by are those of these very IRIs
            _, names, codes = coded
            assert names[codes].tolist() == list(found), (name, bindings, scopes)


CLASS_SHAPES = ["type taxonomy", "type path", "type listed", "type registered"]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({
    "date": st.none(), "place": st.none(), "topic": st.none(), "label": st.none(),
    "class": st.sampled_from(["A1", "B", "triple", "blank"]),
    "scope": st.sampled_from(["default", "legal"])}), min_size=1, max_size=6), st.data())
def test_classes_of_every_kind_select_what_the_graph_does(docs, data):
    """The class shapes alone, over documents whose classes are IRIs or RDF 1.2 triple terms
    (one holding a blank node): the members the columns read are the graph's."""
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    build(ctx, docs, [], [])
    for name in CLASS_SHAPES:
        group, bindings_strategy = SHAPES[name]
        bindings = data.draw(bindings_strategy)
        scopes = data.draw(st.sampled_from([None, ["default"], ["legal"]]))
        text = f"SELECT ?iri WHERE {{ {LINK} {group} }}"
        with ctx.vectors.snapshot():
            planned = ranked_among(ctx, filter_candidates(ctx.kg, text, bindings, scopes), scopes)
        written = ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes), scopes)
        assert planned == written, (name, bindings, scopes)


def test_a_value_test_the_values_store_cannot_run_leaves_the_filter_to_the_graph(ctx,
                                                                                 monkeypatch):
    """A FILTER on a column's values runs in a small store of its own; an error of that store
    (pyoxigraph raises SyntaxError, ValueError, RuntimeError or OSError) must cost the index,
    not the caller's answer: the graph answers the filter."""
    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.",
                     metadata={"date": DATES[n % 12].isoformat()}) for n in range(6)]
    ingest_all(docs, ctx=ctx)
    text = (f"SELECT ?iri WHERE {{ {LINK} ?doc schema:dateCreated ?d . "
            'FILTER(?d >= "2020-06-01"^^xsd:date) }')

    class Failing:
        def query(self, *args, **kwargs):
            raise RuntimeError("The custom function <https://example.org/f> is not supported")

    from trails.kg import filter_index
    monkeypatch.setattr(filter_index.Column, "store", lambda self: Failing())
    path: list[str] = []
    planned = filter_candidates(ctx.kg, text, None, None, path=path)
    assert set(ctx.vectors.expand_ids(planned)) == set(ctx.vectors.expand_ids(
        ctx.kg.select_iris(text))) != set()
    assert path == ["documents-query"]


def test_the_index_answers_the_benchmarked_shapes_itself(ctx):
    """The shapes a compliance user writes are answered by the columns, not handed back."""
    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.", metadata={
        "date": DATES[n % 12].isoformat(), "place": PLACES[n % 3], "topic": f"<{TOPICS}A1>",
        **({"label": "x"} if n % 2 else {})}) for n in range(12)]
    ingest_all(docs, ctx=ctx)
    ctx.kg.load(f"<{TOPICS}A1> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{TOPICS}A> ."
                f"\n<{ctx.base_iri}doc/d1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{TOPICS}A1> .".encode(), format="ntriples")
    index = FilterIndex(ctx.kg.select_tsv, None)
    for name, bound in (("date since", "since"), ("date range", "from to"),
                        ("equality bound", "j"), ("taxonomy", "broad"), ("not exists bound", "c"),
                        ("string function", ""), ("two properties", "j since"),
                        ("type taxonomy", "broad"), ("union of two properties", "j broad"),
                        ("union beside a date", "since c"), ("union of tests", "")):
        group, _ = SHAPES[name]
        shape = parse_filter(f"SELECT ?iri WHERE {{ {LINK} {group} }}", ctx.kg.prefixes)
        lifted = lift_to_documents(shape)
        terms = {"since": ox.Literal("2020-06-01", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#date")), "from": ox.Literal("2020-01-01", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#date")), "to": ox.Literal("2021-01-01", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#date")), "j": ox.Literal("EU"),
            "broad": ox.NamedNode(f"{TOPICS}A"), "c": ox.Literal("x")}
        used = {k: terms[k] for k in bound.split()}
        assert index.documents(lifted.variable, lifted.items, shape.prologue, shape.prefixes,
                               used) is not None, name
    # A branch whose FILTER reads a binding or the rest of the group, or that holds a blank
    # node, is a scope of its own: the graph answers it as written.
    for name, bound in (("union testing a binding", "since"), ("union testing the group", ""),
                        ("union with a blank node", "broad")):
        shape = parse_filter(f"SELECT ?iri WHERE {{ {LINK} {SHAPES[name][0]} }}",
                             ctx.kg.prefixes)
        lifted = lift_to_documents(shape)
        used = {k: terms[k] for k in bound.split()}
        assert index.documents(lifted.variable, lifted.items, shape.prologue, shape.prefixes,
                               used) is None, name


def test_a_filtered_search_through_the_index_ranks_the_same_candidates_as_the_graph(ctx):
    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"rails document number {n} about trains.",
                     metadata={"date": DATES[n % 12].isoformat()}) for n in range(30)]
    ingest_all(docs, ctx=ctx)
    text = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . FILTER(?d >= ?since) }"
    result = retrieve("rails", ctx, sparql_filter=text, bindings={"since": DATES[6]}, k=50,
                      fusion=None)
    expected = as_written(ctx, text, {"since": DATES[6]}, None)
    # n % 12 >= 6: documents 6-11 and 18-23, one chunk each
    assert {h.iri for h in result} == expected and len(expected) == 12


def test_a_read_only_view_lifts_only_while_no_write_has_landed_since_it_opened(tmp_path):
    from trails.context import Context
    from trails.retrieval.consistency import can_check_documents

    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"rails document {n}.",
                     metadata={"date": DATES[n % 12].isoformat()}) for n in range(12)]
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as writer:
        ingest_all(docs, ctx=writer)
    reader = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), read_only=True)
    text = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
            "FILTER(?d >= ?since) }")
    try:
        assert can_check_documents(reader.kg, reader.vectors)
        assert not can_check_documents(reader.kg, reader.vectors, again=True)
        before = retrieve("rails", reader, sparql_filter=text, bindings={"since": DATES[9]},
                          fusion=None)
        assert len(before) == 3  # documents 9, 10 and 11
        with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as writer:
            ingest_all([Document(id="late", source="late.md", text="rails, late.",
                                 metadata={"date": DATES[11].isoformat()})], ctx=writer)
        assert not can_check_documents(reader.kg, reader.vectors)  # the stamp on disk moved
        after = retrieve("rails", reader, sparql_filter=text, bindings={"since": DATES[9]},
                         fusion=None)
        assert len(after) == 4 and not after.notes
    finally:
        reader.close()


def test_positions_written_by_hand_are_answered_as_the_graph_does(ctx):
    """Filters on a chunk's own position, after hand writes that make the graph disagree with
    the position each chunk's IRI carries (``/c/<n>``): a plan answering from the IRIs, or from
    positions as ingestion writes them, would fail each case; the planner must give the
    graph's answer."""
    text = " ".join(f"Sentence {i} of a long document." for i in range(200))
    ingest_all([Document(id="long", source="long.md", text=text, metadata={"date": "2021-01-01"}),
                Document(id="short", source="short.md", text="one chunk only.",
                         metadata={"date": "2024-01-01"})], ctx=ctx)
    ingest_all([Document(id="long", source="long.md", text=text + " Revised.",
                         metadata={"date": "2021-01-01"})], ctx=ctx)  # a second version
    chunks = sorted(ctx.vectors.all_ids())
    long = sorted((c for c in chunks if "/doc/long/" in c), key=lambda c: int(c.rsplit("/", 1)[1]))
    assert len(long) >= 3
    first = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc ; schema:position 0 }")
    below = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc ; schema:position ?p "
             "FILTER(?p < 2) }")
    since = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc ; schema:position 0 . "
             "?doc schema:dateCreated ?d FILTER(?d >= ?since) }")

    def by_iri(limit: int) -> set[str]:
        return {c for c in chunks if int(c.rsplit("/", 1)[1]) < limit}

    cases = [  # (update, filter, what the chunk IRIs say)
        (f"INSERT DATA {{ <{long[2]}> schema:position 0 }}", first, by_iri(1)),  # two positions
        (f"INSERT DATA {{ <{long[2]}> schema:position 1.5 }}", below, by_iri(2)),  # a decimal
        ((f'INSERT DATA {{ <{long[0]}> schema:position "0" }} ; '
         f"DELETE DATA {{ <{long[0]}> schema:position 0 }}"), first, by_iri(1)),  # a string only
        (f"INSERT DATA {{ GRAPH <urn:trails:scope:legal> {{ <{long[1]}> schema:position 0 }} }}",
         first, by_iri(1)),  # in another scope's graph
        (("INSERT DATA { <https://example.org/hand> schema:position 0 ; schema:isPartOf "
         f"<{ctx.base_iri}doc/long> }}"), first, by_iri(1)),  # a chunk made by hand
        ((f"INSERT DATA {{ <{ctx.base_iri}doc/short> schema:dateCreated "
         '"2019-01-01"^^xsd:date }'), since, by_iri(1)),  # a document property, for contrast
    ]
    for update, text, from_iris in cases:
        ctx.kg.update(update)
        bindings = {"since": dt.date(2023, 1, 1)} if "?since" in text else None
        for scopes in (None, ["default"], ["legal"]):
            written = set(ctx.kg.select_iris(text, bindings, scopes=scopes))
            planned = filter_candidates(ctx.kg, text, bindings, scopes, documents=False)
            assert set(planned) == written, (update, scopes)
        if "?since" not in text:
            assert set(ctx.kg.select_iris(text, bindings)) != from_iris, update  # a real trap


def test_documents_of_a_class_or_its_subclasses_are_the_members_of_each_class(ctx):
    """``?doc a ?type . ?type rdfs:subClassOf* ?broad`` (and the path ``a/rdfs:subClassOf*``)
    from the columns: the members of every class the taxonomy names, each class read on its
    own; expected sets written by hand."""
    ingest_all([Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.") for n in range(6)],
               ctx=ctx)
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    sub = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
    classes = {0: "A1", 1: "A1", 2: "A2", 3: "B", 4: "A"}  # d5 has no class of its own
    ctx.kg.load("\n".join([f"<{TOPICS}A1> {sub} <{TOPICS}A> .", f"<{TOPICS}A2> {sub} <{TOPICS}A> .",
                           f"<{TOPICS}A> {sub} <{TOPICS}root> .", f"<{TOPICS}B> {sub} <{TOPICS}root> ."]
                          + [f"<{ctx.base_iri}doc/d{n}> {rdf_type} <{TOPICS}{c}> ."
                             for n, c in classes.items()]).encode(), format="ntriples")
    expected = {"A": {0, 1, 2, 4}, "A1": {0, 1}, "B": {3}, "root": {0, 1, 2, 3, 4}, "none": set()}
    for group in ("?doc a ?type . ?type rdfs:subClassOf* ?broad .", "?doc a/rdfs:subClassOf* ?broad ."):
        for broad, numbers in expected.items():
            path: list[str] = []
            found = filter_candidates(ctx.kg, f"SELECT ?iri WHERE {{ {LINK} {group} }} # {broad}",
                                      {"broad": IRI(TOPICS + broad)}, None, path=path)
            assert sorted(found) == sorted(f"{ctx.base_iri}doc/d{n}" for n in numbers), (group, broad)
            assert path == ["documents-columns"], (group, broad)
    # A blank class in the taxonomy: a blank node written in a query is a variable, so the
    # graph joins it, and the answer is still the members of every class.
    ctx.kg.update(f"INSERT DATA {{ <{ctx.base_iri}doc/d5> a _:k . _:k rdfs:subClassOf <{TOPICS}B> }}")
    path = []
    found = ranked_among(ctx, filter_candidates(
        ctx.kg, f"SELECT ?iri WHERE {{ {LINK} ?doc a ?type . ?type rdfs:subClassOf* ?broad }}",
        {"broad": IRI(TOPICS + "B")}, None, path=path), None)
    assert {i.split("/v/")[0] for i in found} == {f"{ctx.base_iri}doc/d3", f"{ctx.base_iri}doc/d5"}
    assert path != ["documents-columns"]


def test_a_class_that_is_a_triple_term_holding_a_blank_node_is_that_class_only(ctx):
    """A register lists the class ``<<( _:b ex:p ex:o )>>`` (RDF 1.2): d0 is of that class,
    d1 of ``<<( ex:x ex:p ex:o )>>``. Written back into a query, the blank node inside the
    triple term is a variable and would read d1 as a member too; the answer is d0 alone
    (written by hand), and d1 for the register of the other class (from the columns: a
    triple term of IRIs is exactly that class)."""
    ingest_all([Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.") for n in range(3)],
               ctx=ctx)
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    blank, plain = (f"<<( {s} <{TOPICS}p> <{TOPICS}o> )>>" for s in ("_:b", f"<{TOPICS}x>"))
    ctx.kg.load("\n".join([f"<{ctx.base_iri}doc/d0> {rdf_type} {blank} .",
                           f"<{ctx.base_iri}doc/d1> {rdf_type} {plain} .",
                           f"<{TOPICS}one> <{TOPICS}lists> {blank} .",
                           f"<{TOPICS}two> <{TOPICS}lists> {plain} ."]).encode(),
                format="ntriples")
    for register, number in (("one", 0), ("two", 1)):
        path: list[str] = []
        found = filter_candidates(ctx.kg, f"SELECT ?iri WHERE {{ {LINK} ?doc a ?type . "
                                  f"<{TOPICS}{register}> <{TOPICS}lists> ?type }}", None, None,
                                  path=path)
        assert sorted(found) == [f"{ctx.base_iri}doc/d{number}"], register
        if register == "two":  # a triple term of IRIs names itself: the columns answer it
            assert path == ["documents-columns"]


def test_a_value_compared_with_another_resources_is_answered_from_the_columns(ctx):
    """``?doc schema:dateCreated ?d . ?claim ex:filed ?c . FILTER(?d >= ?c)``: the documents
    whose date passes under one of the claim's dates (expected sets written by hand); with
    too many such dates the graph answers, the same."""
    ingest_all([Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.",
                         metadata={"date": f"2024-0{n + 1}-01"}) for n in range(6)], ctx=ctx)
    ctx.kg.update(f"PREFIX ex: <{TOPICS}> INSERT DATA {{ ex:one ex:filed \"2024-03-15\"^^xsd:date ."
                  " ex:two ex:filed \"2024-05-01\"^^xsd:date, \"2024-02-01\"^^xsd:date ."
                  " ex:two ex:closed \"2024-04-01\"^^xsd:date }")
    text = (f"PREFIX ex: <{TOPICS}> SELECT ?iri WHERE {{ {LINK} ?doc schema:dateCreated ?d . "
            "?claim ex:filed ?c . FILTER(?d >= ?c) }")
    for claim, numbers in (("one", {3, 4, 5}), ("two", {1, 2, 3, 4, 5}), ("none", set())):
        path: list[str] = []
        found = filter_candidates(ctx.kg, text, {"claim": IRI(TOPICS + claim)}, None, path=path)
        assert sorted(found) == sorted(f"{ctx.base_iri}doc/d{n}" for n in numbers), claim
        assert path == ["documents-columns"], claim
    between = text.replace("FILTER(?d >= ?c)", "?claim ex:closed ?e . FILTER(?d >= ?c && ?d < ?e)")
    found = filter_candidates(ctx.kg, between, {"claim": IRI(TOPICS + "two")}, None)
    assert sorted(found) == [f"{ctx.base_iri}doc/d{n}" for n in (1, 2)]
    ctx.kg.update(f"PREFIX ex: <{TOPICS}> INSERT DATA {{ ex:many ex:filed " + ", ".join(
        f'"2023-{1 + n % 12:02d}-{1 + n // 12:02d}"^^xsd:date' for n in range(80)) + " }")
    path = []
    found = filter_candidates(ctx.kg, text, {"claim": IRI(TOPICS + "many")}, None, path=path)
    assert len(found) == 6 and path != ["documents-columns"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-3, 40), max_size=60))
def test_subjects_of_a_sorted_column_once_each_are_numpys_unique(values):
    """A column's subjects are sorted; a test's rows keep that order, so each subject is kept
    once by comparing neighbours (numpy's own unique is the reference)."""
    import numpy as np

    from trails._arrays import firsts

    ordered = np.array(sorted(values), dtype=np.int64)
    assert ordered[firsts(ordered)].tolist() == np.unique(ordered).tolist()


def test_a_chunk_predicate_is_a_column_when_its_value_is_a_variable(ctx):
    """A predicate on every chunk (a position) whose value is a variable, at the top or in a
    UNION's branch, is answered from its column, as the graph answers it; with its value given
    (``schema:position 0``, ``a trails:Chunk``) the graph's index answers, until the column is
    at hand; a test of the chunks' text is never a column (it would be the corpus). A column
    answer selecting nothing is that answer, not a second evaluation by the graph."""
    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"text {n}.\n\nmore {n}.",
                     metadata={"place": PLACES[n % 3]}) for n in range(6)]
    ingest_all(docs, ctx=ctx)
    reads: list[str] = []
    select_tsv, select_iris = ctx.kg.select_tsv, ctx.kg.select_iris

    def recorded(text, scopes=None):
        reads.append(text)
        return select_tsv(text, scopes)

    def evaluated(text, *args, **kwargs):
        reads.append(f"evaluated {text}")
        return select_iris(text, *args, **kwargs)

    given = 'SELECT ?x WHERE { { ?x schema:position 0 } UNION { ?x meta:place "EU" } }'
    typed = 'SELECT ?x WHERE { { ?x meta:place "EU" } UNION { ?x a trails:Chunk } }'
    cases = [  # (the filter, answered from columns), in this order
        (given, False), (typed, False),
        ('SELECT ?x WHERE { ?x schema:text ?t FILTER(CONTAINS(?t, "more 3")) }', False),
        ('SELECT ?x WHERE { ?x schema:position ?p FILTER(?p < 1 && ?p >= 0) }', True),
        (('SELECT ?x WHERE { { ?x schema:position ?p FILTER(?p < 1) } UNION { ?x meta:place '
          '"EU" } }'), True),
        # the chunk's document's condition: the documents' columns answer it too
        (('SELECT ?x WHERE { ?x schema:isPartOf ?doc ; schema:position ?p . ?doc meta:place '
          '"EU" FILTER(?p < 1) }'), True),
        ('SELECT ?x WHERE { ?x schema:position ?p FILTER(?p > 7) }', True),  # nothing
        (given + " # again", True),  # the position column is at hand now
        (typed + " # again", False),  # the class of every chunk is not
    ]
    ctx.kg.select_tsv = recorded
    for text, columns in cases:
        path: list[str] = []
        start = len(reads)
        ctx.kg.select_iris = evaluated
        found = filter_candidates(ctx.kg, text, None, None, path=path)
        ctx.kg.select_iris = select_iris
        assert set(found) == set(ctx.kg.select_iris(text)), text
        assert bool(found) == ("?p > 7" not in text), text
        assert (path[0] == "columns") == columns, (text, path)
        evaluated_here = [r for r in reads[start:] if r.startswith("evaluated")]
        assert bool(evaluated_here) != columns, (text, evaluated_here)  # one way, not both
    read = [r for r in reads if r.startswith("SELECT ?s")]  # a column's or class's rows
    assert [r for r in read if "position" in r], read
    assert not [r for r in read if "Chunk" in r or "schema.org/text" in r], read
    assert not [r for r in reads if "SELECT DISTINCT ?doc" in r], reads  # no graph query
