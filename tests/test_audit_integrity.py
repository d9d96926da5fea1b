"""The audit trail keeps what it recorded and nothing else: retention removes exactly the
expired records (every triple of each, their hits' and bindings' nodes included) and leaves
the others whole; run ids reach SPARQL only as bound values; nobody but trails writes the
audit graph."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.audit import AuditTrail, DeletionRecord, HitRecord, SearchRecord, SparqlQueryRecord
from trails.config import AuditConfig
from trails.kg.oxigraph import OxigraphGraph

AUDIT_GRAPH = ox.NamedNode("urn:trails:audit")
NOW = dt.datetime.now(dt.UTC)
DATE = '"2024-01-01"^^<http://www.w3.org/2001/XMLSchema#date>'


def trail(retention_days: int | None = None) -> AuditTrail:
    return AuditTrail(OxigraphGraph(), None, AuditConfig(retention_days=retention_days),
                      writable=True, enabled=True)


def audit_quads(kg: OxigraphGraph) -> set[str]:
    """The audit graph as comparable text (no blank nodes are minted there)."""
    return {str(q) for q in kg.store.quads_for_pattern(None, None, None, AUDIT_GRAPH)}


def record(number: int, age_days: float, kind: str, caller: str, hits: int) -> object:
    started = (NOW - dt.timedelta(days=age_days)).isoformat()
    common = {"run_id": f"{number:032x}", "caller": caller, "started": started,
              "ended": started}
    if kind == "deletion":
        return DeletionRecord(**common, reason="expired",
                              documents=[f"trails://local/doc/d{number}"])
    if kind == "sparql":
        return SparqlQueryRecord(**common, query_sha256="0" * 64, query="ASK {}",
                                 scopes=["default"], answers=1)
    return SearchRecord(
        **common, query_sha256="0" * 64, query=f"question {number}", scopes=["default"],
        filter="SELECT ?iri WHERE { ?iri ?p ?since }", bindings={"since": DATE},
        replay_of=None if number % 3 else f"urn:trails:run:{0:032x}",
        hits=[HitRecord(rank=r, iri=f"trails://local/doc/d{r}/v/x/c/0", score=1.0 / r,
                        document=f"trails://local/doc/d{r}", components={"vector": 0.5},
                        admitted_by={"iri": f"<trails://local/doc/d{r}/v/x/c/0>",
                                     "since": DATE})
              for r in range(1, hits + 1)])


RECORDS = st.lists(
    st.tuples(st.sampled_from([0.0, 1.0, 29.0, 31.0, 45.0, 400.0]),
              st.sampled_from(["search", "deletion", "sparql"]),
              st.sampled_from(["alice", "bob", "carol"]),
              st.integers(min_value=0, max_value=3)),
    min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS)
def test_retention_removes_exactly_the_expired_records_and_all_of_their_triples(specs):
    records = [record(i, *spec) for i, spec in enumerate(specs)]
    kept = [r for r, spec in zip(records, specs, strict=True) if spec[0] < 30]
    # Everything folded while nothing expired; then the retention of 30 days applies.
    aged = trail()
    for r in records:
        aged.record(r)
    aged.fold()
    aged.settings = AuditConfig(retention_days=30)
    aged.fold()
    # What the audit graph must hold: exactly what folding only the kept records writes.
    expected = trail()
    for r in kept:
        expected.record(r)
    expected.fold()
    assert audit_quads(aged.kg) == audit_quads(expected.kg)
    assert {r.run_id for r in aged.activities(limit=None)} == {r.run_id for r in kept}


def test_retention_leaves_the_rest_of_the_graph_alone():
    audit = trail()
    audit.kg.update('INSERT DATA { <urn:x:doc> <urn:x:p> "v" . '
                    'GRAPH <urn:trails:scope:legal> { <urn:x:doc> <urn:x:p> "w" } }')
    audit.record(record(1, 400, "search", "alice", 2))
    audit.fold()
    audit.settings = AuditConfig(retention_days=30)
    audit.fold()
    assert audit_quads(audit.kg) == set()
    assert len(audit.kg) == 2


def test_a_record_dated_without_an_offset_or_not_at_all_never_blocks_a_fold():
    audit = trail(retention_days=30)
    good = record(1, 1, "search", "alice", 1)
    audit.record(SearchRecord(run_id="2" * 32, caller="x", started="2024-01-01T00:00:00",
                              ended="2024-01-01T00:00:00", query_sha256="0" * 64))
    audit.record(SearchRecord(run_id="3" * 32, caller="x", started="last tuesday",
                              ended="last tuesday", query_sha256="0" * 64))
    audit.record(good)
    assert audit.fold() == 3
    assert [r.run_id for r in audit.activities()] == [good.run_id]
    assert audit.failures == 1  # the undated one, kept aside; the naive one read as UTC


# -- run ids are values, never query text -------------------------------------------------------

CRAFTED = ["x> ?p ?record } UNION { ?r ?q ?record } #",
           "urn:trails:run:x> ?p ?record } UNION { ?r ?q ?record } #",
           "0" * 31 + "> ?p ?record } UNION { ?r ?q ?record } #",
           "", "  ", "123", "g" * 32, "0" * 33, "urn:trails:run:", "urn:other:" + "0" * 32,
           "0" * 32 + "\n} UNION { ?r ?q ?record }"]
# Short hex digits are a prefix (tests/test_run_prefixes.py): one of no run names none.


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A context directory with one folded search run and one pending."""
    from trails import retrieve
    from trails.context import Context
    from trails.ingest import Document, ingest_all
    from trails.testing import MockEmbedder

    root = tmp_path_factory.mktemp("audited") / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("a", "a.md", "Rail safety evidence.")], ctx=ctx)
        folded = retrieve("rail safety", ctx).run_id
    with Context.open(root) as ctx:
        pending = retrieve("rail", ctx).run_id
    return root, [folded, pending]


