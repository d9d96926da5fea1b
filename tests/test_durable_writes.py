"""trails.json and a new audit log file survive a power loss: the data synced before the
rename, the directory synced after it (a rename or a new file's name not yet in its
directory on the disk is lost with the power), and an interrupted write leaves the old file.

A power loss cannot be staged here, so the tests record the order of the calls that make a
write durable (os.fsync on the file, os.replace, os.fsync on the directory), and interrupt a
write between its steps."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from trails import config as config_module
from trails import durable
from trails.audit.log import AuditLog
from trails.audit.records import DeletionRecord, started_now
from trails.config import CONFIG_FILE, ContextConfig, EmbedderConfig, read_config, write_config
from trails.errors import StorageError
from trails.vector.embedders.base import EmbedderIdentity


def config(base_iri: str) -> ContextConfig:
    identity = EmbedderIdentity(model="mock", dim=8)
    return ContextConfig(base_iri=base_iri, embedder=EmbedderConfig(backend="mock",
                                                                    identity=identity))


@pytest.fixture
def calls(monkeypatch):
    """Each fsync (``("fsync", "file"|"dir", path)``) and rename (``("replace", target)``),
    in order."""
    seen: list[tuple[str, ...]] = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(descriptor: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(descriptor).st_mode) else "file"
        seen.append(("fsync", kind, os.readlink(f"/proc/self/fd/{descriptor}")
                     if os.path.exists("/proc/self/fd") else ""))
        fsync(descriptor)

    def recording_replace(source, target, *args, **kwargs) -> None:
        seen.append(("replace", str(target)))
        replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    return seen


def test_trails_json_is_synced_before_its_rename_and_its_directory_after(tmp_path, calls):
    write_config(tmp_path, config("https://a.example/"))
    kinds = [call[:2] if call[0] == "fsync" else call[:1] for call in calls]
    assert kinds == [("fsync", "file"), ("replace",), ("fsync", "dir")]
    assert calls[1] == ("replace", str(tmp_path / CONFIG_FILE))
    if calls[2][2]:
        assert calls[2][2] == str(tmp_path)
    assert read_config(tmp_path).base_iri == "https://a.example/"


def test_a_directory_that_cannot_be_opened_skips_only_its_own_sync(tmp_path, calls,
                                                                     monkeypatch):
    """Windows opens no directory: the file is still synced and renamed."""
    opened = os.open

    def no_directories(path, flags, *args, **kwargs):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_directories)
    write_config(tmp_path, config("https://a.example/"))
    assert [call[:2] if call[0] == "fsync" else call[:1] for call in calls] == [
        ("fsync", "file"), ("replace",)]
    assert read_config(tmp_path).base_iri == "https://a.example/"


def test_a_disk_failing_the_directory_sync_is_a_storage_error(tmp_path, monkeypatch):
    fsync = os.fsync

    def failing_on_directories(descriptor: int) -> None:
        if stat.S_ISDIR(os.fstat(descriptor).st_mode):
            raise OSError(5, "Input/output error")
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", failing_on_directories)
    with pytest.raises(StorageError, match=CONFIG_FILE):
        write_config(tmp_path, config("https://a.example/"))


@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_write_interrupted_before_its_rename_leaves_the_old_file(tmp_path, monkeypatch, step):
    write_config(tmp_path, config("https://old.example/"))
    before = (tmp_path / CONFIG_FILE).read_bytes()

    class Killed(BaseException):
        """What a KeyboardInterrupt or a kill between the steps stands for."""

    def killed(*args, **kwargs):
        raise Killed

    if step == "write":
        monkeypatch.setattr(os, "fdopen", killed)
    else:
        monkeypatch.setattr(os, step, killed)
    with pytest.raises(Killed):
        write_config(tmp_path, config("https://new.example/"))
    assert (tmp_path / CONFIG_FILE).read_bytes() == before
    assert json.loads(before)["base_iri"] == "https://old.example/"
    assert sorted(p.name for p in tmp_path.iterdir()) == [CONFIG_FILE]  # no temporary left


def test_a_process_killed_between_the_temporary_file_and_the_rename_leaves_the_old_file(
        tmp_path):
    """A real kill: the child writes and syncs the temporary file, then dies before renaming."""
    write_config(tmp_path, config("https://old.example/"))
    before = (tmp_path / CONFIG_FILE).read_bytes()
    pid = os.fork()
    if pid == 0:  # the child: dies at the rename
        try:
            os.replace = lambda *args, **kwargs: os._exit(9)  # type: ignore[assignment]
            config_module.write_config(tmp_path, config("https://new.example/"))
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9
    assert (tmp_path / CONFIG_FILE).read_bytes() == before
    assert read_config(tmp_path).base_iri == "https://old.example/"


def test_replace_file_leaves_no_temporary_when_the_target_cannot_be_replaced(tmp_path):
    target = tmp_path / "folder"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        durable.replace_file(target, b"data", tmp_path / "folder.tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("bits", [0o600, 0o640, 0o664])
def test_rewriting_trails_json_keeps_the_mode_set_on_it_by_hand(tmp_path, bits):
    # A chmod 600 made to keep the configuration private was undone by the next write
    # (a linker's settings remembered, an embedder recorded), which made a new file.
    write_config(tmp_path, config("https://a.example/"))
    os.chmod(tmp_path / CONFIG_FILE, bits)
    old = os.umask(0o022)  # the usual one, which would take the group's write bit off 664
    try:
        write_config(tmp_path, config("https://b.example/"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / CONFIG_FILE).st_mode) == bits
    assert read_config(tmp_path).base_iri == "https://b.example/"
    assert sorted(p.name for p in tmp_path.iterdir()) == [CONFIG_FILE]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_new_file_gets_the_mode_asked_less_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        durable.replace_file(tmp_path / "new", b"data", tmp_path / "new.tmp", 0o666)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o640


def deletion() -> DeletionRecord:
    now = started_now()
    return DeletionRecord(run_id="1" * 32, caller="test", started=now, ended=now,
                          reason="asked", documents=["trails://local/doc/a"])


def test_a_synced_record_in_a_new_log_file_syncs_its_folder_after_the_file(tmp_path, calls):
    folder = tmp_path / "audit"
    log = AuditLog(folder)
    log.append(deletion(), sync=True)
    kinds = [call[:2] for call in calls]
    # The record, then the new file's name (the audit folder) and the folder's own (its parent).
    assert kinds == [("fsync", "file"), ("fsync", "dir"), ("fsync", "dir")]
    if calls[1][2]:
        assert {calls[1][2], calls[2][2]} == {str(tmp_path), str(folder)}
    calls.clear()
    log.append(deletion(), sync=True)  # the same file: its name is on the disk already
    assert [call[:2] for call in calls] == [("fsync", "file")]
    log.close()


def test_a_log_file_made_again_after_a_fold_syncs_its_folder_again(tmp_path, calls):
    folder = tmp_path / "audit"
    log = AuditLog(folder)
    log.append(deletion(), sync=True)
    with log.folding("aside.jsonl") as records:
        assert len(records) == 1
    calls.clear()
    log.append(deletion(), sync=True)  # the fold took the file: a new one
    assert [call[:2] for call in calls] == [("fsync", "file"), ("fsync", "dir")]
    assert len(log.pending()) == 1
    log.close()


def test_a_fold_syncs_the_aside_file_and_its_name_before_deleting_the_log(tmp_path, calls,
                                                                           monkeypatch):
    folder = tmp_path / "audit"
    log = AuditLog(folder)
    log.append(deletion())
    with open(next(folder.iterdir()), "ab") as file:
        file.write(b"{torn\n")
    unlink = Path.unlink

    def recording_unlink(self: Path, *args, **kwargs) -> None:
        calls.append(("unlink",))
        unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", recording_unlink)
    calls.clear()
    with log.folding("aside.jsonl") as records:
        assert len(records) == 1
    assert [call[:2] for call in calls] == [("fsync", "file"), ("fsync", "dir"), ("unlink",)]
    assert (folder / "aside.jsonl").read_bytes() == b"{torn\n"
    log.close()


def test_a_record_kept_aside_during_a_fold_is_synced_before_the_log_is_deleted(tmp_path, calls,
                                                                               monkeypatch):
    """A record the fold cannot put into the graph is kept in rejected.txt (keep_aside) while
    the fold runs; the fold then deletes the log file that held it. Unsynced, a power loss
    after the deletion reached the disk lost the record from both."""
    folder = tmp_path / "audit"
    log = AuditLog(folder)
    record = deletion()
    log.append(record)
    unlink = Path.unlink

    def recording_unlink(self: Path, *args, **kwargs) -> None:
        calls.append(("unlink",))
        unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", recording_unlink)
    calls.clear()
    with log.folding("aside.jsonl") as records:
        log.keep_aside(records[0], "rejected.txt")  # as the trail does with a rejected one
    assert [call[:2] for call in calls] == [("fsync", "file"), ("fsync", "dir"), ("unlink",)]
    if calls[0][2]:
        assert calls[0][2] == str(folder / "rejected.txt")
    assert json.loads((folder / "rejected.txt").read_text())["run_id"] == record.run_id
    log.close()
