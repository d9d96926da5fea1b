"""Every query the embedded graph runs is bounded, not only a scoped caller's: the owner's
``trails sparql`` (no ``--scope``) and ``ctx.kg.query`` handed Oxigraph's parser a query that
nests 3,000 groups, chains 10,000 ``||`` or ``UNION`` or walks a path of 10,000 steps, and
the process died of a stack overflow (SIGSEGV: no error, no message); a path of 600 steps
ran for seconds on an empty graph. Each is refused with an UnsafeFilterError naming the
limit, in a child process that must survive it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from trails.errors import UnsafeFilterError
from trails.kg import OxigraphGraph

HOSTILE = {
    "nested groups": "SELECT * WHERE " + "{ " * 3000 + "?s ?p ?o" + " }" * 3000,
    "a chain of ||": "SELECT * WHERE { ?s ?p ?o FILTER(" + " || ".join(["?s = 1"] * 10000) + ") }",
    "a chain of UNION": "SELECT * WHERE { " + " UNION ".join(["{ ?s ?p ?o }"] * 10000) + " }",
    "a long path": "SELECT * WHERE { ?s " + "/".join(["<urn:p>"] * 10000) + " ?o }",
}
LIMIT = {"nested groups": "nests", "a chain of ||": "operators", "a chain of UNION": "clauses",
         "a long path": "path"}


def refused_in_a_process(method: str, text: str) -> str:
    """What ``OxigraphGraph().<method>(text)`` prints in a process of its own (a crash there
    is a failed test, not a dead runner): "refused: ..." when it is refused by shape."""
    script = textwrap.dedent(f"""
        from trails.errors import UnsafeFilterError
        from trails.kg import OxigraphGraph
        try:
            OxigraphGraph().{method}({text!r})
        except UnsafeFilterError as exc:
            print("refused:", exc)
    """)
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    return done.stdout


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_unscoped_query_of_a_hostile_shape_is_refused_not_a_crash(name):
    out = refused_in_a_process("query", HOSTILE[name])
    assert out.startswith("refused:") and LIMIT[name] in out


def test_an_unscoped_query_keeps_room_a_scoped_one_has_not():
    """The owner's queries are bounded against crashes and runaway work only: a query with
    more patterns and clauses than a filter may have still runs, exactly."""
    kg = OxigraphGraph()
    kg.update("INSERT DATA { <urn:a> <urn:p> 1 }")
    branches = " UNION ".join(f"{{ ?s <urn:p> {n} }}" for n in range(1, 401))
    assert kg.query(f"SELECT ?s WHERE {{ {branches} }}").column("s") == ["urn:a"]
    with pytest.raises(UnsafeFilterError, match="clauses"):
        kg.query(f"SELECT ?s WHERE {{ {branches} }}", scopes=["default"])


HOSTILE_UPDATES = {
    "nested groups": "INSERT { <urn:a> <urn:b> <urn:c> } WHERE " + "{ " * 5000 + " }" * 5000,
    "a chain of ||": ("INSERT { <urn:a> <urn:b> <urn:c> } WHERE { ?s ?p ?o FILTER("
                      + " || ".join(["?s = 1"] * 20000) + ") }"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_UPDATES))
def test_a_users_update_of_a_hostile_shape_is_refused_not_a_crash(name):
    out = refused_in_a_process("update", HOSTILE_UPDATES[name])
    assert out.startswith("refused:") and LIMIT[name] in out


def test_a_large_insert_of_data_is_no_hostile_shape():
    kg = OxigraphGraph()
    triples = " ".join(f"<urn:s{n}> <urn:p> {n} ." for n in range(20000))
    kg.update(f"INSERT DATA {{ {triples} }}")
    assert kg.query("SELECT (COUNT(*) AS ?n) WHERE { ?s <urn:p> ?o }").rows[0]["n"] == 20000