@pytest.mark.parametrize("crafted", CRAFTED)
def test_a_malformed_run_id_is_refused_and_shows_no_other_run(audited, crafted):
    from trails import replay
    from trails.context import Context
    from trails.errors import InvalidArgumentError

    root, runs = audited
    with Context.open(root, read_only=True) as ctx:
        with pytest.raises(InvalidArgumentError, match="run id"):
            ctx.audit.get(crafted)
        with pytest.raises(InvalidArgumentError, match="run id"):
            replay(ctx, crafted)
        for run in runs:  # the real ones, by id or IRI, any case
            assert ctx.audit.get(run).run_id == run
            assert ctx.audit.get(f"urn:trails:run:{run.upper()}").run_id == run


@pytest.mark.parametrize("command", [["audit", "show"], ["replay"]])
def test_the_command_line_refuses_a_crafted_run_id_without_a_traceback(audited, command):
    from typer.testing import CliRunner

    from trails.cli import app

    root, runs = audited
    result = CliRunner().invoke(app, ["--db", str(root), *command, CRAFTED[0]])
    assert result.exit_code == 1
    assert "no run id" in result.stderr and "Traceback" not in result.stderr
    assert not any(run in result.stdout for run in runs)


def test_listing_binds_its_caller_and_time():
    audit = trail()
    for number, caller in enumerate(['alice', 'bob" } UNION { ?x ?y ?z', "o'hara"]):
        audit.record(record(number, 1, "search", caller, 1))
    audit.fold()
    assert [r.caller for r in audit.activities(caller="o'hara")] == ["o'hara"]
    assert audit.activities(caller='bob" } UNION { ?x ?y ?z')[0].run_id == f"{1:032x}"
    assert audit.activities(caller="nobody") == []
    assert len(audit.activities(since=NOW - dt.timedelta(days=2))) == 3
    assert audit.activities(since=NOW) == []


# -- the audit graph is written by trails alone ---------------------------------------------------

def forged_quads() -> list[ox.Quad]:
    from trails.audit.prov import quads
    return quads(record(99, 0, "search", "mallory", 1))


def forged_in(format: ox.RdfFormat) -> bytes:
    return ox.serialize(forged_quads(), format=format)


@pytest.mark.parametrize("format", [ox.RdfFormat.TRIG, ox.RdfFormat.N_QUADS,
                                    ox.RdfFormat.JSON_LD])
