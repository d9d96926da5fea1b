"""No filter text can make the process send a request, crash or run unbounded before it is
refused: SERVICE is found wherever the SPARQL grammar would read it, and size, nesting,
clause and path limits are checked before the parser sees the text."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.errors import SparqlError, UnsafeFilterError
from trails.kg import OxigraphGraph
from trails.kg.sparql import check_filter

HIDDEN_SERVICE = [
    "SELECT ?c WHERE { # a comment ended by CR\rSERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }",
    'SELECT ?c WHERE { ?c ?p """a \\""" SERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }',
    "SELECT ?c WHERE { ?c ?p '''a \\''' SERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }",
    "SELECT ?c WHERE { <http://a/\\u0023x> ?p ?o . SERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }",
    "SELECT ?c WHERE { <http://a/it\\u0027s> ?p ?o . SERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }",
    "SELECT ?c WHERE { ?c ?p ?o . service SILENT <http://127.0.0.1:9/> { ?c ?p ?o } }",
]


@pytest.mark.parametrize("query", HIDDEN_SERVICE)
def test_service_is_refused_however_it_is_written(query):
    """Refused as SERVICE, or (where Oxigraph's grammar reads the text as no valid query at
    all) as a query that does not parse: never evaluated either way."""
    refused = "SERVICE|does not parse"
    with pytest.raises(SparqlError, match=refused):
        check_filter(query)
    kg = OxigraphGraph()
    with pytest.raises(SparqlError, match=refused):
        kg.select_iris(query)
    with pytest.raises(SparqlError, match=refused):
        kg.query(query, scopes=["default"])  # a scoped query may not call out either


@pytest.mark.parametrize("query", [
    'SELECT ?c WHERE { ?c ?p "customer SERVICE desk" }',
    "SELECT ?c WHERE { ?c <http://ex.org/SERVICE> ?o }",
    "SELECT ?c WHERE { ?c ?p ?o } # SERVICE <http://x/> {}",
])
def test_the_word_in_a_string_iri_or_comment_is_no_service(query):
    assert check_filter(query) == "c"


def nested(depth: int) -> str:
    return "SELECT ?c WHERE { " + "{ " * depth + "?c ?p ?o " + "} " * depth + "}"


@pytest.mark.parametrize("query, limit", [
    (nested(5000), "nests"),
    ("SELECT ?c WHERE { ?c ?p ?o FILTER(" + "(" * 5000 + "1" + ")" * 5000 + ") }", "nests"),
    ("SELECT ?c WHERE { ?c ?p ?o " + "FILTER(?o > 1) " * 40000 + "}", "clauses"),
    ("SELECT ?c WHERE { ?c ?p ?o } " + "# comment\n" * 500_000, "characters"),
    ("SELECT ?c WHERE { ?c ?p ?o " + "FILTER(?o>1)" * 300 + "}", "clauses"),
    ("SELECT ?c WHERE { ?c ?p ?o " + " ".join(f"OPTIONAL {{ ?c <urn:p{i}> ?v{i} }}"
                                               for i in range(700)) + " }", "clauses"),
    ("SELECT ?c WHERE { ?c " + "/".join(["<urn:p>"] * 800) + " ?o }", "path"),
])
def test_oversized_filters_are_refused_quickly_naming_the_limit(query, limit):
    started = time.perf_counter()
    with pytest.raises(UnsafeFilterError, match=limit):
        check_filter(query)
    assert time.perf_counter() - started < 5  # a bound, not a benchmark: it once hung


def test_deep_nesting_never_crashes_the_process():
    """Before the limits, 5,000 nested groups killed the interpreter (SIGSEGV in the parse)."""
    script = textwrap.dedent("""
        from trails.errors import SparqlError, UnsafeFilterError
        from trails.kg import OxigraphGraph
        kg = OxigraphGraph()
        for depth in (1500, 5000, 20000):
            text = "SELECT ?c WHERE { " + "{ " * depth + "?c ?p ?o " + "} " * depth + "}"
            try:
                kg.select_iris(text)
            except UnsafeFilterError:
                pass
        print("alive")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "alive" in done.stdout, done.stderr[-2000:]


