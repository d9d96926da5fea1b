"""How a backend records itself in ``trails.json`` and is rebuilt from the record.

Each graph and vector store class named in :mod:`trails.registry` implements
:class:`Recordable` in its own module: ``from_settings(settings, where)`` builds it from its
recorded settings, and ``recorded_settings(root)`` returns the settings that rebuild an open
one (None when it cannot be rebuilt: an in-memory store, a client only the caller holds).
:mod:`trails.backends` calls these two and knows no backend by name. Embedders implement
``recorded_settings`` too, and are rebuilt from their identity
(:class:`trails.vector.embedders.base.Rebuildable`).

Settings are constructor options: JSON scalars, or one level of them (a ``resilience``
policy). They never hold a secret: a backend reads its keys from the environment in
``from_settings``, each time it opens.

>>> Where(Path("/ctx"), read_only=True).path("graph", "unused").as_posix()
'/ctx/graph'
>>> relative(Path("/ctx/graph"), Path("/ctx"))
'graph'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from trails.resilience import Resilience

if TYPE_CHECKING:
    from typing import Self

__all__ = ["Recordable", "Scalar", "Setting", "Settings", "Where", "relative", "with_resilience"]

# A setting is a JSON scalar, or one level of them (a backend's ``resilience`` policy):
# settings are constructor options, never objects or secrets.
Scalar = str | int | float | bool | None
Setting = Scalar | dict[str, Scalar]
Settings = dict[str, Setting]


class Where(NamedTuple):
    """What a part opens inside: the context directory, its mode, the vectors' dimension
    (None: the store's own, which must then exist)."""

    root: Path
    read_only: bool = False
    dim: int | None = None

    def path(self, value: Setting, default: str) -> Path:
        """A recorded path (``default`` when none is): relative ones are inside the context
        directory, so the directory can move."""
        path = Path(str(value if value is not None else default)).expanduser()
        return path if path.is_absolute() else self.root / path


@runtime_checkable
class Recordable(Protocol):
    """A graph or vector store that ``trails.json`` can record and reopen."""

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        """The part ``settings`` record, opened for the context in ``where.root``."""
        ...

    def recorded_settings(self, root: Path) -> Settings | None:
        """The settings that reopen this part in a context in ``root`` (paths inside it
        relative to it), or None when they cannot (then the part must be passed in again)."""
        ...


def relative(path: str | os.PathLike[str], root: Path) -> str:
    """``path`` relative to ``root`` when inside it (the directory can move), else absolute."""
    absolute = Path(path).expanduser().resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute)


def with_resilience(settings: Settings, policy: Resilience,
                    default: Resilience | None = None) -> Settings:
    """``settings`` and, when it differs from the part's ``default``, its resilience policy
    (retries, breaker, ``max_rps``, ``require_tls``): a reopen keeps what the user chose."""
    chosen = policy.settings(default)
    return {**settings, "resilience": chosen} if chosen else settings
