"""The vector store holds only the document metadata the context's payload allowlist allows.

Every test uses a persistent store of each backend (sqlite-vec file, Qdrant local folder) and
an in-memory graph, so whatever is found in the store's files on disk was written by the
vector store, and nothing else.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.config import read_config
from trails.context import Context
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import Document, ingest_all
from trails.ingest.payload import RETRIEVAL_FIELDS, check_payload_fields
from trails.kg import OxigraphGraph
from trails.vector import MockEmbedder

DIM = 16
# Markers that appear nowhere else: finding one in the store's files means it got there.
AUTHOR = "Zorbulon Quixtavern"
TITLE = "Treatise of Yarrowmist"
SOURCE_DIR = "srcdir-klaxomb"


def memo(author: str = AUTHOR, body: str = "Rails is released under the MIT licence.") -> str:
    return (f"---\ntitle: {TITLE}\ndate: 2024-03-05\nauthor: {author}\n---\n{body}\n\n"
            "Ruby gems carry their own licences, listed one by one.\n")


def store_bytes(factory) -> bytes:
    """Every byte of every file the store keeps (the SQLite file and its WAL, the vector
    files; the Qdrant folder)."""
    if factory.name == "pgvector":  # every row of every table of the store's schema, as text
        import psycopg

        with psycopg.connect(factory.dsn) as db:
            tables = [t for (t,) in db.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()")]
            return b"".join(str(row).encode() for table in tables for (row,) in db.execute(
                f'SELECT row_to_json(t)::text FROM "{table}" t'))
    root = factory.tmp_path
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                    if p.is_file() and SOURCE_DIR not in p.parts)


def stored_payloads(factory) -> list[dict]:
    """Each row's metadata, read from the store's own files, not through trails' store."""
    if factory.name.startswith("sqlite"):
        with sqlite3.connect(factory.path) as db:
            return [json.loads(m) for (m,) in db.execute(
                "SELECT metadata FROM items WHERE doc_iri IS NOT NULL")]
    if factory.name == "pgvector":  # the server's own rows, through a connection of our own
        import psycopg

        with psycopg.connect(factory.dsn) as db:
            return [dict(m) for (m,) in db.execute(
                "SELECT metadata FROM trails WHERE doc_iri IS NOT NULL")]
    from qdrant_client import QdrantClient  # local mode reads the folder itself

    client = QdrantClient(path=str(factory.path))
    try:
        points, _ = client.scroll("trails", limit=10_000, with_payload=True)
        return [dict(p.payload["metadata"]) for p in points]
    finally:
        client.close()


def make_context(factory, payload=None) -> Context:
    embedder = MockEmbedder(dim=DIM, seed=0)
    store = factory.new(DIM, embedder=embedder.identity) if not factory._made else factory.reopen(
        DIM, embedder=embedder.identity)
    return Context(OxigraphGraph(), store, embedder, payload=payload)


def close_store(ctx: Context, factory) -> None:
    """Close the store so that its files hold everything (Qdrant local writes on close)."""
    ctx.vectors.close()


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / SOURCE_DIR
    folder.mkdir()
    (folder / "memo.md").write_text(memo())
    return folder


def test_by_default_no_document_metadata_reaches_the_store(persistent_store_factory, docs):
    ctx = make_context(persistent_store_factory)
    ingest_all(docs, ctx=ctx)
    hits = retrieve("licence", ctx, mode="vector", k=5)
    close_store(ctx, persistent_store_factory)
    payloads = stored_payloads(persistent_store_factory)
    assert payloads and all(set(p) <= RETRIEVAL_FIELDS for p in payloads), payloads
    raw = store_bytes(persistent_store_factory)
    for marker in (AUTHOR, TITLE, SOURCE_DIR):
        assert marker.encode() not in raw
    assert b"MIT licence" in raw  # the chunk text is there: the files were read
    # ... and the hits still show their document, read from the graph.
    assert hits and all(h.title == TITLE and h.date == dt.date(2024, 3, 5)
                        and h.source.endswith("memo.md") for h in hits)


