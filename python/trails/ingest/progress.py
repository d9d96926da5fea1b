"""Progress that tells the truth: documents done of a total known before work starts, chunks
per second, and the time left, for the terminal (``trails ingest``) and for notebooks.

:class:`ProgressTracker` turns ingest events into :class:`ProgressSnapshot` numbers; the
displays only draw them. :func:`ingest_with_progress` is the notebook-friendly way to ingest:
in a Jupyter kernel it draws an HTML bar that updates in place (``IPython.display`` with a
display handle, no widget library), elsewhere it writes a line now and then to stderr.

>>> tracker = ProgressTracker(total=4)
>>> tracker.snapshot(now=tracker.started + 2.0).text()
'0/4 documents, 0 chunks embedded, 0.0 chunks/s'
"""

from __future__ import annotations

import html
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from trails._lazy import require
from trails.errors import InvalidArgumentError
from trails.ingest.events import (
    BatchEmbedded,
    DocumentFailed,
    DocumentIngested,
    DocumentMetadataUpdated,
    DocumentSkipped,
    EmbeddingFailed,
    IngestEvent,
    IngestionStats,
)
from trails.ingest.loaders import FileLoader, Source
from trails.ingest.pipeline import ingest

__all__ = [
    "ProgressSnapshot",
    "ProgressTracker",
    "count_documents",
    "html_bar",
    "ingest_with_progress",
]

# Seconds of recent finishes the rate is measured over (ProgressTracker's default window).
WINDOW = 30.0


