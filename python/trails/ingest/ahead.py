"""Reading ahead: an iterator's items made in a thread of their own while the consumer works.

An ingest run has two halves that can overlap (ADR 0036, fourth amendment): preparing
documents (loading, chunking, embedding: Python and the embedder) and committing them (the two
stores' writes: mostly SQLite and Oxigraph, which let go of the interpreter while they work).
:func:`read_ahead` runs the first half in a thread, so the next documents are embedded while
the last ones commit, and hands its items over in order through a bounded queue: the consumer
sees exactly the items, and the exception, that iterating in its own thread would give.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TypeVar, cast

__all__ = ["groups", "read_ahead"]

T = TypeVar("T")

# How long a blocked wait lasts before it looks again (whether the consumer went away, whether
# the thread is still there): waits stay interruptible by Ctrl-C on every platform.
_POLL_SECONDS = 0.05


class _Raised:
    """The exception the items' iterator raised, handed over in its place."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


def read_ahead(items: Iterator[T], limit: int, weight: Callable[[T], int] | None = None,
               budget: int = 0) -> Generator[T, None, None]:
    """``items``, made by a thread that runs at most ``limit`` items ahead of the consumer,
    and (with ``weight``) items weighing at most ``budget`` in all, or a single heavier one.

    An exception the iterator raises (KeyboardInterrupt included) is raised here, after the
    items made before it. When the consumer stops early (``close()``, an exception, Ctrl-C),
    the thread stops at its next item, ``items`` is closed there (its ``finally`` blocks run in
    that thread), and this waits for it. The thread runs in a copy of the caller's context
    (``contextvars``).

    Raises:
        ValueError: ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"read_ahead needs a limit of at least 1 item, got {limit}")
    handed: queue.Queue[tuple[object, int]] = queue.Queue(maxsize=limit)
    stopped = threading.Event()
    room = threading.Condition()
    held = [0]  # the weight of the items handed over and not yet taken

    def hand(item: object, heavy: int) -> bool:
        """Put ``item`` in the queue; False if the consumer went away meanwhile."""
        with room:
            while held[0] and held[0] + heavy > budget:
                if stopped.is_set():
                    return False
                room.wait(_POLL_SECONDS)
            held[0] += heavy
        while not stopped.is_set():
            try:
                handed.put((item, heavy), timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for item in items:
                if not hand(item, weight(item) if weight is not None else 0):
                    break
            else:
                hand(_END, 0)
        except BaseException as error:  # noqa: BLE001 - handed over, raised in the consumer
            hand(_Raised(error), 0)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    maker = threading.Thread(target=contextvars.copy_context().run, args=(make,),
                             name="trails-ingest-ahead", daemon=True)
    maker.start()
    try:
        while True:
            try:
                item, heavy = handed.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if not maker.is_alive() and handed.empty():
                    raise RuntimeError("the read-ahead thread ended without handing over "
                                       "its end") from None
                continue
            if heavy:
                with room:
                    held[0] -= heavy
                    room.notify()
            if item is _END:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield cast(T, item)
    finally:
        stopped.set()
        if threading.current_thread() is not maker:  # a collection there could close us
            while maker.is_alive():
                maker.join(_POLL_SECONDS)


def groups(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size``. If reading the next item raises, the items read so
    far are still handed out first, as they were before any read-ahead."""
    group: list[T] = []
    try:
        for item in items:
            group.append(item)
            if len(group) == size:
                yield group
                group = []
    except Exception:
        if group:
            yield group
        raise
    if group:
        yield group