def test_loading_into_the_audit_graph_is_refused_in_every_format(format):
    from trails.errors import ConfigurationError

    audit = trail()
    audit.record(record(1, 0, "search", "alice", 1))
    audit.fold()
    before = audit_quads(audit.kg), len(audit.kg)
    with pytest.raises(ConfigurationError, match="audit trail"):
        audit.kg.load(forged_in(format), format=format.file_extension)
    assert (audit_quads(audit.kg), len(audit.kg)) == before
    assert [r.caller for r in audit.activities()] == ["alice"]


def test_every_write_primitive_refuses_the_audit_graph():
    from trails.errors import ConfigurationError

    audit = trail()
    audit.record(record(1, 0, "search", "alice", 1))
    audit.fold()
    kg, before = audit.kg, audit_quads(audit.kg)
    nquads = forged_in(ox.RdfFormat.N_QUADS).decode()
    writes = [lambda: kg.add(forged_quads()[0]), lambda: kg.extend(forged_quads()),
              lambda: kg.extend(iter(forged_quads())), lambda: kg.bulk_extend(forged_quads()),
              lambda: kg.load_nquads(nquads), lambda: kg.remove_graph(AUDIT_GRAPH)]
    for write in writes:
        with pytest.raises(ConfigurationError, match="audit trail"):
            write()
    assert audit_quads(kg) == before
    kg.extend([ox.Quad(ox.NamedNode("urn:x:a"), ox.NamedNode("urn:x:b"), ox.Literal("c"),
                       ox.NamedNode("urn:trails:scope:legal"))])  # any other graph: fine
    kg.load_nquads('<urn:x:a> <urn:x:b> "<urn:trails:audit>" <urn:trails:scope:legal> .\n')
    assert len(kg) == len(before) + 2


RUN = "urn:trails:run:" + "9" * 32
UPDATES = [
    f'INSERT DATA {{ GRAPH <urn:trails:audit> {{ <{RUN}> a prov:Activity }} }}',
    f'INSERT DATA {{ GRAPH <urn:trails:\\u0061udit> {{ <{RUN}> a prov:Activity }} }}',
    f'PREFIX t: <urn:trails:> INSERT DATA {{ GRAPH t:audit {{ <{RUN}> a prov:Activity }} }}',
    f'PREFIX u: <urn:> INSERT DATA {{ GRAPH u:trails\\:audit {{ <{RUN}> a prov:Activity }} }}',
    f'WITH <urn:trails:audit> INSERT {{ <{RUN}> a prov:Activity }} WHERE {{}}',
    (f'INSERT {{ GRAPH ?g {{ <{RUN}> a prov:Activity }} }} WHERE '
     '{ BIND(IRI(CONCAT("urn:trails:", "aud", "it")) AS ?g) }'),
    f'insert {{ graph $g {{ <{RUN}> a prov:Activity }} }} where {{ ?x <urn:x:g> $g }}',
    "ADD DEFAULT TO <urn:trails:audit>",
    "COPY <urn:trails:scope:legal> TO <urn:trails:audit>",
    "MOVE <urn:trails:scope:legal> TO <urn:trails:audit>",
    "CLEAR GRAPH <urn:trails:audit>",
    "DROP GRAPH <urn:trails:audit>",
    "DELETE WHERE { GRAPH <urn:trails:audit> { ?s ?p ?o } }",
    ('INSERT DATA { <urn:x:a> <urn:x:b> 1 } ; '
     'INSERT DATA { GRAPH <urn:trails:audit> { <urn:x:a> <urn:x:b> 1 } }'),
    # prefixes however declared: a later one in a string, none of the usual spaces, a comment
    # inside, a name that is not ASCII, a relative IRI under a BASE
    (f'PREFIX a: <urn:trails:aud> INSERT DATA {{ GRAPH a:it {{ <{RUN}> a prov:Activity }} . '
     '<urn:x:n> <urn:x:m> "PREFIX a: <x:>" }'),
    f'PREFIX: <urn:trails:aud> INSERT DATA {{ GRAPH :it {{ <{RUN}> a prov:Activity }} }}',
    (f'PREFIX # a comment\n a: <urn:trails:> INSERT DATA {{ GRAPH a:audit {{ <{RUN}> a '
     'prov:Activity } }'),
    f'PREFIX \u00e9: <urn:trails:> INSERT DATA {{ GRAPH \u00e9:audit {{ <{RUN}> a prov:Activity }} }}',
    (f'BASE <urn:trails:x> PREFIX a: <audit> INSERT DATA {{ GRAPH a: {{ <{RUN}> a '
     'prov:Activity } }'),
]


