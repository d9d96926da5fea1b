"""Several forms in one filter (kg/equivalent_forms.py, kg/expressions.py, kg/column_plans.py)
select the candidates the filter as written selects: a path beside a MINUS, a UNION beside a
disjunction, a BIND beside NOT EXISTS, "no value or a value passing" (``OPTIONAL { ?doc P ?v }
FILTER(!BOUND(?v) || test)``) beside each, ... over values of mixed types (numbers of three types,
strings with and without a language, dates with and without a time zone, IRIs, booleans),
several values of one property, values on chunks and on things that are no document, in two
scopes. The oracle is Oxigraph running the filter as written."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_filter_index import ranked_among
from trails.errors import SparqlError
from trails.ingest import Document, ingest_all
from trails.retrieval.candidates import filter_candidates
from trails.testing import fresh_context
from trails.vector import MockEmbedder

TOPICS = "https://example.org/t/"
VALUES = ['1', '1.0', '"1"^^xsd:double', '"1"', '2', '"EU"', '"EU"@en', '"eu"',
          '<https://example.org/EU>', '"2021-01-01"^^xsd:date', '"2021-01-01+05:00"^^xsd:date',
          '"2021-01-01T00:00:00Z"^^xsd:dateTime', 'true', f'<{TOPICS}A1>', f'<{TOPICS}A>']
PROPERTIES = ["meta:a", "meta:b", "meta:topic"]
TESTS = ["?v = {c}", "?v != {c}", "?v < {c}", "?v >= {c}", "sameTerm(?v, {c})",
         "?v IN ({c}, {d})", "?v NOT IN ({c})", "!(?v = {c})", "isIRI(?v)", 'LANG(?v) = "en"',
         'STR(?v) = "1"', "?v", "YEAR(?v) = 2021"]
# Each part of a group, written with its own value variables ({i}: the part's position).
PARTS = [
    "?doc {p} ?v{i} .",
    "?doc {p} ?v{i} . FILTER({t})",
    "?doc {p} {c} .",
    "FILTER NOT EXISTS {{ ?doc {p} ?v{i} FILTER({t}) }}",
    "MINUS {{ ?doc {p} ?v{i} FILTER({t}) }}",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(!BOUND(?v{i}))",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(!BOUND(?v{i}) || {t})",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER({t} || {s} || !BOUND(?v{i}))",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(!BOUND(?v{i}) && {t})",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(BOUND(?v{i}) || {t})",
    # the FILTER before the OPTIONAL, beside a second test of the value, in a subgroup; the
    # question written with a negation, with COALESCE; the OPTIONAL in a subgroup
    "FILTER(!BOUND(?v{i}) || {t}) OPTIONAL {{ ?doc {p} ?v{i} }}",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(!BOUND(?v{i}) || {t}) FILTER({s})",
    "OPTIONAL {{ ?doc {p} ?v{i} }} {{ FILTER(!BOUND(?v{i}) || {t}) }}",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(!(BOUND(?v{i}) && !({t})))",
    "OPTIONAL {{ ?doc {p} ?v{i} }} FILTER(COALESCE({t}, !BOUND(?v{i})))",
    "{{ OPTIONAL {{ ?doc {p} ?v{i} }} }} FILTER(!BOUND(?v{i}) || {t})",
    "FILTER EXISTS {{ ?doc {p} ?v{i} FILTER({t}) }}",
    "?doc {p} ?v{i} . VALUES ?v{i} {{ {c} {d} }}",
    "{{ ?doc {p} {c} }} UNION {{ ?doc {p} {d} }}",
    '?doc {p} ?v{i} . BIND(STR(?v{i}) AS ?s{i}) FILTER(?s{i} = "1" || ?s{i} = "EU")',
    "?doc {p} ?v{i} . ?doc {q} ?w{i} . FILTER({t} || {u})",
    "?doc {p} ?v{i} . ?doc {q} ?w{i} . FILTER({t} && {u})",
    "?doc {p}/rdfs:subClassOf* ?v{i} .",
    "?v{i} ^{p} ?doc .",
    (f"?doc meta:topic ?t{{i}} . ?t{{i}} rdfs:subClassOf* ?v{{i}} . "
     f"FILTER(?v{{i}} IN (<{TOPICS}A>, <{TOPICS}B>))"),
]
WRAPPERS = ["SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc . {body} }}",
            "SELECT ?doc WHERE {{ {body} }}",
            "SELECT ?iri WHERE {{ ?doc ^schema:isPartOf ?iri . {body} }}"]


# "no value or a value passing", and beside it what must stay as written
ABSENT_OR = [p for p in PARTS if "OPTIONAL" in p and p != PARTS[5]]


@st.composite
def parts(draw, at: int, templates: list[str] = PARTS) -> str:
    def test(name: str) -> str:
        text = draw(st.sampled_from(TESTS)).format(c=draw(st.sampled_from(VALUES)),
                                                    d=draw(st.sampled_from(VALUES)))
        return text.replace("?v", name)
    template = draw(st.sampled_from(templates))
    return template.format(i=at, p=draw(st.sampled_from(PROPERTIES)),
                           q=draw(st.sampled_from(PROPERTIES)), c=draw(st.sampled_from(VALUES)),
                           d=draw(st.sampled_from(VALUES)), t=test(f"?v{at}"),
                           u=test(f"?w{at}"), s=test(f"?v{at}"))


# parts may share a value variable (a value tested by two parts is a join, not two tests)
filters = st.integers(1, 3).flatmap(lambda n: st.tuples(*(
    st.integers(0, n - 1).flatmap(parts) for _ in range(n)))).flatmap(
    lambda body: st.sampled_from(WRAPPERS).map(lambda w: w.format(body=" ".join(body))))
# the same with one "no value or a value passing" part among them
absent_or_filters = st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.integers(0, n - 1).flatmap(lambda at: parts(at, ABSENT_OR)),
    *(st.integers(0, n - 1).flatmap(parts) for _ in range(n - 1)))).flatmap(
    lambda body: st.sampled_from(WRAPPERS).map(lambda w: w.format(body=" ".join(body))))
# (document, property, value, in the other scope's graph): a document's values, several
# for one property, some on a chunk (-1) or on a thing that is no document (-2)
triples = st.lists(st.tuples(st.integers(-2, 5), st.sampled_from(PROPERTIES),
                             st.sampled_from(VALUES), st.booleans()), max_size=24)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(triples, st.lists(filters, min_size=1, max_size=4),
       st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
def test_forms_together_select_what_the_filter_as_written_selects(values, texts, scopes):
    _check(values, texts, scopes)


def _check(values, texts, scopes):
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    for scope in ("default", "legal"):
        ingest_all([Document(id=f"d{n}", source=f"d{n}.md", text=f"rails document {n}.")
                    for n in range(6) if (n % 2 == 0) == (scope == "default")], ctx=ctx,
                   scope=scope)
    ctx.kg.load(f"<{TOPICS}A1> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{TOPICS}A> ."
                .encode(), format="ntriples")
    documents = sorted({m["doc_iri"]: i for i, m in ctx.vectors.metadata(
        ctx.vectors.all_ids()).items()}.items())
    for n, predicate, value, elsewhere in values:
        subject = ("https://example.org/other" if n == -2 else
                   documents[0][1] if n == -1 else documents[n][0])
        triple = f"<{subject}> {predicate} {value}"
        ctx.kg.update(f"INSERT DATA {{ GRAPH <urn:trails:scope:legal> {{ {triple} }} }}"
                      if elsewhere else f"INSERT DATA {{ {triple} }}")
    for text in texts:
        assert _planned(ctx, text, scopes) == _written(ctx, text, scopes), text


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(triples, st.lists(absent_or_filters, min_size=1, max_size=4),
       st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
def test_absent_or_passing_together_selects_what_the_filter_as_written_selects(values, texts,
                                                                               scopes):
    _check(values, texts, scopes)


def _planned(ctx, text, scopes):
    try:
        with ctx.vectors.snapshot():
            return ranked_among(ctx, filter_candidates(ctx.kg, text, None, scopes), scopes)
    except SparqlError as exc:  # a filter Oxigraph refuses (a variable bound twice)
        return type(exc)


def _written(ctx, text, scopes):
    try:
        return ranked_among(ctx, ctx.kg.select_iris(text, scopes=scopes), scopes)
    except SparqlError as exc:
        return type(exc)
