"""Scopes (ADR 0006): named graphs plus a vector field, enforced in every retrieval mode.

The same folder is ingested into scopes "a" and "b", and part of it into the default scope.
Whatever a filter says (GRAPH, FROM, FROM NAMED, explicit IRIs), a query in scope "a" finds
nothing of "b".
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from pg_support import pg_context
from trails import retrieve
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import (
    Document,
    DocumentFailed,
    DocumentIngested,
    DocumentSkipped,
    ingest,
    ingest_all,
)
from trails.testing import fresh_context

BASE = "trails://local/"
MODES = ("vector", "hybrid", "graph")
ALL_CHUNKS = "SELECT ?iri WHERE { ?iri a trails:Chunk }"
TEXTS = {
    "orchard.txt": "Apples grow in the orchard. Pears ripen in autumn.",
    "harbour.txt": "Boats rest in the harbour. Gulls circle the masts.",
    "desert.md": "---\ntitle: Desert\n---\nCamels cross the desert. Dunes shift with the wind.\n",
}


def _folder(root: Path) -> Path:
    folder = root / "kb"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(params=["sqlite-vec", "pgvector"])
def scoped(tmp_path, request):
    """A context holding the folder in scopes a and b, and orchard.txt in the default scope
    (its vectors in the embedded store, or in PostgreSQL)."""
    folder = _folder(tmp_path)
    ctx = fresh_context(dim=32) if request.param == "sqlite-vec" else pg_context(32)
    for scope in ("a", "b"):
        stats = ingest_all(folder, ctx=ctx, scope=scope)
        assert stats.ingested == 3
    assert ingest_all(folder / "orchard.txt", ctx=ctx).ingested == 1
    yield ctx, folder
    ctx.close()


def _chunks_of(ctx: Context, prefix: str) -> set[str]:
    """Live vector ids whose IRI starts with ``prefix`` (a scope's document IRI prefix)."""
    return {i for i in ctx.vectors.all_ids() if i.startswith(prefix)}


def _a(ctx: Context) -> set[str]:
    return _chunks_of(ctx, f"{BASE}scope/a/doc/")


def _b(ctx: Context) -> set[str]:
    return _chunks_of(ctx, f"{BASE}scope/b/doc/")


def _default(ctx: Context) -> set[str]:
    return _chunks_of(ctx, f"{BASE}doc/")


def _found(ctx: Context, mode: str, scope, sparql_filter: str | None = None) -> list:
    if mode == "graph" and sparql_filter is None:
        sparql_filter = ALL_CHUNKS
    return retrieve("apples boats camels", ctx, mode=mode, k=1000, scope=scope,
                    sparql_filter=sparql_filter)


def test_the_fixture_has_three_disjoint_sets_of_chunks(scoped):
    ctx, _ = scoped
    a, b, default = _a(ctx), _b(ctx), _default(ctx)
    assert len(a) == len(b) == 3 and len(default) == 1
    assert ctx.vectors.count() == 7
    assert [d.split("/doc/")[1] for d in sorted(a)] == [d.split("/doc/")[1] for d in sorted(b)]


@pytest.mark.parametrize("mode", MODES)
def test_one_scope_sees_only_its_own_chunks(scoped, mode):
    ctx, _ = scoped
    hits = _found(ctx, mode, "a")
    assert {h.iri for h in hits} == _a(ctx)
    assert {h.metadata["scope"] for h in hits} == {"a"}


@pytest.mark.parametrize("mode", MODES)
def test_several_scopes_see_all_of_them(scoped, mode):
    ctx, _ = scoped
    assert {h.iri for h in _found(ctx, mode, ["a", "b"])} == _a(ctx) | _b(ctx)
    assert {h.iri for h in _found(ctx, mode, ["b", "default"])} == _b(ctx) | _default(ctx)


@pytest.mark.parametrize("mode", MODES)
def test_no_scope_means_the_default_scope_only(scoped, mode):
    ctx, _ = scoped
    hits = _found(ctx, mode, None)
    assert {h.iri for h in hits} == _default(ctx)
    assert {h.metadata["scope"] for h in hits} == {"default"}


def test_hybrid_filter_on_metadata_stays_in_scope(scoped):
    ctx, _ = scoped
    hits = _found(ctx, "hybrid", "b", "SELECT ?iri WHERE { ?iri schema:name \"Desert\" }")
    assert {h.metadata["doc_iri"] for h in hits} == {f"{BASE}scope/b/doc/desert.md"}


def _escapes(ctx: Context) -> dict[str, str]:
    b_chunk = min(_b(ctx))
    b_doc = f"{BASE}scope/b/doc/orchard.txt"
    return {
        "GRAPH <b>": "SELECT ?iri WHERE { GRAPH <urn:trails:scope:b> { ?iri a trails:Chunk } }",
        "GRAPH ?g": "SELECT ?iri WHERE { GRAPH ?g { ?iri a trails:Chunk } }",
        "GRAPH ?g doc": "SELECT ?iri WHERE { GRAPH ?g { ?iri a trails:Document } }",
        "FROM <b>": "SELECT ?iri FROM <urn:trails:scope:b> WHERE { ?iri a trails:Chunk }",
        "FROM NAMED <b>": "SELECT ?iri FROM NAMED <urn:trails:scope:b> "
                          "WHERE { GRAPH ?g { ?iri a trails:Chunk } }",
        "FROM NAMED <b> doc": "SELECT ?iri FROM NAMED <urn:trails:scope:b> "
                              "WHERE { GRAPH <urn:trails:scope:b> { ?iri a trails:Document } }",
        "VALUES": f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_chunk}> <{b_doc}> }} }}",
        "VALUES chunk": f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_chunk}> }} }}",
        "VALUES doc": f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_doc}> }} }}",
        "BIND": f"SELECT ?iri WHERE {{ BIND(<{b_chunk}> AS ?iri) }}",
    }