def test_allowed_fields_reach_the_store_and_others_do_not(persistent_store_factory, docs):
    ctx = make_context(persistent_store_factory, payload=["author", "date"])
    ingest_all(docs, ctx=ctx)
    close_store(ctx, persistent_store_factory)
    payloads = stored_payloads(persistent_store_factory)
    assert payloads and all(p["author"] == AUTHOR and p["date"] == "2024-03-05"
                            and "title" not in p and "source" not in p for p in payloads)
    raw = store_bytes(persistent_store_factory)
    assert AUTHOR.encode() in raw and TITLE.encode() not in raw


def test_no_path_writes_a_field_that_is_not_allowed(persistent_store_factory, docs):
    """Ingest, re-ingest of a changed text, a metadata-only update, and repair after the
    allowlist is narrowed: the store's files never hold a value of a field not allowed."""
    factory = persistent_store_factory
    ctx = make_context(factory, payload=["date"])
    ingest_all(docs, ctx=ctx)  # ingest
    (docs / "memo.md").write_text(memo(body="Rails moved to another licence entirely."))
    ingest_all(docs, ctx=ctx)  # a new version
    (docs / "memo.md").write_text(memo(author="Second Zorbulon",
                                       body="Rails moved to another licence entirely."))
    events = ingest_all(docs, ctx=ctx)  # metadata only
    assert events.metadata_updated == 1, events
    report = ctx.verify(repair=True)  # repair with nothing outside
    assert report.payload_outside_allowlist == []
    kg = ctx.kg
    close_store(ctx, factory)
    raw = store_bytes(factory)
    for marker in (AUTHOR, "Second Zorbulon", TITLE, SOURCE_DIR):
        assert marker.encode() not in raw
    assert all(p.get("date") == "2024-03-05" for p in stored_payloads(factory))
    kg.close()


def test_a_metadata_update_removes_fields_the_allowlist_no_longer_allows(
        persistent_store_factory, docs):
    factory = persistent_store_factory
    ctx = make_context(factory, payload=["author", "title"])
    ingest_all(docs, ctx=ctx)
    narrowed = Context(ctx.kg, ctx.vectors, ctx.embedder, payload=["title"])
    (docs / "memo.md").write_text(memo(author="Second Zorbulon"))
    assert ingest_all(docs, ctx=narrowed).metadata_updated == 1
    close_store(ctx, factory)
    payloads = stored_payloads(factory)
    assert payloads and all("author" not in p and p["title"] == TITLE for p in payloads)


def test_verify_reports_and_repair_removes_fields_outside_a_narrowed_allowlist(
        persistent_store_factory, docs):
    factory = persistent_store_factory
    ctx = make_context(factory, payload=["author", "title", "source", "date"])
    ingest_all(docs, ctx=ctx)
    ids = sorted(ctx.vectors.all_ids())
    assert ctx.verify().ok
    assert all(m["author"] == AUTHOR for m in ctx.vectors.metadata(ids).values())
    narrowed = Context(ctx.kg, ctx.vectors, ctx.embedder, payload=["date"])
    report = narrowed.verify()
    assert not report.ok and report.payload_outside_allowlist == ids
    assert "payload outside allowlist: " in report.summary()
    repaired = narrowed.verify(repair=True)
    assert repaired.repaired and repaired.removed == []  # no document lost for it
    assert narrowed.verify().ok
    hits = retrieve("licence", narrowed, mode="hybrid", k=3)
    assert hits and all(h.title == TITLE and h.source.endswith("memo.md") for h in hits)
    close_store(ctx, factory)
    payloads = stored_payloads(factory)
    assert len(payloads) == len(ids)
    assert all(set(p) <= RETRIEVAL_FIELDS | {"date"} and p["date"] == "2024-03-05"
               for p in payloads), payloads
    # Gone from the bytes too, not only from what a reader is shown (SQLite overwrites what
    # it frees: secure_delete).
    raw = store_bytes(factory)
    assert AUTHOR.encode() not in raw and TITLE.encode() not in raw


