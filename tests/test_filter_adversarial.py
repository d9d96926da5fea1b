"""An adversarial pass over the filter columns' exactness (kg/filter_index.py, ADR 0029).

Whatever path a filter takes (the graph's columns, a planned query, the filter as written), its
candidates must be exactly the ones Oxigraph selects for the filter as written. Here the
graphs are made to break every assumption a column could lean on: values of one property
with every RDF type Oxigraph reads (integers written several ways, decimals, doubles with
``-0``, ``NaN`` and ``INF``, integers past 64 bits, dates with and without time zones, a
``dateTime`` beside a ``date``, an invalid ``2024-13-45``, a ``gYear``, language-tagged and
custom-typed literals, IRIs), several values per document or none, values in another scope's
graph and on chunks, and FILTERs in SPARQL's three-valued logic (``error || true``) over them,
in every shape the planner rewrites (``||`` across properties, ``NOT EXISTS``, ``MINUS``,
``OPTIONAL``/``!BOUND``, UNION branches, BIND, values compared with another resource's).
The expected answer is always Oxigraph's own, asked with ``select_iris`` (the filter as
written), never anything the planner computed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.retrieval.candidates import filter_candidates
from trails.retrieval.consistency import can_check_documents
from trails.retrieval.retrieve import retrieve
from trails.testing import fresh_context
from trails.vector import MockEmbedder

EX = "https://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROLOGUE = f"PREFIX ex: <{EX}> "
LINK = "?iri schema:isPartOf ?doc ."
LEGAL = "<urn:trails:scope:legal>"

# Objects a user may write for one property, as Turtle terms: each is its own RDF term, and
# many are equal (or comparable, or an error to compare) to others under SPARQL's operators.
VALUES = [
    "1", '"01"^^xsd:integer', '"1"^^xsd:int', "1.0", '"1"^^xsd:double', '"-0.0"^^xsd:double',
    '"0"^^xsd:double', '"NaN"^^xsd:double', '"INF"^^xsd:double', "99999999999999999999",
    '"1"^^xsd:nonNegativeInteger', '"-5"^^xsd:long', '" 1"^^xsd:integer', '"1"', '"1"@en',
    '"EU"@EN', '"x"', "true", '"1"^^xsd:boolean', '"abc"^^ex:dt', "ex:one",
    '"2024-01-01"^^xsd:date', '"2024-01-01Z"^^xsd:date', '"2024-01-01+05:00"^^xsd:date',
    '"2024-01-01T00:00:00"^^xsd:dateTime', '"2024-01-01T00:00:00Z"^^xsd:dateTime',
    '"2024-01-01T00:00:00+05:00"^^xsd:dateTime', '"2024"^^xsd:gYear', '"2024-13-45"^^xsd:date',
    '"2024-01-01"', '"2023-06-01"^^xsd:date', '"1.5"^^xsd:float',
]
# Tests of one value ``?v`` (SPARQL text): equality and identity of terms, comparisons across
# types (an error: the FILTER drops the solution), functions defined on some types only.
TESTS = [
    "?v = 1", "?v != 1", "sameTerm(?v, 1)", "?v = 1.0e0", "?v > 0", "?v <= 0",
    '?v >= "2024-01-01"^^xsd:date', '?v < "2024-01-01"^^xsd:date',
    '?v >= "2024-01-01T00:00:00"^^xsd:dateTime', '?v > "2024-01-01T00:00:00Z"^^xsd:dateTime',
    '?v = "2024-01-01Z"^^xsd:date', '?v = "2024-13-45"^^xsd:date', '?v != "2024-13-45"^^xsd:date',
    '?v = "NaN"^^xsd:double', '?v != "NaN"^^xsd:double', "?v > 99999999999999999998",
    '?v IN (1, "1", ex:one)', '?v NOT IN (1, "1")', "isIRI(?v)", "isLiteral(?v)",
    "isNumeric(?v)", "DATATYPE(?v) = xsd:integer", "DATATYPE(?v) = xsd:int", 'LANG(?v) = "en"',
    'langMatches(LANG(?v), "*")', 'STR(?v) = "1"', 'STR(?v) = "01"', 'STR(?v) = "-0"',
    "YEAR(?v) = 2024", 'xsd:date(?v) = "2024-01-01"^^xsd:date', "xsd:integer(?v) = 1", "?v",
    "!?v", "BOUND(?v)", "COALESCE(?v > 1, true)", "?v != ?v", '?v = "abc"^^ex:dt',
    'REGEX(STR(?v), "^20")', "STRLEN(STR(?v)) > 3",
]
CONSTANTS = ["1", '"01"^^xsd:integer', "1.0", "1e0", "-0.0e0", '"1"', '"1"@EN', "true",
             '"2024-01-01+00:00"^^xsd:date', '"2024-13-45"^^xsd:date', "ex:one", '"1"^^xsd:int',
             "99999999999999999999"]
# Another resource's values, compared with a document's (the columns' "outer" patterns).
CLAIMS = ['"2021-01-01"^^xsd:date', '"2024-01-01T00:00:00Z"^^xsd:dateTime', '"2023"', "5",
          '"2022-01-01+05:00"^^xsd:date', "ex:one"]


def value_tests(name: str) -> st.SearchStrategy[str]:
    """A test of ``?name``: one of TESTS, negated, or two joined by ``||`` or ``&&``."""
    one = st.sampled_from(TESTS).map(lambda t: t.replace("?v", f"?{name}"))
    return st.one_of(one, one.map(lambda t: f"!({t})"),
                     st.tuples(one, one, st.sampled_from(["||", "&&"])).map(
                         lambda p: f"({p[0]}) {p[2]} ({p[1]})"))


SHAPES = {
    "test": lambda d: f"?doc ex:v ?v . FILTER({d.draw(value_tests('v'))})",
    "constant": lambda d: f"?doc ex:v {d.draw(st.sampled_from(CONSTANTS))} .",
    "bound": lambda d: "?doc ex:v ?c .",
    "two tests": lambda d: (f"?doc ex:v ?v . ?doc ex:w ?w . FILTER({d.draw(value_tests('v'))}) "
                            f"FILTER({d.draw(value_tests('w'))})"),
    "either": lambda d: (f"?doc ex:v ?v . ?doc ex:w ?w . "
                         f"FILTER(({d.draw(value_tests('v'))}) || ({d.draw(value_tests('w'))}))"),
    "not exists": lambda d: (f"?doc ex:w ?w . FILTER NOT EXISTS {{ ?doc ex:v ?k "
                             f"FILTER({d.draw(value_tests('k'))}) }}"),
    "not exists constant": lambda d: (f"?doc a trails:Document . FILTER NOT EXISTS {{ ?doc ex:v "
                                      f"{d.draw(st.sampled_from(CONSTANTS))} }}"),
    "minus": lambda d: (f"?doc a trails:Document . MINUS {{ ?doc ex:v ?k "
                        f"FILTER({d.draw(value_tests('k'))}) }}"),
    "unbound or": lambda d: (f"?doc a trails:Document . OPTIONAL {{ ?doc ex:v ?v }} "
                             f"FILTER(!BOUND(?v) || {d.draw(value_tests('v'))})"),
    "optional not bound": lambda d: ("?doc a trails:Document . OPTIONAL { ?doc ex:v ?v } "
                                     "FILTER(!BOUND(?v))"),
    "union": lambda d: (f"{{ ?doc ex:v ?v FILTER({d.draw(value_tests('v'))}) }} UNION "
                        f"{{ ?doc ex:w {d.draw(st.sampled_from(CONSTANTS))} }}"),
    "union of constants": lambda d: (f"{{ ?doc ex:v {d.draw(st.sampled_from(CONSTANTS))} }} "
                                     f"UNION {{ ?doc ex:v {d.draw(st.sampled_from(CONSTANTS))} }}"),
    "bind": lambda d: (f"?doc ex:v ?v . BIND({d.draw(st.sampled_from(['YEAR(?v)', 'STR(?v)', '?v + 1', 'xsd:date(?v)', 'DATATYPE(?v)']))} AS ?y) "
                       f"FILTER({d.draw(value_tests('y'))})"),
    "exists": lambda d: (f"?doc ex:w ?w . FILTER EXISTS {{ ?doc ex:v ?k "
                         f"FILTER({d.draw(value_tests('k'))}) }}"),
    "another's value": lambda d: (f"?doc ex:v ?v . ?claim ex:filed ?c . "
                                  f"FILTER(?v {d.draw(st.sampled_from(['>=', '<', '=', '!=']))} ?c)"),
    "values": lambda d: (f"?doc ex:v ?v . VALUES ?v {{ {d.draw(st.sampled_from(CONSTANTS))} "
                         f"{d.draw(st.sampled_from(CONSTANTS))} }}"),
    "in list": lambda d: "?doc ex:v ?v . FILTER(?v IN (ex:one, ex:two))",
}

# Where a user triple goes: the default graph, the other scope's graph, or onto a chunk.
PLACES = ["default", "legal", "chunk"]
triples_strategy = st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["v", "w"]),
                                      st.sampled_from(VALUES), st.sampled_from(PLACES)),
                            min_size=1, max_size=14)
scopes_strategy = st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]])


def documents(n: int = 8, text: str = "") -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}.md", text=text or f"rails memo {i}. Routes.",
                     metadata={"date": f"202{i % 5}-0{1 + i % 9}-01"} if i % 4 else {})
            for i in range(n)]


def built(triples, n: int = 8) -> Context:
    """A context of ``n`` documents (the odd ones in scope "legal") and the user's triples
    ``(document, property, value, place)``, loaded as RDF is (no hand-link marks)."""
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    docs = documents(n)
    ingest_all([d for i, d in enumerate(docs) if i % 2 == 0], ctx=ctx)
    ingest_all([d for i, d in enumerate(docs) if i % 2 == 1], ctx=ctx, scope="legal")
    load(ctx, triples)
    return ctx


def load(ctx: Context, triples) -> None:
    chunks = {m["doc_iri"]: i for i, m in ctx.vectors.metadata(ctx.vectors.all_ids()).items()}
    named = {doc.rsplit("/", 1)[-1]: doc for doc in chunks}
    placed: dict[str | None, list[str]] = {}
    prefixes = f"@prefix ex: <{EX}> . @prefix xsd: <{XSD}> .\n"
    for n, name, value, place in triples:
        doc = named.get(f"d{n}", f"{EX}nodoc{n}")  # a deleted document's: no document
        subject = chunks.get(doc, doc) if place == "chunk" else doc
        placed.setdefault("legal" if place == "legal" else None, []).append(
            f"<{subject}> ex:{name} {value} .")
    claims = [f"ex:claim{i} ex:filed {value} ." for i, value in enumerate(CLAIMS)]
    placed.setdefault(None, []).extend(claims)
    for scope, lines in placed.items():
        ctx.kg.load((prefixes + "\n".join(lines)).encode(), format="turtle", scope=scope)


def live(ctx: Context, candidates, scopes) -> set[str]:
    """What a search ranks of ``candidates``: their live chunks in the searched scopes."""
    ids = ctx.vectors.expand_ids(candidates)
    return {i for i, m in ctx.vectors.metadata(ids).items()
            if scopes is None or m.get("scope", "default") in scopes}


def outcome(ask):
    """The live chunks ``ask()`` selects, or the kind of error it raised."""
    try:
        return ask()
    except Exception as exc:  # noqa: BLE001 - an error must be the same error on both paths
        return type(exc).__name__


def compared(ctx: Context, group: str, bindings=None, scopes=None, *, full: bool = False,
             ) -> str:
    """Asserts that the planned candidates of the filter are Oxigraph's; returns the path."""
    text = group if full else f"{PROLOGUE}SELECT ?iri WHERE {{ {LINK} {group} }}"
    path: list[str] = []

    def planned():
        with ctx.vectors.snapshot():
            # over documents where retrieve() would ask so (not on a read-only view behind
            # its writer, whose answer over documents retrieve() would check and read again)
            lift = can_check_documents(ctx.kg, ctx.vectors)
            return live(ctx, filter_candidates(ctx.kg, text, bindings, scopes, documents=lift,
                                               path=path), scopes)

    found = outcome(planned)
    written = outcome(lambda: live(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes),
                                   scopes))
    assert found == written, (text, bindings, scopes, path)
    return path[-1] if path else "error"


