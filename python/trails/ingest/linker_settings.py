"""The label linker's settings, remembered in ``trails.json`` (ADR 0031).

Links depend on how the linker was set (its label predicates, languages, case and accent
folding, nesting, shortest label): a run with other settings writes other mentions. So a
context directory records the settings of the last :class:`LabelLinker` given to it (to
``ctx.link``, ``ingest(linker=...)``, ``trails link --predicate ...``), and a run that names
no settings (``trails ingest --link``, ``trails link``, ``ctx.link()``) links with those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trails.config import CONFIG_CHANGE, CONFIG_FILE, LinkerConfig, read_config, write_config
from trails.errors import ConfigurationError, TrailsError
from trails.ingest.linking import LabelLinker, Linker

__all__ = ["remember_linker", "remembered_linker", "settings_of"]


def settings_of(linker: LabelLinker) -> LinkerConfig:
    """What ``trails.json`` records of ``linker``."""
    return LinkerConfig(predicates=list(linker.predicates),
                        languages=None if linker.languages is None else list(linker.languages),
                        case=linker.case, accents=linker.accents, nested=linker.nested,
                        min_length=linker.min_length)


def remembered_linker(directory: Path | None, **given: Any) -> LabelLinker:
    """The linker the context in ``directory`` last linked with (the defaults if none was
    ever given, or in memory), with the settings in ``given`` (``LabelLinker``'s keyword
    names; None: not given) in place of the remembered ones."""
    config = read_config(directory) if directory is not None else None
    recorded = config.linker if config is not None and config.linker is not None else None
    settings: dict[str, Any] = {} if recorded is None else recorded.model_dump()
    settings.update({key: value for key, value in given.items() if value is not None})
    try:
        return LabelLinker(**settings)
    except TrailsError as exc:
        if directory is None or recorded is None or _takes(given):
            raise
        raise ConfigurationError(
            f"the linker settings remembered in {directory / CONFIG_FILE} (its \"linker\") "
            f"are wrong: {exc}. Give the settings again (trails link --predicate IRI ...), "
            "or forget them: trails link --defaults (ctx.link(LabelLinker()))") from None


def _takes(given: dict[str, Any]) -> bool:
    """Whether the settings ``given`` are refused on their own (their error, not the file's)."""
    try:
        LabelLinker(**{key: value for key, value in given.items() if value is not None})
    except TrailsError:
        return True
    return False


def remember_linker(ctx: object, linker: Linker | None) -> None:
    """Record ``linker``'s settings in the ``trails.json`` of ``ctx``'s directory (a writable
    context of one; any other linker, and a context in memory, record nothing)."""
    directory = getattr(ctx, "directory", None)
    if not isinstance(linker, LabelLinker) or directory is None or getattr(ctx, "read_only", True):
        return
    settings = settings_of(linker)
    with CONFIG_CHANGE:  # another thread's change read before this one is not undone by it
        config = read_config(directory)
        if config is not None and config.linker != settings:
            write_config(directory, config.model_copy(update={"linker": settings}))
