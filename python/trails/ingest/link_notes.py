"""What an ingest run says at its end about links it did not make (ADR 0031).

Read before the run, from the scope's state then:

- a run without a linker that writes documents into a scope whose chunks are linked: what
  it wrote mentions nothing (:func:`trails.ingest.mentions.unlinked_note`);
- a run with a linker into a scope never linked, that skips documents as current: those were
  ingested without a linker, and a current version is skipped, so this run links none of
  them (``trails ingest --link`` run again over a folder ingested without ``--link`` linked
  nothing, and said nothing).
"""

from __future__ import annotations

from collections.abc import Callable

from trails.config import read_config
from trails.ingest.linking import Linker
from trails.ingest.mentions import scope_is_linked, unlinked_note
from trails.parts import ContextParts

__all__ = ["end_of_run_note", "never_linked_note"]


def end_of_run_note(ctx: ContextParts, scope: str, linker: Linker | None,
                    ) -> Callable[[int, int], str | None]:
    """From the documents a run wrote and skipped, the warning its end gives, or None. Call
    before the run records its linker's settings."""
    if linker is None:
        linked = scope_is_linked(ctx.kg, scope)
        return lambda written, skipped: (unlinked_note(scope, written) if linked and written
                                         else None)
    never = not _linker_remembered(ctx) and not scope_is_linked(ctx.kg, scope)
    return lambda written, skipped: never_linked_note(scope, skipped) if never and skipped else None


def never_linked_note(scope: str, skipped: int) -> str:
    """The warning of a run with a linker that skipped ``skipped`` documents never linked."""
    return (f"scope {scope!r} was never linked, and the {skipped} document"
            f"{'s' if skipped > 1 else ''} this run skipped as current (ingested before without"
            f" a linker) {'are' if skipped > 1 else 'is'} not linked by it: a current version"
            " is skipped; link them with trails link (ctx.link())")


def _linker_remembered(ctx: ContextParts) -> bool:
    """Whether the context's directory records a linker's settings: one linked before."""
    directory = getattr(ctx, "directory", None)
    config = read_config(directory) if directory is not None else None
    return config is not None and config.linker is not None
