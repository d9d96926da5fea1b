"""Where an export must not be written: over a file of the context it exports.

``dump(path)`` replaces ``path`` whole. Pointed at the context's ``trails.json``, its vector
store or a file of the graph's own folder, it would replace the context's settings, every
vector or the graph itself with RDF. A graph refuses its own folder; a context tells its graph
(:func:`trails.kg.exchange.guard_exports`) its directory and its parts' files, so that
``ctx.kg.dump(path)`` and ``trails export -o`` refuse the same paths, through
:func:`refuse_own_file`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from trails.errors import ConfigurationError

__all__ = ["OwnFiles", "refuse_own_file"]


@dataclass(frozen=True)
class OwnFiles:
    """A context's places: its directory (None for a graph alone) and its parts' paths (a
    folder is kept whole; a file, with every file beside it whose name starts with its name:
    ``vectors.db-wal``, ``vectors.db.f32``)."""

    directory: str | None
    paths: tuple[str, ...] = ()

    @classmethod
    def of(cls, directory: str | os.PathLike[str] | None, parts: Iterable[object]) -> OwnFiles:
        """The places of a context in ``directory`` made of ``parts`` (their ``path``)."""
        paths = tuple(path for part in parts if isinstance(path := getattr(part, "path", None),
                                                           str) and path != ":memory:")
        return cls(None if directory is None else os.fspath(directory), paths)

    def joined(self, other: OwnFiles) -> OwnFiles:
        return OwnFiles(self.directory or other.directory,
                        tuple(dict.fromkeys(self.paths + other.paths)))


def refuse_own_file(output: str | os.PathLike[str], own: OwnFiles) -> None:
    """Refuse ``output`` when it is in the context's directory or a part's folder, or beside
    a part's file under its name.

    Raises:
        ConfigurationError: it is (nothing has been written).
    """
    target = Path(os.path.realpath(output))
    folders = [(own.directory, "the context directory")] if own.directory is not None else []
    files: list[Path] = []
    for path in own.paths:
        if os.path.isdir(path):
            folders.append((path, "the graph's folder"))
        else:
            files.append(Path(os.path.realpath(path)))
    for folder, what in folders:
        real = Path(os.path.realpath(folder))
        if real == target or real in target.parents:
            _refuse(output, f"inside {what} {folder}", f"outside it, e.g. "
                    f"{real.parent / target.name}")
    for file in files:
        if target.parent == file.parent and target.name.startswith(file.name):
            _refuse(output, f"beside the context's vector store {file}, under its name",
                    "under another name or in another folder")


def _refuse(output: str | os.PathLike[str], place: str, elsewhere: str) -> None:
    raise ConfigurationError(
        f"{output} is {place}: an export there could replace a file of the context (its "
        f"trails.json, its vectors, its graph); nothing was written. Write it {elsewhere}")
