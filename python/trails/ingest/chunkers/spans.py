"""Small helpers on ``(start, end)`` spans of a text, shared by the chunkers."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["SPLITTER_VERSION", "longest_fit", "skip_space", "trim"]

# Bump when splitting or packing changes, so stored documents are chunked again.
SPLITTER_VERSION = 1


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without its leading and trailing whitespace (empty if it is all space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def skip_space(text: str, start: int) -> int:
    """The first position at or after ``start`` that is not whitespace (or the end)."""
    while start < len(text) and text[start].isspace():
        start += 1
    return start


def longest_fit(fits: Callable[[int], bool], start: int, end: int) -> int:
    """The largest ``e`` in ``(start, end]`` with ``fits(e)``; at least ``start + 1``."""
    lo, hi = start + 1, end
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