# -- random graphs and filters --------------------------------------------------------------

@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(triples_strategy, st.data())
def test_random_filters_on_adversarial_values_select_what_oxigraph_selects(triples, data):
    ctx = built(triples)
    for _ in range(6):
        name = data.draw(st.sampled_from(sorted(SHAPES)))
        group = SHAPES[name](data)
        bindings = {"c": data.draw(st.sampled_from([1, 1.0, "1", True]))} if name == "bound" \
            else None
        compared(ctx, group, bindings, data.draw(scopes_strategy))


def test_the_random_filters_mostly_take_the_columns():
    """The property test above is about the columns: its shapes must reach them (a graph
    with a blank node or triple term among a property's values would not)."""
    ctx = built([(n, p, value, "default") for n, p, value in
                 zip(range(8), "vwvwvwvw", VALUES[::4])])
    for group in ("?doc ex:v ?v . FILTER(?v > 0 || !isLiteral(?v))", "?doc ex:v 1.0 .",
                  '?doc ex:v ?v . ?doc ex:w ?w . FILTER(?v = 1) FILTER(LANG(?w) = "en")',
                  '?doc ex:v ?v . ?doc ex:w ?w . FILTER(?v = 1 || STR(?w) = "x")',
                  "?doc ex:w ?w . FILTER NOT EXISTS { ?doc ex:v ?k FILTER(?k != 1) }",
                  "?doc a trails:Document . MINUS { ?doc ex:v ?k FILTER(isIRI(?k)) }",
                  "?doc a trails:Document . OPTIONAL { ?doc ex:v ?v } FILTER(!BOUND(?v) || ?v)",
                  '{ ?doc ex:v ?v FILTER(?v != 1) } UNION { ?doc ex:w "x" }',
                  "?doc ex:v ?v . ?claim ex:filed ?c . FILTER(?v >= ?c)"):
        assert compared(ctx, group) == "documents-columns", group


