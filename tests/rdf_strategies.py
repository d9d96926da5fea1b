"""Random RDF datasets for the round-trip tests of ``kg.load`` / ``kg.dump``
(tests/test_graph_io.py, tests/test_graph_io_remote.py).

Literals use the lexical forms Oxigraph keeps as written (it stores ``"01"^^xsd:integer`` as
``"1"``), so a dataset can be compared with what was put in. Predicates end in a name XML
accepts, so RDF/XML can write them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox
from hypothesis import strategies as st

EX = "https://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
LEGAL = ox.NamedNode("urn:trails:scope:legal")
HR = ox.NamedNode("urn:trails:scope:hr")
OTHER = ox.NamedNode("https://ex.org/graphs/other")  # a named graph that is no scope

iris = st.sampled_from([
    f"{EX}a", f"{EX}b", "https://schema.org/Thing", "https://trails.dev/ns#Document",
    "urn:isbn:0451450523", f"{EX}caf%C3%A9/ü?x=1&y=%22#frag", "http://example.com/a%20b",
]).map(ox.NamedNode)
predicates = st.sampled_from([
    f"{EX}knows", f"{EX}name", "https://schema.org/name", "https://trails.dev/ns#tag",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "http://purl.org/dc/terms/creator",
]).map(ox.NamedNode)
blanks = st.sampled_from(["b1", "b2", "b3"]).map(ox.BlankNode)


def literals(xml: bool = False) -> st.SearchStrategy[ox.Literal]:
    """Plain, language-tagged and typed literals; ``xml``: only characters XML 1.0 holds."""
    if xml:
        text = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"))
                       | st.sampled_from("\t\n\r"), max_size=12)
    else:
        text = st.text(max_size=12)
    return st.one_of(
        text.map(ox.Literal),
        st.tuples(text, st.sampled_from(["en", "de-ch", "zh-hant-tw"])).map(
            lambda t: ox.Literal(t[0], language=t[1])),
        st.integers(-10**12, 10**12).map(ox.Literal),
        st.booleans().map(ox.Literal),
        st.dates().map(lambda d: ox.Literal(d.isoformat(), datatype=ox.NamedNode(XSD + "date"))),
        text.map(lambda t: ox.Literal(t, datatype=ox.NamedNode(f"{EX}code"))),
    )


def quads(graphs: Iterable[ox.NamedNode | ox.DefaultGraph] = (ox.DefaultGraph(), LEGAL, HR,
                                                              OTHER),
          xml: bool = False, max_size: int = 25) -> st.SearchStrategy[list[ox.Quad]]:
    return st.lists(st.builds(ox.Quad, st.one_of(iris, blanks), predicates,
                              st.one_of(iris, blanks, literals(xml)),
                              st.sampled_from(list(graphs))), max_size=max_size)


def canonical(items: Iterable[ox.Quad]) -> ox.Dataset:
    """The quads as a dataset with blank nodes relabelled canonically: two datasets are equal
    exactly when they are isomorphic."""
    dataset = ox.Dataset(items)
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def in_graph(items: Iterable[ox.Quad], graph: ox.NamedNode | ox.DefaultGraph) -> list[ox.Quad]:
    return [q for q in items if q.graph_name == graph]