def test_ordinary_filters_stay_well_inside_the_limits():
    assert check_filter(nested(20)) == "c"
    assert check_filter("SELECT ?c WHERE { ?c <urn:a>/<urn:b>/<urn:c>|<urn:d> ?o "
                        + "OPTIONAL { ?c <urn:x> ?x } " * 30 + "}") == "c"


def test_graph_mode_leaks_nothing_across_scopes_and_probes_nothing():
    from trails import retrieve
    from trails.ingest import Document, ingest_all
    from trails.testing import fresh_context

    with fresh_context() as ctx:
        ingest_all([Document("public", "mem", "Open rails notes.")], ctx=ctx)
        ingest_all([Document("secret", "mem", "Secret rails plans.")], ctx=ctx, scope="vault")
        secret_chunk = ctx.kg.query("SELECT ?c WHERE { GRAPH ?g { ?c a trails:Chunk } }").column(
            "c")[0]
        secret_doc = "trails://local/scope/vault/doc/secret"
        missing = "trails://local/scope/vault/doc/never-was"
        ctx.kg.update('INSERT DATA { <https://ex.org/mentioned> <https://ex.org/p> "x" }')
        probe = (f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{secret_chunk}> <{secret_doc}> "
                 f"<{missing}> <https://ex.org/mentioned> }} }}")
        hits = retrieve("", ctx, mode="graph", sparql_filter=probe)
        # Another scope's chunk and document, and an IRI that exists nowhere, all read the same.
        assert [h.iri for h in hits] == ["https://ex.org/mentioned"]
        assert all("Secret" not in h.snippet for h in hits)


# -- the parser's view: generated queries against a real listening socket ---------------------

NOISE = st.sampled_from([
    "# comment\r", "# comment\n", '"s\\"x"', "'s\\'x'", '"""a \\""" b"""', "'''a \\''' b'''",
    "<http://a/\\u0023x>", "<http://a/it\\u0027s>", "<http://a/service>", '"service"',
    "?service", "ex:service", "# service\n", "?p", "?o", "\n", "\r", " ",
])
SPELLING = st.sampled_from(["SERVICE", "service", "SeRvIcE", "SERVICE SILENT", "service\tsilent"])


@settings(max_examples=120, deadline=None)
@given(before=st.lists(NOISE, max_size=4), after=st.lists(NOISE, max_size=4),
       spelling=SPELLING, with_service=st.booleans())
def test_no_generated_filter_reaches_a_listening_server(before, after, spelling, with_service):
    """Whatever surrounds it, a SERVICE clause is refused before any request, and a filter
    without one is never refused for SERVICE: the parser's reading decides, and a real socket
    counts connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.05)
        port = server.getsockname()[1]
        call = (f"{spelling} <http://127.0.0.1:{port}/sparql> {{ ?c ?p ?o }}"
                if with_service else "{ ?c ?p ?o }")
        # Noise goes where a triple pattern's terms may go or in comments, so the query is
        # valid SPARQL with or without the call.
        words = " ".join(n for n in before if n.startswith(("#", "\n", "\r", " ")))
        terms = [n for n in before + after if not n.startswith(("#", "\n", "\r", " "))]
        patterns = " ".join(f"?c ?p {t} ." for t in terms if not t.startswith("?s"))
        query = (f"PREFIX ex: <http://ex.org/> SELECT ?c WHERE {{ {words}\n{patterns} "
                 f"{call} }}")
        try:
            check_filter(query)
            refused = False
        except UnsafeFilterError:
            refused = True
        if not refused:
            OxigraphGraph().select_iris(query)  # would connect if the parser read SERVICE
        try:
            server.accept()[0].close()
            connected = True
        except TimeoutError:
            connected = False
        assert not connected
        assert refused == with_service, query
