"""A scope's graph speaks for its own documents only: triples loaded into another scope's graph
about a document (``trails:expires``, the ``expires`` metadata, a date under a scope's
retention rule, a ``trails:scope``, a type, a ``trails:sourceFile``) neither hide it from its
scope's searches nor let ``prune --expired`` or ``ingest DIR --prune`` delete it."""

from __future__ import annotations

import datetime as dt

import pytest

from trails import retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.ingest.retention import prune_expired
from trails.kg.oxigraph import OxigraphGraph
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.sqlite_vec import SqliteVecStore

ALPHA_DOC = "trails://local/scope/alpha/doc/plan.md"
BETA_DOC = "trails://local/scope/beta/doc/old.md"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
PREFIXES = ("@prefix trails: <https://trails.dev/ns#> . @prefix meta: <https://trails.dev/meta#> ."
            " @prefix schema: <https://schema.org/> . "
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n")
# What a file loaded into scope beta could say about scope alpha's document.
FORGED = {
    "expires": f'<{ALPHA_DOC}> trails:expires "2000-01-01T00:00:00Z"^^xsd:dateTime .',
    "expires and metadata": (f'<{ALPHA_DOC}> trails:expires "2000-01-01T00:00:00Z"^^xsd:dateTime'
                             ' ; meta:expires "2000-01-01" .'),
    "claimed as beta's": (f'<{ALPHA_DOC}> a trails:Document ; trails:scope "beta" ; '
                          'trails:expires "2000-01-01T00:00:00Z"^^xsd:dateTime ; '
                          'meta:expires "2000-01-01" .'),
    "a date under tmp's rule": (f'<{ALPHA_DOC}> trails:scope "tmp" ; '
                                'schema:dateCreated "1990-01-01"^^xsd:date ; '
                                'trails:expires "2000-01-01T00:00:00Z"^^xsd:dateTime .'),
}


@pytest.fixture
def ctx():
    embedder = MockEmbedder(dim=32)
    context = Context(OxigraphGraph(), SqliteVecStore(path=":memory:", dim=32), embedder,
                      retention={"tmp": "P1D"})
    ingest_all([Document("plan.md", "plan.md", "The alpha team's secret plan.")],
               ctx=context, scope="alpha")
    ingest_all([Document("old.md", "old.md", "An old beta memo about the plan.",
                         metadata={"expires": "2001-01-01"})], ctx=context, scope="beta")
    yield context
    context.close()


def _found(ctx: Context, scope: str) -> list[str]:
    hits = retrieve("secret plan", ctx, scope=scope, k=5, now=NOW)
    return sorted({hit.document for hit in hits})


@pytest.mark.parametrize("forged", sorted(FORGED))
def test_another_scopes_triples_neither_hide_nor_delete_a_document(ctx, forged):
    ctx.kg.load(PREFIXES + FORGED[forged], format="text/turtle", scope="beta")
    assert _found(ctx, "alpha") == [ALPHA_DOC]
    deleted = prune_expired(ctx, now=NOW)
    # beta's own expired document goes (its own expires, 2001-01-01), alpha's stays.
    assert [(d.iri, d.expires) for d in deleted] == [
        (BETA_DOC, dt.datetime(2001, 1, 1, tzinfo=dt.UTC))]
    assert _found(ctx, "alpha") == [ALPHA_DOC]


def test_a_scopes_own_expiry_still_hides_and_prunes(ctx):
    ctx.kg.load(PREFIXES + FORGED["expires and metadata"], format="text/turtle", scope="alpha")
    assert _found(ctx, "alpha") == []
    deleted = prune_expired(ctx, now=NOW)
    assert sorted(d.iri for d in deleted) == [ALPHA_DOC, BETA_DOC]


def test_a_prune_of_one_scope_never_deletes_another_scopes_document(ctx, tmp_path):
    """``ingest DIR --prune`` into beta: a file loaded into beta's graph that says alpha's
    document came from a file under DIR, now gone, does not make the prune delete it."""
    (tmp_path / "kept.md").write_text("A beta note.")
    ctx.kg.load(PREFIXES + f'<{ALPHA_DOC}> a trails:Document ; trails:scope "beta" ; '
                f'trails:sourceFile "{tmp_path / "gone.md"}" .',
                format="text/turtle", scope="beta")
    ingest_all(str(tmp_path), ctx=ctx, scope="beta", prune=True)
    assert ALPHA_DOC in ctx.vectors.current_versions()
    assert _found(ctx, "alpha") == [ALPHA_DOC]


def test_verify_repair_never_removes_a_document_for_another_scopes_claims(tmp_path):
    """A ``trails:currentVersion`` loaded into beta's graph about alpha's document made
    ``verify`` report alpha's document as a graph behind its record, and ``--repair``
    delete it."""
    context = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32))
    with context:
        ingest_all([Document("plan.md", "plan.md", "The alpha team's secret plan.")],
                   ctx=context, scope="alpha")
        for version in ("0000000000000000", "ffffffffffffffff"):  # before and after its own
            context.kg.load(PREFIXES + f'<{ALPHA_DOC}> a trails:Document ; trails:scope "beta" ;'
                            f' trails:currentVersion "{version}" ; trails:chunkCount 5 .',
                            format="text/turtle", scope="beta")
        report = context.verify(repair=True)
        assert report.graph_behind == []
        assert report.removed == []
        assert ALPHA_DOC in context.vectors.current_versions()
        assert _found(context, "alpha") == [ALPHA_DOC]
