"""trails' reads on a Virtuoso that cuts results at a small ``ResultSetMaxRows`` (100 here,
10,000 in Debian's virtuoso.ini; ``MaxSortedTopRows`` as small): a few hundred chunks cross it.

Before these reads were paged, every one past the limit raised SparqlError ("cut the result at
its limit of 100 rows"): retrieval with a filter admitting more chunks, ``verify``, export,
the scope listing and the union view, the linker's read of a scope's labels, a user's plain
SELECT, the command line's ``verify`` and ``export``. What the
server holds is counted with plain HTTP requests, not with the code under test.
"""

from __future__ import annotations

import shutil

import pyoxigraph as ox
import pytest

from rdf_strategies import canonical
from test_cli import trails
from test_remote_dialect import JSON, Response
from test_remote_virtuoso import DIM, documents
from trails.context import Context
from trails.errors import SparqlError
from trails.ingest import Document, ingest_all
from trails.ingest.linking import LabelLinker
from trails.vector import MockEmbedder, SqliteVecStore, retrieve

httpx = pytest.importorskip("httpx")
from trails.kg import SparqlEndpointGraph
from trails.kg.remote.paging import pageable, read_all
from trails.testing.servers.virtuoso import INSTALL_COMMAND, VirtuosoServer

LIMIT = 100
EX = "https://ex.org/"
ALL_CHUNKS = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc }"
OWN = ("http://www.openlinksw.com/schemas/virtrdf#", "http://www.w3.org/ns/ldp#",
       "http://localuriqaserver/sparql")


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    if shutil.which("virtuoso-t") is None:
        pytest.skip(f"Virtuoso 7 is not installed (no virtuoso-t on PATH): {INSTALL_COMMAND}")
    server = VirtuosoServer(tmp_path_factory.getbasetemp(), max_rows=LIMIT).start()
    yield server
    server.close()


def count_on_server(server, where: str) -> int:
    """``COUNT(*)`` of a pattern over the store's graphs, by a plain request (one row)."""
    own = ", ".join(f"<{g}>" for g in OWN)
    response = httpx.post(server.query_url, timeout=30, headers={
        "Accept": "application/sparql-results+json"}, data={
        "query": f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH ?g {{ {where} }} "
                 f"FILTER(?g NOT IN ({own})) }}"})
    response.raise_for_status()
    return int(response.json()["results"]["bindings"][0]["n"]["value"])


def drop_everything(server) -> None:
    response = httpx.post(server.query_url, timeout=30, data={"query": "SELECT DISTINCT ?g WHERE "
                          "{ GRAPH ?g { ?s ?p ?o } }"}, headers={
                          "Accept": "application/sparql-results+json"})
    response.raise_for_status()
    graphs = {row["g"]["value"] for row in response.json()["results"]["bindings"]} - set(OWN)
    for graph in graphs:
        httpx.post(server.query_url, data={"query": f"DROP SILENT GRAPH <{graph}>"},
                   timeout=30).raise_for_status()
    if "x-sparql-maxrows" in response.headers:  # the listing was cut: drop the others too
        drop_everything(server)


@pytest.fixture
def kg(small_server):
    drop_everything(small_server)
    graph = SparqlEndpointGraph(small_server.query_url, dialect="virtuoso", timeout=30.0)
    yield graph
    graph.close()
    drop_everything(small_server)


def test_the_server_cuts_results_past_its_limit(small_server, kg):
    """The premise: a plain request past the limit comes back cut and flagged."""
    kg.extend(ox.Quad(ox.NamedNode(f"{EX}s{n}"), ox.NamedNode(f"{EX}p"), ox.Literal(n))
              for n in range(LIMIT + 50))
    response = httpx.post(small_server.query_url, data={"query": "SELECT ?s WHERE { ?s ?p ?o }"},
                          headers={"Accept": "application/sparql-results+json"}, timeout=30)
    assert response.headers["x-sparql-maxrows"] == str(LIMIT)
    assert len(response.json()["results"]["bindings"]) == LIMIT