@pytest.mark.parametrize("update", UPDATES)
def test_updates_that_could_write_the_audit_graph_are_refused(update):
    from trails.errors import SparqlError

    audit = trail()
    audit.kg.extend([ox.Quad(ox.NamedNode("urn:x:a"), ox.NamedNode("urn:x:g"), AUDIT_GRAPH),
                     ox.Quad(ox.NamedNode("urn:x:a"), ox.NamedNode("urn:x:b"), ox.Literal(1),
                             ox.NamedNode("urn:trails:scope:legal"))])
    audit.record(record(1, 0, "search", "alice", 1))
    audit.fold()
    before = audit_quads(audit.kg), len(audit.kg)
    with pytest.raises(SparqlError, match="audit trail"):
        audit.kg.update(update)
    assert (audit_quads(audit.kg), len(audit.kg)) == before


def test_updates_elsewhere_still_work_and_the_fold_still_writes():
    audit = trail(retention_days=30)
    kg = audit.kg
    kg.update('INSERT DATA { GRAPH <urn:trails:scope:legal> { <urn:x:a> <urn:x:b> '
              '"urn:trails:audited" } }')  # a string that only starts like it
    assert len(kg) == 1
    kg.update("INSERT { GRAPH <urn:trails:scope:legal> { ?s <urn:x:c> 1 } } "
              "WHERE { GRAPH ?g { ?s ?p ?o } }")
    audit.record(record(1, 0, "search", "alice", 1))
    audit.record(record(2, 400, "search", "bob", 1))
    assert audit.fold() == 2
    assert [r.caller for r in audit.activities()] == ["alice"]
    kg.update("DELETE WHERE { GRAPH ?g { <urn:x:a> ?p ?o } }")
    assert audit_quads(kg)


def test_trails_load_refuses_the_audit_graph_and_audit_lists_only_real_runs(audited, tmp_path):
    from typer.testing import CliRunner

    from trails.cli import app

    root, runs = audited
    runner = CliRunner()
    for suffix, format in ((".trig", ox.RdfFormat.TRIG), (".nq", ox.RdfFormat.N_QUADS),
                           (".jsonld", ox.RdfFormat.JSON_LD)):
        forged = tmp_path / f"forged{suffix}"
        forged.write_bytes(forged_in(format))
        result = runner.invoke(app, ["--db", str(root), "load", str(forged)])
        assert result.exit_code == 1, result.output
        assert "audit trail" in result.stderr and "Traceback" not in result.stderr
    listed = runner.invoke(app, ["--db", str(root), "audit", "--json"])
    assert "mallory" not in listed.stdout
    assert {run for run in runs if run in listed.stdout} == set(runs)


def test_a_document_whose_metadata_names_the_audit_graph_is_written_and_deleted():
    from trails.ingest import Document, ingest_all
    from trails.testing import fresh_context

    with fresh_context() as ctx:
        named = {"title": "About <urn:trails:audit>", "see": "urn:trails:audit"}
        ingest_all([Document("a", "a", "Rails.", metadata=named)], ctx=ctx)
        ingest_all([Document("a", "a", "Rails.", metadata={**named, "v": 2})], ctx=ctx)
        assert ctx.delete_document("trails://local/doc/a")
        assert ctx.verify().ok and len(ctx.kg) == 0


def test_a_delete_through_a_variable_graph_made_from_a_string_is_refused():
    from trails.errors import SparqlError

    audit = trail()
    audit.record(record(1, 0, "search", "alice", 1))
    audit.fold()
    before = audit_quads(audit.kg)
    with pytest.raises(SparqlError, match="audit trail"):
        audit.kg.update('DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { '
                        'BIND(IRI("urn:trails:audit") AS ?g) GRAPH ?g { ?s ?p ?o } }')
    assert audit_quads(audit.kg) == before


