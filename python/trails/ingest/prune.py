"""Sync with the source: delete the documents whose source files are gone.

``ingest(paths, prune=True)`` (``trails ingest --prune``) ends with this: every document of the
scope that the file loader read from a file under one of the ingested paths
(``trails:sourceFile``, the file's absolute path, recorded at ingest), and whose file no
longer exists, is deleted, one at a time, its audit record first, each as crash-safe as
:func:`~trails.ingest.maintenance.delete_document` (a kill leaves the document whole or gone,
and the next ``--prune`` finishes).

A file holding several documents (a JSONL file, one per record) can lose some and stay: a
record taken out of it is pruned too, when this run read that file whole (every record of it
loaded, none failing) and did not meet the record's id in it (:class:`SourcesRead`). A file
with a line that failed prunes none of its records: a broken line is no removed record.

What decides is only that recorded file, never the document's ``source`` label: a document
given from Python or through the service (``source="runbook.md"``) has no file and is never
pruned, whatever the working directory; nor is a document ingested before files were
recorded (ingesting its folder again records them). A document whose file still exists is
never pruned when this run did not read that file whole (``--include``/``--exclude``, a file
that failed to load, a line of it that failed): only its absence, or its record's absence
from the whole file, says the user removed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from trails.errors import InvalidArgumentError
from trails.ingest.document import Document, LoadFailure
from trails.ingest.events import DocumentFailed, DocumentPruned, DocumentStarted
from trails.ingest.minting import SOURCE_FILE
from trails.ingest.retention import delete_recorded
from trails.ingest.writer import writing_versions
from trails.kg.base import select
from trails.kg.terms import IRI
from trails.parts import ContextParts

__all__ = ["SourcesRead", "prune_missing", "prune_roots"]

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


class SourcesRead:
    """Which documents a run read from each file (by its absolute path), and which files it
    did not read whole: what :func:`prune_missing` needs to prune a record taken out of a
    file that is still there."""

    def __init__(self) -> None:
        self._documents: dict[str, set[str]] = {}
        self._incomplete: set[str] = set()

    def saw(self, item: Document | LoadFailure, event: object) -> None:
        """Note one event the run made of ``item``, a loaded document or failure."""
        origin = item.origin
        if origin is None:
            return
        if isinstance(item, LoadFailure):
            if item.skipped:  # a file read whole that holds no document
                self._documents.setdefault(origin, set())
            else:
                self._incomplete.add(origin)
        elif isinstance(event, DocumentStarted):
            self._documents.setdefault(origin, set()).add(event.doc_iri)
        elif isinstance(event, DocumentFailed):  # a document of it that may still be there
            self._incomplete.add(origin)

    def taken_out(self, file: str, doc: str) -> bool:
        """Whether ``doc``, recorded from ``file``, was not in it when this run read it whole."""
        read = self._documents.get(file)
        return read is not None and file not in self._incomplete and doc not in read


def prune_missing(ctx: ContextParts, scope: str, roots: list[Path],
                  read: SourcesRead | None = None) -> Iterator[DocumentPruned]:
    """Delete the scope's documents read from a file under ``roots`` that is gone, and those
    that ``read`` says are no longer in a file this run read whole."""
    for row in select(ctx.kg, _FILES, scopes=[scope]):
        file, doc = Path(str(row["file"])), str(row["doc"])
        if not file.is_absolute():
            continue
        gone = not file.exists()
        if not gone and (read is None or not read.taken_out(str(file), doc)):
            continue
        if not _under(file, roots):
            continue
        with writing_versions(ctx):  # still so once no other write runs: or it is not pruned
            if (gone and file.exists()) or str(file) not in select(
                    ctx.kg, f"SELECT ?file WHERE {{ ?doc {SOURCE_FILE} ?file }}",
                    {"doc": IRI(doc)}, scopes=[scope]).column("file"):
                continue  # the file came back, or the document was ingested from another
            delete_recorded(ctx, doc, reason=(f"source removed: {file}" if gone
                                              else f"no longer in its source: {file}"))
        yield DocumentPruned(doc, str(file))


def _under(file: Path, roots: list[Path]) -> bool:
    named = {file, file.parent.resolve() / file.name}  # as recorded, and its folder resolved
    return any(path == root or root in path.parents for path in named for root in roots)