@pytest.fixture(scope="module")
def ingested_server(tmp_path_factory):
    """The same documents, more chunks than the limit, in a context on a server of its own
    and in an embedded one."""
    if shutil.which("virtuoso-t") is None:
        pytest.skip(f"Virtuoso 7 is not installed (no virtuoso-t on PATH): {INSTALL_COMMAND}")
    server = VirtuosoServer(tmp_path_factory.getbasetemp(), max_rows=LIMIT).start()
    embedder = MockEmbedder(dim=DIM)
    graph = SparqlEndpointGraph(server.query_url, dialect="virtuoso", timeout=30.0)
    remote = Context(kg=graph, vectors=SqliteVecStore(":memory:", dim=DIM,
                                                      embedder=embedder.identity),
                     embedder=embedder)
    embedded = Context.memory(MockEmbedder(dim=DIM))
    try:
        for ctx in (remote, embedded):
            assert ingest_all(documents(3 * LIMIT // 2, "d"), ctx=ctx).ingested == 3 * LIMIT // 2
        yield server, remote, embedded
    finally:
        remote.close()
        embedded.close()
        server.close()


def test_a_filter_admitting_more_chunks_than_the_limit(ingested_server):
    _, remote, embedded = ingested_server
    chunks = embedded.kg.select_iris(ALL_CHUNKS)
    assert len(chunks) > LIMIT
    assert sorted(remote.kg.select_iris(ALL_CHUNKS)) == sorted(chunks)
    args = {"mode": "hybrid", "k": 5, "sparql_filter": ALL_CHUNKS}
    found = retrieve("graph databases", ctx=remote, **args)
    expected = retrieve("graph databases", ctx=embedded, **args)
    assert found.candidates == expected.candidates == len(chunks)
    assert [(h.iri, round(h.score, 12)) for h in found] == [
        (h.iri, round(h.score, 12)) for h in expected]


def test_verify_of_a_context_past_the_limit_is_clean(ingested_server):
    _, remote, _ = ingested_server
    report = remote.verify()
    assert report.ok, report.summary()
    assert remote.verify(repair=True).ok


def test_the_export_of_a_context_past_the_limit_holds_every_quad(ingested_server):
    server, remote, embedded = ingested_server
    exported = ox.Dataset(ox.parse(remote.kg.dump(format="nquads").encode(),
                                   format=ox.RdfFormat.N_QUADS))
    assert len(exported) == len(remote.kg) == count_on_server(server, "?s ?p ?o") > LIMIT
    assert {q.subject.value for q in exported
            if q.predicate.value == "https://schema.org/isPartOf"} == set(
        embedded.kg.select_iris(ALL_CHUNKS))


def test_an_export_past_the_limit_holds_every_quad_written(kg):
    """Named graphs, the default scope and blank nodes (each read back as one node across
    pages): the export is the dataset written, quad for quad."""
    data = [ox.Quad(ox.NamedNode(f"{EX}s{n}"), ox.NamedNode(f"{EX}name"), ox.Literal(f"n{n}"),
                    ox.NamedNode(f"urn:trails:scope:{'legal' if n % 2 else 'hr'}"))
            for n in range(LIMIT)]
    data += [ox.Quad(ox.NamedNode(f"{EX}t{n}"), ox.NamedNode(f"{EX}v"), ox.Literal(n))
             for n in range(LIMIT)]
    for n in range(LIMIT // 2):
        node = ox.BlankNode()
        data += [ox.Quad(ox.NamedNode(f"{EX}r{n}"), ox.NamedNode(f"{EX}has"), node),
                 ox.Quad(node, ox.NamedNode(f"{EX}v"), ox.Literal(f"v{n}", language="en"))]
    kg.extend(data)
    exported = ox.parse(kg.dump(format="nquads").encode(), format=ox.RdfFormat.N_QUADS)
    assert canonical(exported) == canonical(data)
    legal = list(ox.parse(kg.dump(format="ntriples", scope="legal").encode(),
                          format=ox.RdfFormat.N_TRIPLES))
    assert len(legal) == LIMIT // 2


def test_the_scope_listing_and_the_union_view_past_the_limit(kg):
    """More scopes than the limit: the scope listing, and the graph listing every union-view
    query sends, read them all."""
    names = [f"s{n:03d}" for n in range(LIMIT + 20)]
    kg.extend(ox.Quad(ox.NamedNode(f"{EX}{name}"), ox.NamedNode(f"{EX}in"), ox.Literal(name),
                      ox.NamedNode(f"urn:trails:scope:{name}")) for name in names)
    assert kg.scopes() == ["default", *names]
    found = kg.query(f"SELECT ?o WHERE {{ ?s <{EX}in> ?o }}")
    assert sorted(found.column("o")) == names


def test_a_users_plain_select_is_read_whole_and_one_with_its_own_slice_is_refused(kg):
    kg.extend(ox.Quad(ox.NamedNode(f"{EX}s{n}"), ox.NamedNode(f"{EX}p"), ox.Literal(n))
              for n in range(3 * LIMIT))
    found = kg.query(f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }} # a comment at the end")
    assert sorted(found.column("n")) == list(range(3 * LIMIT))
    grouped = kg.query(f"SELECT ?s (COUNT(*) AS ?c) WHERE {{ ?s <{EX}p> ?n }} GROUP BY ?s")
    assert len(grouped.rows) == 3 * LIMIT and {r["c"] for r in grouped.rows} == {1}
    for modifier, named in [("ORDER BY ?n", "its own ORDER BY"), ("LIMIT 250", "its own LIMIT"),
                            ("OFFSET 10 LIMIT 250", "its own OFFSET")]:
        with pytest.raises(SparqlError, match=f"limit of {LIMIT} rows.*{named}"):
            kg.query(f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }} {modifier}")
    # Virtuoso flags a result of exactly as many rows as its limit too: read whole, in pages
    # or (a LIMIT no larger than the server's: nothing was left out) as it came.
    exact = kg.query(f"SELECT ?n WHERE {{ ?s <{EX}p> ?n FILTER(?n < {LIMIT}) }}")
    assert sorted(exact.column("n")) == list(range(LIMIT))
    assert len(kg.query(f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }} LIMIT {LIMIT}").rows) == LIMIT


def test_the_command_lines_verify_and_export_past_the_limit(small_server, kg, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(LIMIT + 30):
        (notes / f"n{n}.md").write_text(f"Note {n} on graph databases.\n")
    db = tmp_path / "kb"
    created = trails("--db", db, "init", "--graph", "sparql", "--endpoint",
                     small_server.query_url, "--sparql-dialect", "virtuoso", "--model", "mock:32")
    assert created.exit_code == 0, created.stderr
    ingested = trails("--db", db, "ingest", notes, "--quiet")
    assert ingested.exit_code == 0, ingested.stderr
    verified = trails("--db", db, "verify")
    assert verified.exit_code == 0, verified.stderr
    exported = trails("--db", db, "export", "--format", "nquads", "--audit")
    assert exported.exit_code == 0, exported.stderr
    quads = list(ox.parse(exported.stdout.encode(), format=ox.RdfFormat.N_QUADS))
    assert len(quads) == count_on_server(small_server, "?s ?p ?o") > LIMIT


def test_linking_reads_every_label_past_the_limit(kg):
    """The linker reads a scope's labels in one query: more labels than the limit."""
    kg.extend(ox.Quad(ox.NamedNode(f"{EX}e{n}"),
                      ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                      ox.Literal(f"Widget{n:03d}")) for n in range(LIMIT + 50))
    embedder = MockEmbedder(dim=DIM)
    ctx = Context(kg=kg, vectors=SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity),
                  embedder=embedder)
    try:
        notes = [Document(id=f"w{n}", source=f"w{n}.md", text=f"A note on Widget{n:03d}.")
                 for n in (7, LIMIT + 49)]
        assert ingest_all(notes, ctx=ctx, linker=LabelLinker()).ingested == 2
        linked = kg.query("SELECT ?e WHERE { ?c trails:mentions ?e }").column("e")
        assert sorted(linked) == [f"{EX}e{LIMIT + 49}", f"{EX}e7"]
        report = ctx.link(LabelLinker())
        assert not report.added and not report.removed
    finally:
        ctx.close()


# -- without a server: which queries are paged, and how ------------------------------------------

@pytest.mark.parametrize("text", [
    'SELECT ?s WHERE { ?s <urn:limit> "ORDER BY ?s" } # LIMIT 5',
    "PREFIX limit: <x:> SELECT ?limit WHERE { ?limit limit:offset ?from }",
    "SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?o LIMIT 5 } }",
    "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s VALUES ?s { <x:a> }",
])
def test_a_select_without_a_slice_or_order_of_its_own_is_paged(text):
    assert pageable(text) == ("PREFIX limit: <x:> " if text.startswith("PREFIX") else "",
                              text.removeprefix("PREFIX limit: <x:> "))


@pytest.mark.parametrize(("text", "why"), [
    ("SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s", "its own ORDER BY"),
    ("SELECT ?s WHERE { ?s ?p ?o } LIMIT 20000", "its own LIMIT"),
    ("SELECT ?s WHERE { ?s ?p ?o } offset 3", "its own OFFSET"),
    ("SELECT ?s FROM <urn:g> WHERE { ?s ?p ?o }", "FROM clauses"),
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "no SELECT query"),
])
def test_a_query_whose_answer_paging_would_change_is_not_paged(text, why):
    assert why in pageable(text)


