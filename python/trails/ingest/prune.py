"""Sync with the source: delete the documents whose source files are gone.

``ingest(paths, prune=True)`` (``trails ingest --prune``) ends with this: every document of the
scope that the file loader read from a file under one of the ingested paths
(``trails:sourceFile``, the file's absolute path, recorded at ingest), and whose file no
longer exists, is deleted, one at a time, its audit record first, each as crash-safe as
:func:`~trails.ingest.maintenance.delete_document` (a kill leaves the document whole or gone,
and the next ``--prune`` finishes).

What decides is only that recorded file, never the document's ``source`` label: a document
given from Python or through the service (``source="runbook.md"``) has no file and is never
pruned, whatever the working directory; nor is a document ingested before files were
recorded (ingesting its folder again records them). A source that still exists is never
pruned, even when this run skipped it (``--include``/``--exclude``, a file that failed to
load): only its absence says the user removed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from trails.errors import InvalidArgumentError
from trails.ingest.events import DocumentPruned
from trails.ingest.minting import SOURCE_FILE
from trails.ingest.retention import delete_recorded
from trails.ingest.writer import writing_versions
from trails.kg.base import select
from trails.kg.terms import IRI
from trails.parts import ContextParts

__all__ = ["prune_missing", "prune_roots"]

_FILES = (f"SELECT ?doc ?file WHERE {{ ?doc a trails:Document ; {SOURCE_FILE} ?file "
          "FILTER(isIRI(?doc)) }")  # a blank node a user typed so is no document to delete


def prune_roots(source: object) -> list[Path]:
    """The ingested paths, as written (absolute) and resolved; refused unless every one is
    an existing path."""
    if isinstance(source, (str, os.PathLike)):
        given = [source]
    elif isinstance(source, (list, tuple)) and all(isinstance(p, (str, os.PathLike))
                                                   for p in source):
        given = list(source)
    else:
        raise InvalidArgumentError("prune=True needs the ingested files or folders as paths, "
                                   "to know which documents came from them")
    missing = [str(p) for p in given if not Path(p).exists()]
    if missing:
        raise InvalidArgumentError(f"cannot prune: {', '.join(missing)} does not exist (check the path; "
                         "pruning a missing folder would delete every document from it)")
    return list(dict.fromkeys(root for p in given
                              for root in (Path(os.path.abspath(p)), Path(p).resolve())))


def prune_missing(ctx: ContextParts, scope: str, roots: list[Path]) -> Iterator[DocumentPruned]:
    """Delete the scope's documents read from a file under ``roots`` that is gone."""
    for row in select(ctx.kg, _FILES, scopes=[scope]):
        file = Path(str(row["file"]))
        if not file.is_absolute() or file.exists() or not _under(file, roots):
            continue
        doc = str(row["doc"])
        with writing_versions(ctx):  # still so once no other write runs: or it is not pruned
            if file.exists() or str(file) not in select(
                    ctx.kg, f"SELECT ?file WHERE {{ ?doc {SOURCE_FILE} ?file }}",
                    {"doc": IRI(doc)}, scopes=[scope]).column("file"):
                continue  # the file came back, or the document was ingested from another
            delete_recorded(ctx, doc, reason=f"source removed: {file}")
        yield DocumentPruned(doc, str(file))


def _under(file: Path, roots: list[Path]) -> bool:
    named = {file, file.parent.resolve() / file.name}  # as recorded, and its folder resolved
    return any(path == root or root in path.parents for path in named for root in roots)
