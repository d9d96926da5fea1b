"""One writing context a PostgreSQL table (``PgVectorStore.hold_writer_lock``, taken by a
writable ``Context.open`` through ``trails.writer_lock.hold_on_servers``): context directories
on other paths or machines share the server, and their writes of versions would interleave
as two processes' on one directory did (ADR 5). Held on a real server; let go by closing, by a
process that dies, never by a forked child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pg_support import pg_server
from trails import retrieve
from trails.context import Context
from trails.errors import ContextLockedError
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder
from trails.vector.stores.pgvector import PgVectorStore

DIM = 8

# Opens a writable context in argv[1] on the table argv[3] of DSN argv[2]; prints what
# happened, then (with argv[4] == "hold") waits to be killed while holding it.
WRITER = textwrap.dedent("""
    import sys, time
    from trails.context import Context
    from trails.errors import ContextLockedError
    from trails.testing import MockEmbedder
    from trails.vector.stores.pgvector import PgVectorStore
    store = PgVectorStore(sys.argv[2], table=sys.argv[3], dim=8)
    try:
        ctx = Context.open(sys.argv[1], embedder=MockEmbedder(dim=8), vectors=store)
    except ContextLockedError as exc:
        print("locked:", exc, flush=True)
        sys.exit(0)
    print("opened", flush=True)
    if sys.argv[4:] == ["hold"]:
        time.sleep(600)
    ctx.close()
""")


@pytest.fixture
def dsn():
    return pg_server().new_schema()  # the process's shared server, a schema of its own


def other_directory(tmp_path, dsn: str, table: str = "trails") -> str:
    run = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path / "elsewhere"), dsn, table],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout


def open_writable(directory, dsn: str, table: str = "trails") -> Context:
    return Context.open(directory, embedder=MockEmbedder(dim=DIM),
                        vectors=PgVectorStore(dsn, table=table, dim=DIM))


def test_two_directories_on_one_table_write_one_at_a_time(tmp_path, dsn):
    with open_writable(tmp_path / "here", dsn) as ctx:
        ingest_all([Document(id="d", source="d.md", text="harbour cranes at night")], ctx=ctx)
        out = other_directory(tmp_path, dsn)
        assert out.startswith("locked:") and "'trails'" in out and "read_only=True" in out, out
        store = PgVectorStore(dsn, dim=DIM)
        with pytest.raises(ContextLockedError, match="another context"):
            Context.open(tmp_path / "third", embedder=MockEmbedder(dim=DIM), vectors=store)
        store.close()
        with Context.open(tmp_path / "here", read_only=True) as reader:  # readers go on
            assert [h.document for h in retrieve("harbour", reader, k=3)]
        assert retrieve("harbour", ctx, k=3)  # the refused opens closed nothing of this one
    assert other_directory(tmp_path, dsn).startswith("opened")


def test_another_table_of_the_same_database_is_another_lock(tmp_path, dsn):
    with open_writable(tmp_path / "here", dsn):
        assert other_directory(tmp_path, dsn, table="other").startswith("opened")


def test_a_writer_that_dies_lets_the_table_go(tmp_path, dsn):
    holder = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "killed"), dsn,
                               "trails", "hold"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("opened")
        assert other_directory(tmp_path, dsn).startswith("locked:")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    # The server ends a dead client's session when it reads the closed socket: soon, not
    # necessarily before the next open.
    deadline = time.monotonic() + 30
    while (out := other_directory(tmp_path, dsn)).startswith("locked:"):
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    assert out.startswith("opened")


def test_a_forked_child_ending_does_not_end_the_parents_lock(tmp_path, dsn):
    with open_writable(tmp_path / "here", dsn) as ctx:
        child = os.fork()
        if child == 0:  # the child lets go of what it inherited, then leaves
            code = 0
            try:
                ctx._held and ctx._held.close()
            except BaseException:  # noqa: BLE001 - the exit status tells the parent
                code = 1
            os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert other_directory(tmp_path, dsn).startswith("locked:")
        ingest_all([Document(id="d", source="d.md", text="still writing")], ctx=ctx)  # its session lives
    assert other_directory(tmp_path, dsn).startswith("opened")


def test_a_writer_whose_lock_session_ended_writes_nothing_more(tmp_path, dsn):
    """A server restart or a cut connection ends the lock's session while the context stays
    open (its pool reconnects): its next write must not land beside another context's."""
    import psycopg

    with open_writable(tmp_path / "here", dsn) as ctx:
        ingest_all([Document(id="d", source="d.md", text="first words")], ctx=ctx)
        with psycopg.connect(dsn, autocommit=True) as admin:
            ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE "
                                  "locktype = 'advisory' AND classid = 1953655923").fetchall()
        assert ended == [(True,)]
        assert other_directory(tmp_path, dsn).startswith("opened")  # the table is free now
        before = ctx.vectors.count()
        with pytest.raises(ContextLockedError, match="was lost"):
            ctx.vectors.add_many(["late"], [[1.0] * DIM], [{"doc_iri": "x"}])
        with pytest.raises(ContextLockedError, match="was lost"):
            ingest_all([Document(id="e", source="e.md", text="later words")], ctx=ctx)
        assert ctx.vectors.count() == before


def test_a_forked_child_does_not_keep_a_dead_parents_table(tmp_path, dsn):
    parent = textwrap.dedent("""
        import os, sys, time
        from trails.context import Context
        from trails.testing import MockEmbedder
        from trails.vector.stores.pgvector import PgVectorStore
        ctx = Context.open(sys.argv[1], embedder=MockEmbedder(dim=8),
                           vectors=PgVectorStore(sys.argv[2], dim=8))
        if os.fork() == 0:
            time.sleep(120)  # a worker that outlives its parent
            os._exit(0)
        print("opened", flush=True)
        time.sleep(600)
    """)
    holder = subprocess.Popen([sys.executable, "-c", parent, str(tmp_path / "parent"), dsn],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("opened")
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        deadline = time.monotonic() + 30  # the child sleeps far longer
        while (out := other_directory(tmp_path, dsn)).startswith("locked:"):
            assert time.monotonic() < deadline, out
            time.sleep(0.2)
    finally:
        os.killpg(holder.pid, signal.SIGKILL)  # the child too


def test_a_writable_context_over_a_read_only_store_holds_no_table(tmp_path, dsn):
    open_writable(tmp_path / "made", dsn).close()
    store = PgVectorStore(dsn, dim=DIM, read_only=True)
    with Context.open(tmp_path / "reader", embedder=MockEmbedder(dim=DIM), vectors=store):
        assert other_directory(tmp_path, dsn).startswith("opened")
    store.close()