# -- explicit cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("test", TESTS)
def test_each_value_test_on_every_kind_of_value(test):
    ctx = built([(n % 8, "v", value, PLACES[n % 2]) for n, value in enumerate(VALUES)])
    for scopes in (None, ["legal"]):
        assert compared(ctx, f"?doc ex:v ?v . FILTER({test})", scopes=scopes) \
            == "documents-columns"


@pytest.mark.parametrize("constant", CONSTANTS)
def test_each_constant_matches_the_terms_oxigraph_matches(constant):
    """A constant object selects by term identity as Oxigraph stores terms: ``"01"^^xsd:integer``
    is stored as ``1``, ``"1"^^xsd:int`` too, ``"2024-01-01+00:00"`` as ``"2024-01-01Z"``."""
    ctx = built([(n % 8, "v", value, "default") for n, value in enumerate(VALUES)])
    assert compared(ctx, f"?doc ex:v {constant} .") == "documents-columns"
    assert compared(ctx, f"?doc a trails:Document . FILTER NOT EXISTS {{ ?doc ex:v {constant} }}") \
        == "documents-columns"


# -- kept and carried columns across writes ---------------------------------------------------

# Filters over trails' own metadata (carried by ingests), the user's values (read again after
# a user's write) and the chunks' own values (each new version writes them anew).
STATE_FILTERS = [
    '?doc schema:dateCreated ?d . FILTER(?d >= "2022-01-01"^^xsd:date)',
    '?doc schema:dateCreated ?d . FILTER(YEAR(?d) != 2023 || ?d = "2024-01-01Z"^^xsd:date)',
    ("?doc a trails:Document . OPTIONAL { ?doc schema:dateCreated ?d } "
     'FILTER(!BOUND(?d) || ?d < "2021-06-01"^^xsd:date)'),
    '?doc ex:v ?v . FILTER(?v >= "2024-01-01"^^xsd:date || ?v = 1)',
    "?doc a trails:Document . FILTER NOT EXISTS { ?doc ex:v 1 }",
    f"{PROLOGUE}SELECT ?iri WHERE {{ ?iri schema:position ?p . FILTER(?p >= 1) }}",
    (f"{PROLOGUE}SELECT ?iri WHERE {{ ?iri schema:position 0 . ?iri schema:isPartOf ?doc . "
     '?doc schema:dateCreated ?d . FILTER(?d < "2023-01-01"^^xsd:date) }'),
]