@pytest.mark.parametrize("mode", ["vector", "hybrid", "graph"])
def test_hits_show_the_same_document_fields_whatever_the_allowlist(
        persistent_store_factory, docs, mode):
    ctx = make_context(persistent_store_factory, payload=["title", "source", "date"])
    ingest_all(docs, ctx=ctx)
    chunks = "SELECT ?c WHERE { ?c a trails:Chunk } ORDER BY ?c"

    def shown(context: Context) -> list[tuple]:
        hits = retrieve("licence", context, mode=mode, k=5,
                        sparql_filter=chunks if mode == "graph" else None)
        return sorted((h.iri, h.title, h.source, h.date) for h in hits)

    from_payload = shown(ctx)
    assert all("title" in m for m in ctx.vectors.metadata(ctx.vectors.all_ids()).values())
    narrowed = Context(ctx.kg, ctx.vectors, ctx.embedder, payload=[])
    narrowed.verify(repair=True)
    assert not any("title" in m for m in ctx.vectors.metadata(ctx.vectors.all_ids()).values())
    assert shown(narrowed) == from_payload
    assert from_payload and all(title == TITLE and date == dt.date(2024, 3, 5)
                                and source.endswith("memo.md")
                                for _, title, source, date in from_payload)


def test_a_store_update_with_none_removes_the_field(store_factory):
    store = store_factory.new(4)
    store.add_many(["c1", "c2"], [[1.0, 0, 0, 0], [0, 1.0, 0, 0]],
                   [{"doc_iri": "d", "title": "T", "author": "A"},
                    {"doc_iri": "d", "title": "T", "author": "A"}])
    assert store.update_payload("d", {"author": None, "title": "U"}) == 2
    assert [v.metadata for v in store.get(["c1", "c2"])] == [
        {"doc_iri": "d", "title": "U"}, {"doc_iri": "d", "title": "U"}]


# -- the setting -----------------------------------------------------------------------------


def test_the_allowlist_is_recorded_and_changed_through_open(tmp_path):
    db = tmp_path / "kb"
    embedder = MockEmbedder(dim=DIM)
    with Context.open(db, embedder=embedder, payload=["title", "author"]) as ctx:
        assert ctx.payload_fields == ("title", "author")
    assert read_config(db).payload == ["title", "author"]
    with Context.open(db) as ctx:
        assert ctx.payload_fields == ("title", "author")
    with Context.open(db, payload=[]) as ctx:
        assert ctx.payload_fields == ()
    assert read_config(db).payload == []
    with Context.open(db, payload=["date"], read_only=True) as ctx:  # a reader records nothing
        assert ctx.payload_fields == ()
    assert read_config(db).payload == []


def test_a_file_from_before_the_setting_keeps_what_its_vectors_hold_and_verifies_clean(tmp_path):
    db = tmp_path / "kb"
    with Context.open(db, embedder=MockEmbedder(dim=DIM)) as fresh:
        assert fresh.payload_fields == ()  # a new context: none
    with Context.open(db, embedder=MockEmbedder(dim=DIM),
                      payload=["source", "title", "date"]) as old:  # what vectors held before
        ingest_all([Document(id="a", source="a.md", text="Some text.", title="A",
                             metadata={"date": "2024-01-02"})], ctx=old)
    raw = json.loads((db / "trails.json").read_text())
    del raw["payload"]  # written by a release without the setting
    (db / "trails.json").write_text(json.dumps(raw))
    with Context.open(db) as ctx:
        assert ctx.payload_fields == ("source", "title", "date")
        assert ctx.verify().ok  # an upgrade finds nothing to repair


@pytest.mark.parametrize("bad", ["text", "iri", "doc_iri", "a.b", "", "has space", "x" * 129,
                                 "metadata.author"])
def test_a_field_that_is_no_plain_metadata_key_is_refused_before_anything_is_written(
        tmp_path, bad):
    db = tmp_path / "kb"
    with pytest.raises(InvalidArgumentError, match="payload"):
        Context.open(db, embedder=MockEmbedder(dim=DIM), payload=[bad])
    assert not db.exists()


