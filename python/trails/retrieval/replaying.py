"""The record a search replays (retrieval/replay.py), while it runs: the new record points
at it, and the search runs as the recorded one ran (an empty query recorded before ADR 52
refused one is run again, not refused)."""

from __future__ import annotations

import contextvars

__all__ = ["REPLAYING"]

REPLAYING: contextvars.ContextVar[str | None] = contextvars.ContextVar("replaying", default=None)
