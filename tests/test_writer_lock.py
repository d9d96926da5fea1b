"""A context directory's writer lock (``trails/writer_lock.py``): held by a writable open, let
go however the context ends (closed, collected, a forked child's copy), and never a reason a
directory that cannot hold it stops opening. The lock against a second writing process on a
context on servers is in tests/test_context_backends.py."""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import textwrap

import portalocker
import pytest
from typer.testing import CliRunner

from trails import writer_lock
from trails.cli import app
from trails.context import Context
from trails.errors import ContextLockedError
from trails.testing import MockEmbedder

OTHER_PROCESS = textwrap.dedent("""
    import sys
    from pathlib import Path
    from trails.errors import ContextLockedError
    from trails.writer_lock import hold_for_writing
    try:
        hold_for_writing(Path(sys.argv[1])).close()
        print("held")
    except ContextLockedError:
        print("locked")
""")


def other_process_can_hold(directory) -> bool:
    run = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(directory)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip() == "held"


def test_a_context_collected_without_being_closed_lets_its_directory_go(tmp_path):
    def forgotten() -> None:
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8))  # never closed

    forgotten()
    gc.collect()
    assert other_process_can_hold(tmp_path / "kb")
    Context.open(tmp_path / "kb").close()


def test_a_second_holder_is_told_which_process_holds_it(tmp_path):
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None
    with pytest.raises(ContextLockedError, match="in this process"):
        writer_lock.hold_for_writing(tmp_path / ".")
    assert not other_process_can_hold(tmp_path)
    held.close()
    held.close()  # twice is fine
    assert other_process_can_hold(tmp_path)


def test_a_forked_child_does_not_keep_the_parents_lock(tmp_path):
    """A child forked while the lock is held (multiprocessing's default on Linux) lets go of
    its copy at once: the lock ends when the parent closes, not when the child exits."""
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None
    exit_now, child_ready = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: says it is there, waits to be told to go, does nothing else
        os.write(child_ready[1], b"x")
        os.read(exit_now[0], 1)
        os._exit(0)
    try:
        assert os.read(child_ready[0], 1) == b"x"
        held.close()
        assert other_process_can_hold(tmp_path)
    finally:
        os.write(exit_now[1], b"x")
        os.waitpid(pid, 0)


def test_a_directory_that_cannot_hold_the_lock_opens_as_before_with_a_warning(
        tmp_path, monkeypatch, caplog):
    """A lock file that cannot be created or opened (a read-only mount, another user's file)
    where the directory cannot be locked either, or a file system without locks: the
    writable open goes on, as before the lock."""
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()

    def read_only_mount(path: str) -> int:
        raise OSError(30, "Read-only file system")

    def no_locks(*args: object) -> None:
        raise portalocker.exceptions.LockException("No locks available")

    for name, failure in (("_open", read_only_mount), ("portalocker.lock", no_locks)):
        with monkeypatch.context() as patch:
            if name == "_open":
                patch.setattr(writer_lock, "_open", failure)
                patch.setattr(writer_lock, "_lock_folder", lambda key: -1)
            else:
                patch.setattr(writer_lock.portalocker, "lock", failure)
            with caplog.at_level(logging.WARNING, logger="trails"):
                Context.open(tmp_path / "kb").close()
        assert "cannot hold its writer lock" in caplog.text
        caplog.clear()


def test_init_takes_a_directory_left_with_only_the_lock_file(tmp_path):
    """A creation that failed after the lock was taken leaves the lock file behind: the
    directory is still empty for `trails init`."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / writer_lock.LOCK_FILE).touch()
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "kb"), "init", "--model", "mock:32"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "kb" / "trails.json").exists()


def test_ctrl_c_while_closing_still_lets_the_directory_and_its_graph_go(tmp_path, monkeypatch):
    """Closing folds the audit trail first; a Ctrl-C there must not leave the stores and the
    locks held for the rest of the process (the next open would be refused)."""
    ctx = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8))

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ctx.audit, "close", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ctx.close()
    monkeypatch.undo()
    assert other_process_can_hold(tmp_path / "kb")
    Context.open(tmp_path / "kb").close()


def test_deleting_the_lock_file_under_a_writer_lets_no_second_writer_in(tmp_path):
    """The lock belongs to the open file: a second process used to create a new
    trails-writer.lock where the writer's had been deleted, lock it, and write beside it."""
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None
    (tmp_path / writer_lock.LOCK_FILE).unlink()
    assert not other_process_can_hold(tmp_path)  # refused, though the file it made is free
    assert (tmp_path / writer_lock.LOCK_FILE).exists()
    held.close()
    assert other_process_can_hold(tmp_path)


def test_deleting_the_lock_file_under_an_open_context_lets_no_second_writer_in(tmp_path):
    """On servers (a SPARQL endpoint, no graph lock of its own) the directory's lock is all
    that keeps a second writing process out; asked of the lock itself here."""
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)):
        (tmp_path / "kb" / writer_lock.LOCK_FILE).unlink()
        assert not other_process_can_hold(tmp_path / "kb")
    assert other_process_can_hold(tmp_path / "kb")


def test_where_a_directory_cannot_be_opened_the_file_alone_is_the_lock(tmp_path, monkeypatch):
    """Windows opens no directory: the file's lock is taken, held and let go as before."""
    opened = os.open

    def no_directories(path, flags, *args, **kwargs):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_directories)
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None and held._folder == -1
    assert not other_process_can_hold(tmp_path)
    held.close()
    assert other_process_can_hold(tmp_path)