@dataclass(frozen=True)
class ProgressSnapshot:
    """The state of an ingest run at one moment.

    Attributes:
        total: the documents the run will see (None when unknown: a stream).
        done: documents finished: committed, skipped as unchanged, updated, or failed.
        chunks: chunks embedded so far.
        elapsed: seconds since the run started.
        rate: documents finished per second over the tracker's recent window (None when
            not known: then the rate since the start is used).
        since_finished: seconds since the last document finished.
    """

    total: int | None
    done: int
    chunks: int
    elapsed: float
    rate: float | None = None
    since_finished: float = 0.0

    @property
    def fraction(self) -> float | None:
        """How much of the run is done, from 0 to 1 (None without a total)."""
        if self.total is None:
            return None
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)

    @property
    def chunks_per_second(self) -> float:
        """Chunks embedded per second since the start (0 before any time has passed)."""
        return self.chunks / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left: the documents to go at :attr:`rate`, counted down since the last one
        finished (None until one has, or without a total).

        Documents finish in bursts (a commit reports several at once): an estimate from the
        documents done at each moment would fall at every burst and climb between them. Timed
        from the last finish instead, it only counts down between bursts, and a steady run's
        bursts land where the countdown already was.
        """
        if self.total is None or self.done <= 0 or self.elapsed <= 0:
            return None
        rate = self.rate if self.rate else self.done / self.elapsed
        return max(0.0, max(0, self.total - self.done) / rate - self.since_finished)

    def text(self) -> str:
        """One line: ``12/40 documents, 230 chunks embedded, 45.1 chunks/s, 0:00:08 left``."""
        of = "" if self.total is None else f"/{self.total}"
        line = (f"{self.done}{of} documents, {self.chunks} chunks embedded, "
                f"{self.chunks_per_second:.1f} chunks/s")
        eta = self.eta
        return line if eta is None else f"{line}, {_clock(eta)} left"


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class ProgressTracker:
    """Counts an ingest run's events against the total expected.

    Args:
        total: documents the run will see (:func:`count_documents`), None for a stream.
        clock: where time comes from (seconds, monotonic).
        window: seconds of recent finishes the rate is measured over: long enough to smooth
            the bursts of a commit, short enough to follow a run that speeds up or slows.
    """

    def __init__(self, total: int | None, clock: Callable[[], float] = time.perf_counter,
                 window: float = WINDOW) -> None:
        self.total = total
        self.clock = clock
        self.window = window
        self.started = clock()
        self.done = 0
        self.chunks = 0
        # (moment, done) at each finish; the first is the window's start (the run's at first).
        self._finishes: deque[tuple[float, int]] = deque([(self.started, 0)])

    def record(self, event: IngestEvent) -> None:
        """Count ``event``: a document finished (in any way) or a batch of chunks embedded."""
        before = self.done
        if isinstance(event, (DocumentIngested, DocumentSkipped, DocumentMetadataUpdated,
                              DocumentFailed)):
            self.done += 1
        elif isinstance(event, EmbeddingFailed):
            self.done += len(event.doc_iris)
        elif isinstance(event, BatchEmbedded):
            self.chunks += event.chunks
        if self.total is not None and self.done > self.total:
            self.total = self.done  # the files changed since they were counted
        if self.done != before:
            self._finished(self.clock())

    def _finished(self, moment: float) -> None:
        finishes = self._finishes
        if finishes[-1][0] == moment:  # a burst: one sample for all its documents
            finishes.pop()
        finishes.append((moment, self.done))
        # The window starts at the last finish at least ``window`` seconds back.
        while len(finishes) > 2 and finishes[1][0] <= moment - self.window:
            finishes.popleft()

    def snapshot(self, now: float | None = None) -> ProgressSnapshot:
        """The numbers at ``now`` (default: the tracker's clock now)."""
        moment = self.clock() if now is None else now
        (first, done_then), (last, done_now) = self._finishes[0], self._finishes[-1]
        rate = (done_now - done_then) / (last - first) if last > first else None
        return ProgressSnapshot(self.total, self.done, self.chunks,
                                max(0.0, moment - self.started), rate,
                                max(0.0, moment - last))


def count_documents(source: Source, **loader_options: Any) -> int | None:
    """The documents :func:`trails.ingest.ingest` will see for ``source``, counted before any
    work: a walk of the files for paths (``FileLoader.count``), the length of a list; None
    for anything read as a stream (counting would consume it)."""
    if isinstance(source, (list, tuple)) and not all(isinstance(s, str) or hasattr(s, "__fspath__")
                                                     for s in source):
        return len(source)
    if isinstance(source, (str, list, tuple)) or hasattr(source, "__fspath__"):
        return FileLoader(source, **loader_options).count()  # type: ignore[arg-type]
    return None


def html_bar(snapshot: ProgressSnapshot, title: str = "ingest", note: str = "") -> str:
    """The snapshot as a self-contained HTML progress bar (inline styles, no script), with
    ``note`` (why the run ended early) as a line under it."""
    fraction = snapshot.fraction
    width = 100.0 if fraction is None else fraction * 100
    stripes = ("background:repeating-linear-gradient(45deg,#4c9be8 0 8px,#7db7ef 8px 16px)"
               if fraction is None else "background:#4c9be8")
    percent = "" if fraction is None else f"{fraction * 100:.0f}% · "
    return (f'<div class="trails-progress" role="progressbar" aria-valuemin="0" '
            f'aria-valuemax="{snapshot.total if snapshot.total is not None else ""}" '
            f'aria-valuenow="{snapshot.done}" style="font-family:sans-serif;font-size:13px">'
            f'<div>{html.escape(title)}: {percent}{html.escape(snapshot.text())}</div>'
            f'<div style="width:100%;max-width:480px;height:10px;background:#e6e6e6;'
            f'border-radius:5px;overflow:hidden"><div class="trails-progress-fill" '
            f'style="width:{width:.1f}%;height:100%;{stripes}"></div></div>'
            + (f'<div class="trails-progress-note">{html.escape(note)}</div>' if note else "")
            + '</div>')


class _NotebookDisplay:
    """An HTML bar in a notebook output, replaced in place through a display handle."""

    def __init__(self, title: str) -> None:
        display = require("IPython.display", "the notebook progress bar")
        self.html = display.HTML
        self.title = title
        self.handle = display.display(display.HTML(""), display_id=True)

    def show(self, snapshot: ProgressSnapshot, note: str = "") -> None:
        self.handle.update(self.html(html_bar(snapshot, self.title, note)))


class _PlainDisplay:
    """A line on a text stream (stderr by default) for each update."""

    def __init__(self, title: str, stream: IO[str] | None) -> None:
        self.title = title
        self.stream = stream

    def show(self, snapshot: ProgressSnapshot, note: str = "") -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"{self.title}: {snapshot.text()}", file=stream, flush=True)
        if note:
            print(f"{self.title}: {note}", file=stream, flush=True)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython imported, and a kernel running it).

    A kernel imports IPython before any cell runs: where it is not imported, no kernel runs,
    and a script asking is spared importing it (dozens of modules) to find out."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def ingest_with_progress(source: Source, *, ctx: Any, display: str = "auto",
                         every: float = 0.5, stream: IO[str] | None = None,
                         **options: Any) -> IngestionStats:
    """:func:`trails.ingest.ingest_all`, showing its progress as it goes.

    Args:
        source, ctx, options: as for :func:`trails.ingest.ingest`.
        display: ``"auto"`` (an HTML bar in a Jupyter kernel, else lines on ``stream``),
            ``"html"``, ``"text"`` or ``"none"``.
        every: seconds between updates (the last state is always shown).
        stream: where ``"text"`` writes (default: stderr).

    A ``KeyboardInterrupt`` (Ctrl-C, a notebook's stop button) ends the run: the documents
    committed until then stay, the display's last line says how many, and the interrupt is
    raised on.

    Raises:
        InvalidArgumentError: ``display`` is none of those.
        MissingExtraError: ``display="html"`` without IPython installed.
        Everything :func:`trails.ingest.ingest` raises.
    """
    if display not in ("auto", "html", "text", "none"):
        raise InvalidArgumentError(f"display must be auto, html, text or none, got {display!r}")
    loader_options = {k: v for k, v in options.items() if k in ("include", "exclude")}
    tracker = ProgressTracker(count_documents(source, **loader_options))
    shown: Any = None
    if display == "html" or (display == "auto" and in_notebook()):
        shown = _NotebookDisplay("ingest")
    elif display != "none":
        shown = _PlainDisplay("ingest", stream)
    stats = IngestionStats()
    last = float("-inf")
    events = ingest(source, ctx=ctx, **options)
    try:
        for event in events:
            stats.record(event)
            tracker.record(event)
            if shown is not None and tracker.clock() - last >= every:
                last = tracker.clock()
                shown.show(tracker.snapshot())
    except KeyboardInterrupt:
        # The interrupt ends the run (a notebook's stop button is this): what was committed
        # stays, and the display ends on it before the interrupt goes on up.
        close = getattr(events, "close", None)  # a generator: its run ends here
        if close is not None:
            close()
        _finish(shown, tracker, stats, stats.interrupted("the same ingest"))
        raise
    _finish(shown, tracker, stats)
    return stats


def _finish(shown: Any, tracker: ProgressTracker, stats: IngestionStats, note: str = "") -> None:
    final = tracker.snapshot()
    stats.seconds = final.elapsed
    if shown is not None:
        shown.show(final, note)