class CuttingServer:
    """A SPARQL server that cuts results at ``cap`` rows and flags them as Virtuoso does
    (a full result of ``cap`` rows too); pyoxigraph evaluates."""

    def __init__(self, values: list[int], cap: int) -> None:
        self.store = ox.Store()
        self.store.extend(ox.Quad(ox.NamedNode(f"{EX}s{n}"), ox.NamedNode(f"{EX}p"),
                                  ox.Literal(n)) for n in values)
        self.cap = cap
        self.sent: list[str] = []

    def post(self, text: str) -> Response:
        self.sent.append(text)
        solutions = self.store.query(text)
        names = [v.value for v in solutions.variables]
        rows = [{name: {"type": "literal", "value": row[name].value,
                        "datatype": row[name].datatype.value} if isinstance(row[name], ox.Literal)
                 else {"type": "uri", "value": row[name].value}
                 for name in names if row[name] is not None} for row in solutions]
        flag = {"x-sparql-maxrows": str(self.cap)} if len(rows) >= self.cap else {}
        return Response({"head": {"vars": names}, "results": {"bindings": rows[:self.cap]}},
                        JSON, **flag)


def test_a_server_that_never_cuts_is_sent_each_query_once():
    server = CuttingServer(list(range(50)), cap=1000)
    result = read_all(server.post, f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }}", "u")
    assert sorted(result.column("n")) == list(range(50))
    assert len(server.sent) == 1