ESCAPES = ["GRAPH <b>", "GRAPH ?g", "GRAPH ?g doc", "FROM <b>", "FROM NAMED <b>",
           "FROM NAMED <b> doc", "VALUES", "VALUES chunk", "VALUES doc", "BIND"]


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
@pytest.mark.parametrize("escape", ESCAPES)
def test_filters_cannot_reach_another_scope(scoped, mode, escape):
    ctx, _ = scoped
    b_doc_prefix = f"{BASE}scope/b/"
    hits = _found(ctx, mode, "a", _escapes(ctx)[escape])
    leaked = [h for h in hits if h.iri.startswith(b_doc_prefix)
              or str(h.metadata.get("doc_iri", "")).startswith(b_doc_prefix)
              or h.metadata.get("scope") == "b"]
    assert leaked == []
    assert {h.iri for h in hits} <= _a(ctx) | {f"{BASE}scope/a/doc/{n}" for n in TEXTS}
    if escape.startswith(("VALUES", "BIND", "GRAPH <b>")):
        assert len(hits) == 0
    # the same filter in the default scope finds nothing of b either
    assert not [h for h in _found(ctx, mode, None, _escapes(ctx)[escape])
                if h.iri.startswith(b_doc_prefix)]


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_explicit_iris_work_within_their_own_scope(scoped, mode):
    """The control for the escape tests: the same VALUES filter in scope b finds b's chunk."""
    ctx, _ = scoped
    b_chunk = min(_b(ctx))
    hits = _found(ctx, mode, "b", f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_chunk}> }} }}")
    assert [h.iri for h in hits] == [b_chunk]
    hits = _found(ctx, mode, ["a", "b"], f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_chunk}> }} }}")
    assert [h.iri for h in hits] == [b_chunk]


def test_graph_mode_returns_own_documents_but_not_others(scoped):
    ctx, _ = scoped
    a_doc, b_doc = f"{BASE}scope/a/doc/harbour.txt", f"{BASE}scope/b/doc/harbour.txt"
    hits = _found(ctx, "graph", "a", f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{b_doc}> <{a_doc}> }} }}")
    assert [h.iri for h in hits] == [a_doc]


def test_vectors_carry_their_scope(scoped):
    ctx, _ = scoped
    stored = ctx.vectors.get(ctx.vectors.all_ids())
    by_scope = {}
    for vector in stored:
        by_scope.setdefault(vector.metadata["scope"], set()).add(vector.id)
        assert vector.metadata["doc_iri"] in vector.id
    assert by_scope == {"a": _a(ctx), "b": _b(ctx), "default": _default(ctx)}