@pytest.mark.parametrize("bad", ["title", 3, [1], [None], b"title"])
def test_an_allowlist_of_the_wrong_type_is_refused(bad):
    with pytest.raises(InvalidArgumentTypeError, match="payload"):
        check_payload_fields(bad)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,12}", fullmatch=True), max_size=6))
def test_any_plain_key_list_is_accepted_once_each_in_order(fields):
    kept = [f for f in fields if f not in RETRIEVAL_FIELDS]
    if len(kept) != len(fields):
        with pytest.raises(InvalidArgumentError):
            check_payload_fields(fields)
        return
    assert check_payload_fields(fields) == tuple(dict.fromkeys(fields))


# -- any allowlist, any sequence of changes --------------------------------------------------

KEYS = ["source", "title", "date", "author", "tag"]


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(allowed=st.lists(st.sampled_from(KEYS), unique=True),
       narrowed=st.lists(st.sampled_from(KEYS), unique=True),
       changes=st.lists(st.tuples(st.sampled_from(["author", "tag", "text"]),
                                  st.sampled_from(["Ann", "Bob", None])), max_size=4),
       backend=st.sampled_from(["sqlite-vec", "qdrant"]))
def test_stored_payloads_never_hold_a_field_the_allowlist_in_force_does_not_allow(
        tmp_path_factory, allowed, narrowed, changes, backend):
    """Ingest under one allowlist, narrow or widen it and repair, then apply changes
    (metadata-only updates, new versions, removed keys): after every write each stored
    payload holds retrieval's fields and the allowlist's, nothing else."""
    from trails.vector import QdrantStore
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    folder = tmp_path_factory.mktemp("docs")
    embedder = MockEmbedder(dim=DIM, seed=0)
    store = (SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity)
             if backend == "sqlite-vec" else QdrantStore(dim=DIM, embedder=embedder.identity))
    kg = OxigraphGraph()
    metadata = {"author": "Ann", "tag": "x"}
    body = "Rails is released under the MIT licence."

    def write(payload) -> Context:
        lines = "".join(f"{k}: {v}\n" for k, v in metadata.items())
        (folder / "memo.md").write_text(f"---\ntitle: T\ndate: 2024-03-05\n{lines}---\n{body}\n")
        ctx = Context(kg, store, embedder, payload=payload)
        ingest_all(folder, ctx=ctx)
        return ctx

    def check(payload) -> None:
        stored = store.metadata(store.all_ids())
        assert stored and all(set(m) <= RETRIEVAL_FIELDS | set(payload) for m in stored.values())

    try:
        write(allowed)
        check(allowed)
        report = Context(kg, store, embedder, payload=narrowed).verify(repair=True)
        assert bool(report.payload_outside_allowlist) == bool(set(allowed) - set(narrowed))
        check(narrowed)
        for key, value in changes:  # every write checked on its own, no repair between
            if key == "text":
                body += " More text."
            elif value is None:
                metadata.pop(key, None)
            else:
                metadata[key] = value
            write(narrowed)
            check(narrowed)
    finally:
        store.close()
        kg.close()


def test_hits_of_other_scopes_read_their_document_fields_from_their_own_scope(tmp_path):
    legal, notes = tmp_path / "legal", tmp_path / "notes"
    legal.mkdir(), notes.mkdir()
    (legal / "memo.md").write_text(memo())
    (notes / "memo.md").write_text("---\ntitle: Note title\n---\nRails notes on licences.\n")
    embedder = MockEmbedder(dim=DIM, seed=0)
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    with Context(OxigraphGraph(), SqliteVecStore(":memory:", dim=DIM), embedder) as ctx:
        ingest_all(legal, ctx=ctx, scope="legal")
        ingest_all(notes, ctx=ctx)
        both = retrieve("licence", ctx, mode="vector", k=10, scope=["default", "legal"])
        only_legal = retrieve("licence", ctx, mode="vector", k=10, scope="legal")
    titles = {h.metadata["scope"]: h.title for h in both}
    assert titles == {"legal": TITLE, "default": "Note title"}
    assert {h.title for h in only_legal} == {TITLE}