def test_a_cut_result_is_read_again_in_ordered_pages_of_one_row_less_than_the_limit():
    server = CuttingServer(list(range(23)), cap=5)
    text = f"PREFIX ex: <{EX}>\nSELECT ?s ?n WHERE {{ ?s ex:p ?n }} # ends with a comment"
    result = read_all(server.post, text, "u")
    # In the order of ?s then ?n, IRIs by their text: s0, s1, s10, ..., s19, s2, s20, ...
    assert [row["s"] for row in result.rows] == sorted(f"{EX}s{n}" for n in range(23))
    assert sorted(result.column("n")) == list(range(23))
    pages = server.sent[1:]
    assert len(pages) == 6 and all(page.startswith(f"PREFIX ex: <{EX}>\nSELECT ?s ?n")
                                   for page in pages)
    assert [page.rsplit("LIMIT ", 1)[1] for page in pages] == [
        f"4 OFFSET {offset}" for offset in range(0, 24, 4)]


def test_a_flagged_result_no_longer_than_the_querys_own_limit_is_returned_as_it_came():
    server = CuttingServer(list(range(50)), cap=10)
    result = read_all(server.post, f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }} LIMIT 10", "u")
    assert len(result.rows) == 10 and len(server.sent) == 1
    with pytest.raises(SparqlError, match="limit of 10 rows.*its own LIMIT"):
        read_all(server.post, f"SELECT ?n WHERE {{ ?s <{EX}p> ?n }} LIMIT 11", "u")