def test_scope_triples_live_in_the_scope_graph(scoped):
    ctx, _ = scoped
    store = ctx.kg.store
    a_graph = ox.NamedNode("urn:trails:scope:a")
    a_doc = ox.NamedNode(f"{BASE}scope/a/doc/desert.md")
    in_a = list(store.quads_for_pattern(a_doc, None, None, a_graph))
    assert in_a and all(q.graph_name == a_graph for q in in_a)
    assert list(store.quads_for_pattern(a_doc, None, None, ox.DefaultGraph())) == []
    assert ox.Literal("a") in {q.object for q in in_a}
    for chunk in _a(ctx):
        graphs = {q.graph_name for q in store.quads_for_pattern(ox.NamedNode(chunk), None, None, None)}
        assert graphs == {a_graph}
    default_doc = ox.NamedNode(f"{BASE}doc/orchard.txt")
    minted = ox.NamedNode("urn:trails:minted")  # the manifests, outside every scope (ADR 0012)
    assert {q.graph_name for q in store.quads_for_pattern(default_doc, None, None, None)} == \
        {ox.DefaultGraph(), minted}
    assert {q.graph_name for q in store.quads_for_pattern(a_doc, None, None, None)} == \
        {a_graph, minted}
    assert ctx.stats()["scopes"] == ["a", "b", "default"]


def test_reingest_and_changes_stay_within_a_scope(scoped):
    ctx, folder = scoped
    b_before = _b(ctx)
    events = list(ingest(folder, ctx=ctx, scope="a"))
    assert sum(isinstance(e, DocumentSkipped) for e in events) == 3
    (folder / "harbour.txt").write_text("The harbour was drained. Only mud remains.")
    done = [e for e in ingest(folder, ctx=ctx, scope="a") if isinstance(e, DocumentIngested)]
    assert [(e.doc_iri, e.replaced) for e in done] == [(f"{BASE}scope/a/doc/harbour.txt", True)]
    assert _b(ctx) == b_before
    again = list(ingest(folder, ctx=ctx, scope="a"))  # the replaced version is whole: skipped
    assert sum(isinstance(e, DocumentSkipped) for e in again) == 3
    snippets = {h.snippet for h in _found(ctx, "vector", "b")}
    assert TEXTS["harbour.txt"] in snippets
    assert "The harbour was drained. Only mud remains." in {h.snippet for h in _found(ctx, "vector", "a")}
    assert ctx.verify().ok


def test_delete_document_in_one_scope_leaves_the_other(scoped):
    ctx, _ = scoped
    a_doc = f"{BASE}scope/a/doc/desert.md"
    a_chunks = {c for c in _a(ctx) if c.startswith(a_doc + "/")}
    b_before = _b(ctx)
    assert ctx.delete_document(a_doc)
    gone = a_chunks | {a_doc}
    assert not [q for q in ctx.kg.store if q.subject.value in gone
                or (isinstance(q.object, ox.NamedNode) and q.object.value in gone)]
    assert _b(ctx) == b_before and ctx.vectors.get(a_chunks) == []
    assert ctx.verify().ok


def test_an_ingest_never_replaces_a_document_of_another_scope():
    """Another base IRI can mint, in one scope, the IRI of a document of another: that
    document fails alone and the other scope's stays whole, rather than losing its vectors."""
    with fresh_context(dim=32) as ctx:
        ingest_all([Document("x", "x", "Legal text about contracts.")], ctx=ctx, scope="legal")
        legal = nquads_of(ctx)
        events = list(ingest([Document("x", "x", "Elephants walk slowly.")], ctx=ctx,
                             base_iri=f"{BASE}scope/legal/"))
        (failed,) = [e for e in events if isinstance(e, DocumentFailed)]
        assert failed.doc_iri == f"{BASE}scope/legal/doc/x" and "scope 'legal'" in failed.reason
        assert nquads_of(ctx) == legal and ctx.verify().ok
        assert [h.document for h in retrieve("contracts", ctx, scope="legal")] == [failed.doc_iri]


def nquads_of(ctx: Context) -> list[str]:
    return sorted(line for line in str(ctx.kg.dump(format="nquads")).splitlines() if line)


@pytest.mark.parametrize("bad", ["", " a", "a b", "-a", ".a", "_a", "a/b", "../b", "a:b",
                                 "x" * 129, "é", "a\n"])
def test_bad_scope_names_are_refused(bad):
    """As a bad argument, whatever reads the name: an InvalidArgumentError (a ValueError too),
    which the service answers as such, not as a bare ValueError."""
    with fresh_context(dim=32) as ctx:
        with pytest.raises(InvalidArgumentError, match="scope names"):
            ingest_all([Document(id="d", source="d", text="Text.")], ctx=ctx, scope=bad)
        with pytest.raises(InvalidArgumentError, match="scope names"):
            retrieve("text", ctx, mode="vector", scope=bad)
        with pytest.raises(InvalidArgumentError, match="scope names"):
            retrieve("text", ctx, mode="vector", scope=["a", bad])
        with pytest.raises(InvalidArgumentError, match="scope names"):
            ctx.kg.query("ASK { ?s ?p ?o }", scopes=[bad])
        assert ctx.vectors.count() == 0 and len(ctx.kg) == 0


