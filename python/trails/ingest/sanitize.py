"""Sanitizers: rewrite a document before it is chunked (PII redaction and the like).

Sanitizers run before chunking, so chunk offsets refer to the sanitised text, and the
document's hash is the hash of the sanitised text::

    >>> from trails.ingest.document import Document
    >>> RegexRedactor()(Document("d", "mem", "Mail ann@example.org today.")).text
    'Mail [EMAIL] today.'
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Awaitable, Mapping
from dataclasses import replace
from typing import TypeVar

from trails.errors import InvalidArgumentError
from trails.ingest.document import Document, Sanitizer

__all__ = ["DEFAULT_PATTERNS", "RegexRedactor", "apply_sanitizer", "sanitized"]

T = TypeVar("T")

# Tried in this order at each position: an IBAN's digits must not be taken for a phone number.
DEFAULT_PATTERNS: dict[str, str] = {
    "EMAIL": r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    # Two letters, two check digits, then 11-30 letters/digits, optionally in groups of four.
    "IBAN": r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b",
    # 9 to 15 digits with the usual separators, optionally after "+": it errs on the side of
    # redacting long plain numbers too, and leaves dates (8 digits) and times alone.
    "PHONE": r"(?<![\w+:/.-])(?:\+|\()?(?:\d[ .()/-]{0,2}){8,14}\d(?![\w:/-])",
}


class RegexRedactor:
    """Replaces every match of a set of labelled regular expressions.

    Args:
        patterns: label -> regex; default :data:`DEFAULT_PATTERNS` (emails, IBANs, phone
            numbers). Where two patterns match at the same place, the first listed wins.
        replacement: what a match becomes; ``{label}`` is replaced by the pattern's label.

    Raises:
        ValueError: a pattern does not compile, or ``replacement`` has a field other than
            ``{label}``.

    >>> RegexRedactor({"ID": r"\\bID-\\d+"}, replacement="<{label}>").redact("see ID-42")
    'see <ID>'
    """

    def __init__(self, patterns: Mapping[str, str] | None = None,
                 replacement: str = "[{label}]") -> None:
        self.patterns = dict(DEFAULT_PATTERNS if patterns is None else patterns)
        if not self.patterns:
            raise InvalidArgumentError(
                "give at least one pattern (label -> regex), or None for defaults")
        self.replacement = replacement
        self._labels = list(self.patterns)
        self._replacements = [_format(replacement, label) for label in self._labels]
        self._regex = re.compile("|".join(
            f"(?P<p{i}>{_check(label, rx)})" for i, (label, rx) in enumerate(self.patterns.items())
        ))

    def __repr__(self) -> str:
        return f"RegexRedactor(labels={self._labels}, replacement={self.replacement!r})"

    def redact(self, text: str) -> str:
        """The text with every match replaced."""
        return self._regex.sub(self._replace, text)

    def __call__(self, document: Document) -> Document:
        return replace(document, text=self.redact(document.text))

    def _replace(self, match: re.Match[str]) -> str:
        return self._replacements[int(match.lastgroup[1:])]  # type: ignore[index]


def _check(label: str, pattern: str) -> str:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError(
            f"pattern {label!r} is not a valid regular expression: {exc}") from exc
    if compiled.groupindex:
        # Our own named groups tell which pattern matched; named groups inside would clash.
        raise InvalidArgumentError(
            f"pattern {label!r} has named groups {sorted(compiled.groupindex)}; "
            "use plain (...) or (?:...) groups")
    return pattern


def _format(replacement: str, label: str) -> str:
    try:
        return replacement.format(label=label)
    except (KeyError, IndexError, ValueError) as exc:
        raise InvalidArgumentError(
            f"replacement {replacement!r} may only use the field {{label}}; "
            "write {{ and }} for literal braces") from exc


async def apply_sanitizer(sanitizer: Sanitizer, document: Document) -> Document:
    """Run one sanitizer on a document, awaiting it if it is asynchronous.

    Raises:
        TypeError: the sanitizer returned something other than a :class:`Document`.

    >>> import asyncio
    >>> asyncio.run(apply_sanitizer(RegexRedactor(), Document("d", "m", "x@y.io"))).text
    '[EMAIL]'
    """
    result: object = sanitizer(document)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, Document):
        raise TypeError(f"sanitizer {sanitizer!r} returned {type(result).__name__}; a "
                        "sanitizer must return the (rewritten) Document")
    return result


def sanitized(sanitizer: Sanitizer | None, document: Document) -> Document:
    """The document as ``sanitizer`` rewrites it, awaited from sync code if it is async (the
    ingest pipeline's way of running it).

    Raises:
        TypeError: the sanitizer returned something other than a :class:`Document`.
    """
    if sanitizer is None:
        return document
    result: object = sanitizer(document)
    if inspect.isawaitable(result):
        result = _run_coroutine(result)
    if not isinstance(result, Document):
        raise TypeError(f"a sanitizer must return a Document, got {type(result).__name__}")
    return result


def _run_coroutine(awaitable: Awaitable[T]) -> T:
    """Await from sync code, also when this thread already runs an event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_wrap(awaitable))
    done: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            done.append(asyncio.run(_wrap(awaitable)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            failed.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


async def _wrap(awaitable: Awaitable[T]) -> T:
    return await awaitable
