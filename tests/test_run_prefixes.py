"""A run named by a short prefix of its id, as git names a commit: ``trails replay 9f3a``,
``trails audit show 9f3a`` and ``ctx.audit.get("9f3a")`` find the one run it starts; a prefix
of several runs or of none is refused, saying which."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.audit.records import run_prefix_of
from trails.cli import app
from trails.context import Context
from trails.errors import InvalidArgumentError, UnknownRunError
from trails.ingest import Document, ingest_all
from trails.retrieval import recording
from trails.testing import MockEmbedder

runner = CliRunner()
DOCS = [Document(id=f"d{i}", source=f"d{i}.md", text=f"Claim {i} on rail safety evidence.")
        for i in range(3)]
# Chosen ids: two runs share "abcd1", a third shares only "abc" with them.
IDS = ["abcd1" + "0" * 27, "abcd1" + "f" * 27, "abc9" + "e" * 28]


@pytest.fixture
def chosen_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(IDS)
    monkeypatch.setattr(recording, "new_run_id", lambda: next(ids))


def make(directory) -> Context:
    ctx = Context.open(directory, embedder=MockEmbedder(dim=32))
    if not ctx.vectors.count():
        ingest_all(DOCS, ctx=ctx)
    return ctx


@pytest.mark.usefixtures("chosen_ids")
def test_a_unique_prefix_names_its_run_before_and_after_the_fold(tmp_path):
    with make(tmp_path / "kb") as ctx:
        runs = [retrieve(q, ctx).run_id for q in ("rail", "safety", "evidence")]
        assert runs == IDS
        # Pending records (not folded yet) are found by prefix.
        assert ctx.audit.get("abc9").run_id == IDS[2]
        assert ctx.audit.get("ABCD1F").run_id == IDS[1]  # case does not matter
        assert ctx.audit.get("urn:trails:run:abcd10").run_id == IDS[0]
    with make(tmp_path / "kb") as ctx:  # folded at close: found in the audit graph
        assert ctx.audit.get("abc9e").run_id == IDS[2]
        assert ctx.audit.get("abcd1f").run_id == IDS[1]
        assert ctx.audit.resolve(IDS[0]) == IDS[0]


@pytest.mark.usefixtures("chosen_ids")
def test_an_ambiguous_or_unknown_prefix_is_refused_saying_which(tmp_path):
    with make(tmp_path / "kb") as ctx:
        for q in ("rail", "safety", "evidence"):
            retrieve(q, ctx)
        for _ in range(2):  # pending, then folded
            with pytest.raises(InvalidArgumentError, match="several runs") as caught:
                ctx.audit.get("abcd")
            assert IDS[0] in str(caught.value) and IDS[1] in str(caught.value)
            assert IDS[2] not in str(caught.value)
            with pytest.raises(UnknownRunError, match="no recorded run starts with '0123'"):
                ctx.audit.get("0123")
            with pytest.raises(InvalidArgumentError, match="at least 4"):
                ctx.audit.get("abc")  # too short to name a run
            ctx.audit.fold()


@pytest.mark.usefixtures("chosen_ids")
def test_the_terminal_takes_a_prefix_for_replay_show_and_feedback(tmp_path):
    db = tmp_path / "kb"
    with make(db) as ctx:
        retrieve("rail safety", ctx)
    shown = runner.invoke(app, ["--db", str(db), "audit", "show", "abcd1", "--json"])
    assert shown.exit_code == 0, shown.output
    assert IDS[0] in shown.output
    replayed = runner.invoke(app, ["--db", str(db), "replay", "abcd"])
    assert replayed.exit_code == 0, replayed.output
    assert IDS[0] in replayed.output
    # The replay is a run of its own (the next chosen id): now "abcd" names two.
    again = runner.invoke(app, ["--db", str(db), "audit", "show", "abcd"])
    assert again.exit_code != 0 and "several runs" in again.output
    rated = runner.invoke(app, ["--db", str(db), "audit", "feedback", "abcd10", "--up"])
    assert rated.exit_code == 0, rated.output
    missing = runner.invoke(app, ["--db", str(db), "replay", "ffff"])
    assert missing.exit_code != 0 and "ffff" in missing.output
    assert "Traceback" not in missing.output


def test_a_prefix_is_hex_digits_only_and_never_pasted_into_sparql():
    assert run_prefix_of("9F3a") == "9f3a"
    assert run_prefix_of("urn:trails:run:0ab1") == "0ab1"
    for not_a_prefix in ("9f3", "a" * 32, "9f3g", "9f3a') } #", "", None, 1234):
        assert run_prefix_of(not_a_prefix) is None