def test_a_forked_child_lets_go_of_the_directory_too(tmp_path):
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None
    pid = os.fork()
    if pid == 0:  # the child: its copies closed at the fork, it waits for nothing
        os._exit(0 if held._folder == -1 and held._descriptor == -1 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    (tmp_path / writer_lock.LOCK_FILE).unlink()
    assert not other_process_can_hold(tmp_path)  # the parent's still holds
    held.close()
    assert other_process_can_hold(tmp_path)


UNREADABLE_LOCK_FILE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from trails import writer_lock
    from trails.errors import ContextLockedError

    def unreadable(path):
        raise PermissionError(13, "Permission denied", path)

    writer_lock._open = unreadable  # another account's trails-writer.lock, mode 0600
    try:
        held = writer_lock.hold_for_writing(Path(sys.argv[1]))
        print("unlocked" if held is None else "held")
    except ContextLockedError:
        print("locked")
""")


def test_a_lock_file_that_cannot_be_opened_still_meets_the_writers_directory_lock(tmp_path):
    """A trails-writer.lock another account made with mode 0600 (umask 077) cannot be opened
    by a second account sharing the directory: it opened with no lock at all, a second writer
    beside the first, though the directory's own lock was there to refuse it."""
    held = writer_lock.hold_for_writing(tmp_path)
    assert held is not None
    run = subprocess.run([sys.executable, "-c", UNREADABLE_LOCK_FILE, str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "locked"
    held.close()
    run = subprocess.run([sys.executable, "-c", UNREADABLE_LOCK_FILE, str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.stdout.strip() == "held"  # the directory's lock alone, once it is free


def test_a_forked_child_cannot_write_through_the_parents_context(tmp_path):
    """A child forked from a writing process (a multiprocessing pool of the fork kind) wrote
    through the parent's open graph: its writes went into the parent's RocksDB files beside
    the parent's own, its close hung (the store's background threads stay in the parent),
    and the parent's next flush failed on a log file the child had replaced. The child is
    now refused, says how to write from a child, and closes without touching the store.

    The parent is a process of its own: forked from a test runner's worker, whose other
    threads may hold a lock at the fork, the child could hang for reasons of the runner."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from trails.context import Context
        from trails.errors import ContextLockedError
        from trails.ingest import Document, ingest_all
        from trails.testing import MockEmbedder

        read, write = os.pipe()
        ctx = Context.open({str(tmp_path / "kb")!r}, embedder=MockEmbedder(dim=8))
        ingest_all([Document("a", "m", "Alpha text.")], ctx=ctx)
        pid = os.fork()
        if pid == 0:
            outcome = b"wrote"
            try:
                ingest_all([Document("b", "m", "Beta text.")], ctx=ctx)
            except ContextLockedError as exc:
                outcome = b"refused" if b"forked" in str(exc).encode() else b"other"
            except BaseException:
                outcome = b"failed"
            try:
                ctx.kg.update('INSERT DATA {{ <https://x/a> <https://x/p> "v" }}')
                outcome += b" updated"
            except ContextLockedError:
                pass
            except BaseException as exc:
                outcome += f" update failed: {{exc!r}}".encode()
            try:  # closing the parent's store here aborted the child
                ctx.close()
            except BaseException as exc:
                outcome += f" close failed: {{exc!r}}".encode()
            finally:
                os.write(write, outcome)
                os._exit(0)
        os.close(write)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not os.waitpid(pid, os.WNOHANG)[0]:
            time.sleep(0.05)
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print(os.read(read, 200).decode())
        ingest_all([Document("c", "m", "Gamma text.")], ctx=ctx)
        ctx.close()
    """)
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              p for p in sys.path if p)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused", done.stdout
    from trails.ingest.maintenance import verify

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), read_only=True) as again:
        documents = again.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
        assert sorted(map(str, documents)) == ["trails://local/doc/a", "trails://local/doc/c"]
        assert verify(again).ok


def test_a_forked_child_cannot_write_through_a_context_on_a_server(tmp_path):
    """The refusal of a forked child's write hung on the embedded graph, which knows the
    process that opened it: with the graph on a server (`oxigraph serve`), the child wrote
    through its parent's context beside the parent, whose writes of versions (ADR 5) it
    could interleave. Whatever the backend, the context's writer lock knows."""
    from trails.testing.servers.oxigraph import OxigraphServer

    with OxigraphServer(tmp_path / "server") as server:
        script = textwrap.dedent(f"""
            import os, sys
            from trails.context import Context
            from trails.errors import ContextLockedError
            from trails.ingest import Document, ingest_all
            from trails.kg.remote import SparqlEndpointGraph
            from trails.testing import MockEmbedder

            kg = SparqlEndpointGraph({server.query_url!r}, update_url={server.update_url!r})
            ctx = Context.open({str(tmp_path / "kb")!r}, embedder=MockEmbedder(dim=8), kg=kg)
            ingest_all([Document("a", "m", "Alpha text.")], ctx=ctx)
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                outcome = b"wrote"
                try:
                    ingest_all([Document("b", "m", "Beta text.")], ctx=ctx)
                except ContextLockedError as exc:
                    outcome = b"refused" if b"forked child" in str(exc).encode() else b"other"
                except BaseException as exc:
                    outcome = f"failed: {{exc!r}}".encode()
                os.write(write, outcome)
                os._exit(0)
            os.close(write)
            os.waitpid(pid, 0)
            print(os.read(read, 300).decode())
            ingest_all([Document("c", "m", "Gamma text.")], ctx=ctx)
            print(sorted(str(d) for d in ctx.kg.query(
                "SELECT ?d WHERE {{ ?d a trails:Document }}").column("d")))
            ctx.close()
        """)
        done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  p for p in sys.path if p)})
    assert done.returncode == 0, done.stderr
    outcome, documents = done.stdout.strip().splitlines()
    assert outcome == "refused"
    assert documents == "['trails://local/doc/a', 'trails://local/doc/c']"
