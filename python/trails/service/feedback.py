"""Feedback on a recorded run over HTTP (``/runs/{run}/feedback``): a key reaches only the
runs whose scopes it may read; any other run is answered as absent, as an unknown one is."""

from __future__ import annotations

from typing import Any

from trails.audit import ActivityRecord, FeedbackRecord
from trails.audit.records import run_prefix_of
from trails.context import Context
from trails.errors import InvalidArgumentError, UnknownRunError
from trails.service.keys import ApiKey

__all__ = ["give_feedback", "listed_feedback"]


def _visible_run(ctx: Context, key: ApiKey, run: str) -> ActivityRecord:
    """The recorded run ``run`` if ``key`` may read every scope it read.

    Raises:
        InvalidArgumentError: ``run`` is no run id, or (for a key without every scope) only
            the start of one.
        UnknownRunError: no such run, or one of scopes the key does not grant (a run with no
            scopes read every graph: only a key with every scope reaches it), in the same
            words.
    """
    absent = UnknownRunError(
        f"no recorded run {run!r} in the scopes this key grants; the run ids are the "
        "'run_id' of /retrieve answers")
    if key.scopes is not None and run_prefix_of(run) is not None:
        # A prefix is resolved among every scope's runs: whether it names one, several (and
        # which) or none would tell a scoped key about runs it may not see.
        raise InvalidArgumentError(
            f"{run[:80]!r} is only the start of a run id; give the whole id (32 hexadecimal "
            "digits), the 'run_id' of a /retrieve answer")
    try:
        record = ctx.audit.get(run)
    except UnknownRunError:
        raise absent from None  # the words of another scope's run, below
    scopes = set(getattr(record, "scopes", []))
    if key.scopes is not None and not (scopes and scopes <= key.scopes):
        raise absent  # another scope's run: its existence is not the caller's to know
    return record


def give_feedback(ctx: Context, key: ApiKey, run: str, rating: str,
                  note: str | None) -> dict[str, Any]:
    """Record the key's feedback on ``run`` (its label is the caller); the record as JSON."""
    key.require("read")
    rated = _visible_run(ctx, key, run)
    return ctx.audit.feedback(rated.run_id, rating, note=note, caller=key.label).to_json()


def listed_feedback(ctx: Context, key: ApiKey, run: str) -> dict[str, Any]:
    """The run's id and the feedback recorded on it, newest first."""
    key.require("read")
    rated = _visible_run(ctx, key, run)
    given: list[FeedbackRecord] = ctx.audit.feedback_on(rated.run_id)
    return {"run": rated.run_id, "feedback": [f.to_json() for f in given]}
