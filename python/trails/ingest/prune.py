"""Sync with the source: delete the documents whose source files are gone.

``ingest(paths, prune=True)`` (``trails ingest --prune``) ends with this: every document of the
scope whose recorded source lies under one of the ingested paths and no longer exists is
deleted, one at a time, each as crash-safe as :func:`~trails.ingest.maintenance.delete_document`
(a kill leaves the document whole or gone, and the next ``--prune`` finishes). A source that
still exists is never pruned, even when this run skipped it (``--include``/``--exclude``, a
file that failed to load): only its absence says the user removed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from trails.errors import InvalidArgumentError
from trails.ingest.events import DocumentPruned
from trails.ingest.loaders import KNOWN_SUFFIXES
from trails.ingest.maintenance import delete_document
from trails.ingest.retention import record_deletion
from trails.kg.base import select
from trails.parts import ContextParts

__all__ = ["prune_missing", "prune_roots"]


def prune_roots(source: object) -> list[Path]:
    """The ingested paths, resolved; refused unless every one is an existing path."""
    if isinstance(source, (str, os.PathLike)):
        given = [source]
    elif isinstance(source, (list, tuple)) and all(isinstance(p, (str, os.PathLike))
                                                   for p in source):
        given = list(source)
    else:
        raise InvalidArgumentError("prune=True needs the ingested files or folders as paths, "
                                   "to know which documents came from them")
    roots = [Path(p).resolve() for p in given]
    missing = [str(p) for p, root in zip(given, roots) if not root.exists()]
    if missing:
        raise InvalidArgumentError(f"cannot prune: {', '.join(missing)} does not exist (check the path; "
                         "pruning a missing folder would delete every document from it)")
    return roots


def prune_missing(ctx: ContextParts, scope: str, roots: list[Path]) -> Iterator[DocumentPruned]:
    """Delete the scope's documents whose source is under ``roots`` and is gone."""
    rows = select(ctx.kg, "SELECT ?doc ?source WHERE { ?doc a trails:Document ; "
                          "trails:source ?source }", scopes=[scope])
    for row in rows:
        source = str(row["source"])
        path = Path(source).resolve()
        # Only what the file loader could have read: a Document given from Python with a
        # source label ("crm-export") is no file, and its absence proves nothing.
        if (path.suffix.lower() not in KNOWN_SUFFIXES or path.exists()
                or not any(path == root or root in path.parents for root in roots)):
            continue
        if delete_document(ctx, str(row["doc"])):
            record_deletion(ctx, [str(row["doc"])], reason=f"source removed: {source}")
        yield DocumentPruned(str(row["doc"]), source)