def test_other_scope_arguments_are_refused():
    with fresh_context(dim=32) as ctx:
        with pytest.raises(ValueError):
            retrieve("text", ctx, mode="vector", scope=[])
        with pytest.raises(ValueError):
            retrieve("text", ctx, mode="vector", scope=[None])


@pytest.mark.parametrize("good", ["a", "A1", "tenant-1.v2_x", "0", "x" * 128])
def test_good_scope_names_work(good):
    with fresh_context(dim=32) as ctx:
        assert ingest_all([Document(id="d", source="d", text="Text here.")], ctx=ctx,
                          scope=good).ingested == 1
        hits = retrieve("text", ctx, mode="vector", scope=good)
        assert [h.metadata["scope"] for h in hits] == [good]
        assert retrieve("text", ctx, mode="vector") == []


def test_verify_and_repair_in_a_named_scope(scoped):
    ctx, folder = scoped
    b_before = _b(ctx)
    lost = min(_a(ctx))
    ctx.vectors.delete(lost)
    stray = f"{BASE}scope/a/doc/orchard.txt/v/0000000000000000/c/0"
    ctx.kg.update(f"INSERT DATA {{ GRAPH <urn:trails:scope:a> {{ <{stray}> a trails:Chunk ; "
                  f"schema:isPartOf <{BASE}scope/a/doc/orchard.txt> ; "
                  "trails:version \"0000000000000000\" } }")
    report = ctx.verify()
    assert report.chunks_without_vectors == [lost]
    assert report.stale_chunks == [stray]
    ctx.verify(repair=True)
    assert ctx.verify().ok
    assert _b(ctx) == b_before
    assert not list(ctx.kg.store.quads_for_pattern(ox.NamedNode(stray), None, None, None))
    assert ingest_all(folder, ctx=ctx, scope="a").ingested == 1
    assert ctx.verify().ok and len(_a(ctx)) == 3
    assert {h.iri for h in _found(ctx, "hybrid", "a")} == _a(ctx)


@pytest.mark.parametrize("row", ["other scope", "staged"])
def test_graph_mode_shows_no_metadata_of_rows_outside_the_callers_reach(scoped, row):
    """An IRI scope a's graph mentions is echoed, but a vector row under the same id that is
    another scope's, or staged (not yet committed), lends it no snippet and no metadata."""
    ctx, _ = scoped
    iri = "https://example.org/shared-name"
    ctx.kg.update(f'INSERT DATA {{ GRAPH <urn:trails:scope:a> {{ <{iri}> <https://example.org/p> "x" }} }}')
    metadata = {"scope": "b" if row == "other scope" else "a", "snippet": "SECRET TEXT",
                "text": "SECRET TEXT"}
    ctx.vectors.add_many([iri], [[1.0] * 32], [metadata], pending=row == "staged")
    hits = _found(ctx, "graph", "a", f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{iri}> }} }}")
    assert [h.iri for h in hits] == [iri]
    assert "SECRET" not in hits[0].snippet and hits[0].metadata == {}


def test_a_scope_emptied_by_deletes_is_unknown_again_not_an_empty_answer():
    """Oxigraph keeps a named graph after its last triple goes: the scope it held must not
    stay searchable as an empty one (a typo would then look like a scope with no matches)."""
    from trails.errors import UnknownScopeError

    with fresh_context(dim=16) as ctx:
        ingest_all([Document(id="a", source="a.md", text="harbour cranes")], ctx=ctx)
        ingest_all([Document(id="h", source="h.md", text="harbour staff")], ctx=ctx, scope="hr")
        assert [h.document for h in retrieve("harbour", ctx, scope="hr")] == [
            f"{ctx.base_iri}scope/hr/doc/h"]
        assert ctx.delete_document(f"{ctx.base_iri}scope/hr/doc/h")
        assert ctx.kg.scopes() == ["default"]
        with pytest.raises(UnknownScopeError, match="'hr'"):
            retrieve("harbour", ctx, scope="hr")
        ingest_all([Document(id="h", source="h.md", text="harbour staff")], ctx=ctx, scope="hr")
        assert ctx.kg.scopes() == ["default", "hr"] and retrieve("harbour", ctx, scope="hr")