def test_trails_own_updates_are_not_read_by_the_guard_and_a_users_still_is(monkeypatch):
    """Ingestion's step 4 carries each document's triples (megabytes for a large batch), a
    delete and a metadata change their own: text trails generated, which the guard does
    not read. An update a user writes still is, and still refused."""
    from trails import retrieve
    from trails.errors import SparqlError
    from trails.ingest import Document, ingest_all
    from trails.kg import reserved
    from trails.testing import fresh_context

    read: list[str] = []
    scan = reserved.code_only
    monkeypatch.setattr(reserved, "code_only", lambda text: read.append(text) or scan(text))
    with fresh_context() as ctx:
        ingest_all([Document(f"d{i}", "s", f"Rails {i}.") for i in range(3)], ctx=ctx)
        ingest_all([Document("d1", "s", "Rails 1.", metadata={"v": 2})], ctx=ctx)
        assert ctx.delete_document("trails://local/doc/d0")
        assert read == []
        with pytest.raises(SparqlError, match="audit trail"):
            ctx.kg.update("INSERT DATA { GRAPH <urn:trails:audit> { <x:a> <x:b> <x:c> } }")
        assert len(read) == 1
        assert len(retrieve("rails", ctx, k=5)) == 2


INJECTED = ("<x:a> <x:b> <x:c> } ; DELETE WHERE { GRAPH <urn:trails:audit> { ?s ?p ?o } } ; "
            "DELETE DATA { <x:a> <x:b> <x:c>")


@pytest.mark.parametrize("kind", ["kept", "staged"])
def test_a_manifest_planted_in_the_minted_graph_never_becomes_an_update(tmp_path, monkeypatch,
                                                                         kind):
    """Anyone may write the minted graph, and trails pastes the manifests it reads there into
    its own updates (a delete's, a new version's step 4, repair's), which the guard does not
    read: text that is not a manifest must never run as SPARQL."""
    from trails import retrieve
    from trails.context import Context
    from trails.ingest import Document, ingest_all, writer
    from trails.ingest.minting import MINTED, MINTED_GRAPH
    from trails.testing import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("a", "mem:a", "Rails and lighthouses.")], ctx=ctx)
        retrieve("lighthouse", ctx, k=1)
        ctx.audit.fold()
        before = audit_quads(ctx.kg)
        assert before
        planted = ox.Literal(INJECTED)
        if kind == "kept":
            for doc in ("trails://local/doc/a", "trails://local/doc/nothing"):
                ctx.kg.update(f"DELETE WHERE {{ GRAPH {MINTED_GRAPH} {{ <{doc}> {MINTED} ?m }} }}")
                ctx.kg.add(ox.Quad(ox.NamedNode(doc), MINTED, planted, MINTED_GRAPH))
            assert not ctx.delete_document("trails://local/doc/nothing")
            ingest_all([Document("a", "mem:a", "Rails and lighthouses, again.")], ctx=ctx)
            assert ctx.delete_document("trails://local/doc/a")
        else:  # a kill between the commit point and step 4 leaves the staged manifest
            monkeypatch.setattr(writer.VersionWriter, "clean_graph",
                                lambda self, documents: (_ for _ in ()).throw(KeyboardInterrupt))
            with pytest.raises(KeyboardInterrupt):
                ingest_all([Document("a", "mem:a", "Rails, lighthouses.")], ctx=ctx)
            monkeypatch.undo()
            node = select_one(ctx, f"SELECT ?n WHERE {{ GRAPH {MINTED_GRAPH} {{ ?n "
                                   "trails:stagedFor <trails://local/doc/a> } }")
            ctx.kg.update(f"DELETE WHERE {{ GRAPH {MINTED_GRAPH} {{ <{node}> {MINTED} ?m }} }}")
            ctx.kg.add(ox.Quad(ox.NamedNode(node), MINTED, planted, MINTED_GRAPH))
            report = ctx.verify(repair=True)
            assert report.removed == ["trails://local/doc/a"]  # nothing left to finish it from
        ctx.audit.fold()
        assert before <= audit_quads(ctx.kg)
        assert ctx.verify().ok


def select_one(ctx, query: str) -> str:
    from trails.kg.base import select

    rows = select(ctx.kg, query)
    assert len(rows) == 1, rows
    return str(rows[0]["n"])
