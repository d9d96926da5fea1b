"""No filter text can make the process send a request, crash or run unbounded before it is
refused: SERVICE is found wherever the SPARQL grammar would read it, and size, nesting,
clause and path limits are checked before the parser sees the text."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from trails.errors import UnsafeFilterError
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
    with pytest.raises(UnsafeFilterError, match="SERVICE"):
        check_filter(query)
    kg = OxigraphGraph()
    with pytest.raises(UnsafeFilterError, match="SERVICE"):
        kg.select_iris(query)
    with pytest.raises(UnsafeFilterError, match="SERVICE"):
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
    ("SELECT ?c WHERE { ?c ?p ?o " + "FILTER(?o > 1) " * 40000 + "}", "characters"),
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
        from trails.errors import UnsafeFilterError
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