operations = st.lists(st.one_of(
    st.tuples(st.just("ingest"), st.integers(0, 5), st.integers(0, 2)),  # a version
    st.tuples(st.just("dated"), st.integers(0, 5), st.integers(0, 2)),  # metadata only
    st.tuples(st.just("user"), triples_strategy, st.just(0)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("ask"), st.just(0), st.just(0)),
), min_size=1, max_size=6)


def version(i: int, text: int, date: int) -> Document:
    """Document ``i``: its ``text``-th wording (the second and third several chunks long)
    and its ``date``-th date (a metadata change alone)."""
    words = f"rails memo {i}. Routes." if not text else " ".join(
        f"Sentence {s} of wording {text} of memo {i}." for s in range(40 * text))
    return Document(id=f"d{i}", source=f"d{i}.md", text=words,
                    metadata={"date": ["2020-06-01", "2022-06-01", "2024-01-01"][date]})


def all_compared(ctx: Context) -> None:
    for group in STATE_FILTERS:
        full = group.startswith("PREFIX")
        for scopes in (None, ["legal"]):
            compared(ctx, group, scopes=scopes, full=full)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(operations, st.booleans())
def test_kept_and_carried_columns_select_what_oxigraph_selects_after_any_writes(ops, early):
    """A writer keeps its columns, carries them across its ingests and reads them again after
    a user's write; a read-only view opened before the writes (having asked the filters, or
    not) answers from its own state, and so do contexts opened on the directory afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb"
        texts = dict.fromkeys(range(6), 0)
        with Context.open(path, embedder=MockEmbedder(dim=8)) as writer:
            for i in range(6):
                ingest_all([version(i, 0, i % 3)], ctx=writer,
                           scope="legal" if i % 2 else "default")
            load(writer, [(0, "v", "1", "default"), (1, "v", '"2024-01-01Z"^^xsd:date', "legal")])
            all_compared(writer)  # keeps the columns of this revision
            with Context.open(path, embedder=MockEmbedder(dim=8), read_only=True) as reader:
                if early:
                    all_compared(reader)
                for op, a, b in ops:
                    if op == "ingest":
                        texts[a] = b
                    if op in ("ingest", "dated"):
                        ingest_all([version(a, texts[a], b)], ctx=writer,
                                   scope="legal" if a % 2 else "default")
                    elif op == "user":
                        load(writer, a)
                    elif op == "delete":
                        writer.delete_document(f"{writer.base_iri}doc/d{a}")
                    else:
                        all_compared(reader)
                    all_compared(writer)
                all_compared(reader)
        for read_only in (True, False):
            with Context.open(path, embedder=MockEmbedder(dim=8), read_only=read_only) as ctx:
                all_compared(ctx)


# -- regressions --------------------------------------------------------------------------------

def test_a_read_only_view_behind_a_writer_ranks_what_the_graph_selects(tmp_path):
    """A read-only view answered a filter over documents, then a writer moved past it: d0's
    new version is dated 2024, which the filter rejects. A search on the view must not rank
    it (the kept answer names documents; the store expands them to their versions *now*, so
    retrieve()'s pinned read finds the view moved and reads again)."""
    text = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
            'FILTER(?d < "2022-01-01"^^xsd:date) }')

    def memo(i: int, date: str, words: str = "rails memo") -> Document:
        return Document(id=f"d{i}", source=f"d{i}.md", text=f"{words} {i}.",
                        metadata={"date": date})

    path = tmp_path / "kb"
    with Context.open(path, embedder=MockEmbedder(dim=8)) as writer:
        ingest_all([memo(0, "2020-01-01"), memo(1, "2021-01-01")], ctx=writer)
        with Context.open(path, embedder=MockEmbedder(dim=8), read_only=True) as reader:
            assert compared(reader, text, full=True) == "documents-columns"
            assert {h.iri.split("/")[4] for h in retrieve("rails", reader, sparql_filter=text,
                                                          k=10, fusion=None)} == {"d0", "d1"}
            ingest_all([memo(0, "2024-01-01", "a new text")], ctx=writer)
            hits = retrieve("rails", reader, sparql_filter=text, k=10, fusion=None)
            assert {h.iri for h in hits} == live(writer, writer.kg.select_iris(text), None)
            assert {h.iri.split("/")[4] for h in hits} == {"d1"}
            compared(reader, text, full=True)  # as retrieve() asks a view now behind


def test_a_prefix_changed_on_the_graph_changes_the_answer():
    """``kg.prefixes`` is the graph's own and every query reads it as it is now: a filter
    asked again after a prefix changed means the new IRIs, in the kept answers and in the
    columns' tests of values alike."""
    ctx = built([])
    first, second = "https://a.example/", "https://b.example/"
    ctx.kg.load("\n".join([f"<{ctx.base_iri}doc/d0> <{first}v> 1 .",
                           f"<{ctx.base_iri}doc/d2> <{second}v> 1 .",
                           f"<{ctx.base_iri}doc/d4> <{first}v> <{first}one> .",
                           f"<{ctx.base_iri}doc/d6> <{first}v> <{second}one> ."]).encode(),
                format="turtle")
    asked = ["SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc zz:v 1 }",
             ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc <https://a.example/v> ?v "
              "FILTER(?v = zz:one) }")]
    ctx.kg.prefixes["zz"] = first
    for text in asked:
        assert compared(ctx, text, full=True) == "documents-columns"
    ctx.kg.prefixes["zz"] = second
    for text in [*asked, asked[1].replace("?v", "?w")]:  # kept, and asked anew
        compared(ctx, text, full=True)
