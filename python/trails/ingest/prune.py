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

Only a document the vector store records in the pruned scope is pruned: a file loaded into
the scope's graph that claims another scope's document came from a file under DIR is not
heard. What decides is only that recorded file, never the document's ``source`` label: a document
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
from trails.ingest.expiry import store_owners
from trails.ingest.minting import SOURCE_FILE, doc_iri
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
    file that is still there.

    Only a record of the file under the id this run read it with (``sub/r.jsonl#b`` when it
    read ``sub/r.jsonl#a``) can be taken out: a file reached through another folder, or named
    alone, has other ids (``r.jsonl#a``), and the documents an earlier run wrote under those
    are still in it. Only a file emptied of every record is taken out whole, under every id.
    """

    def __init__(self, scope: str) -> None:
        self._scope = scope
        self._documents: dict[str, set[str]] = {}
        self._records: dict[str, set[str]] = {}  # file -> its records' IRI prefixes, "...%23"
        self._emptied: set[str] = set()
        self._incomplete: set[str] = set()

    def saw(self, item: Document | LoadFailure, event: object, base: str) -> None:
        """Note one event the run made of ``item``, a loaded document or failure."""
        origin = item.origin
        if origin is None:
            return
        if isinstance(item, LoadFailure):
            if item.skipped:  # a file read whole that holds no document
                self._documents.setdefault(origin, set())
                self._emptied.add(origin)
            else:
                self._incomplete.add(origin)
        elif isinstance(event, DocumentStarted):
            self._documents.setdefault(origin, set()).add(event.doc_iri)
            stem = _record_stem(item.id, origin)
            if stem is None:
                return
            prefix = doc_iri(base, stem + "#", self._scope) if stem else ""
            if not prefix or not event.doc_iri.startswith(prefix):  # cannot tell: keep all
                self._incomplete.add(origin)
            else:
                self._records.setdefault(origin, set()).add(prefix)
        elif isinstance(event, DocumentFailed):  # a document of it that may still be there
            self._incomplete.add(origin)

    def taken_out(self, file: str, doc: str) -> bool:
        """Whether ``doc``, recorded from ``file``, was not in it when this run read it whole."""
        read = self._documents.get(file)
        if read is None or file in self._incomplete or doc in read:
            return False
        return file in self._emptied or any(
            doc.startswith(prefix) for prefix in self._records.get(file, ()))


def _record_stem(doc_id: str, origin: str) -> str | None:
    """The id of the file a record's ``doc_id`` (``sub/r.jsonl#key``) was read from, None for
    a document that is a whole file (``guide.md``), "" when the id reads both ways."""
    name = os.path.basename(origin) + "#"
    starts = [at for at in range(len(doc_id)) if doc_id.startswith(name, at)
              and (at == 0 or doc_id[at - 1] == "/")]
    if not starts:
        return None
    return doc_id[:starts[0] + len(name) - 1] if len(starts) == 1 else ""


def prune_missing(ctx: ContextParts, scope: str, roots: list[Path],
                  read: SourcesRead | None = None) -> Iterator[DocumentPruned]:
    """Delete the scope's documents read from a file under ``roots`` that is gone, and those
    that ``read`` says are no longer in a file this run read whole.

    Raises:
        InvalidArgumentError: a document would be pruned from a folder that is empty now (a
            drive not mounted, a share not connected): nothing is pruned.
    """
    doomed = []
    for row in select(ctx.kg, _FILES, scopes=[scope]):
        file, doc = Path(str(row["file"])), str(row["doc"])
        if not file.is_absolute():
            continue
        gone = _gone(file)
        if not gone and (read is None or not read.taken_out(str(file), doc)):
            continue
        if _under(file, roots):
            doomed.append((file, doc, gone))
    owners = store_owners(ctx.vectors)  # a scope's graph speaks for its own documents only
    if owners is not None and doomed:
        recorded = owners(sorted({doc for _, doc, _ in doomed}))
        doomed = [found for found in doomed if (recorded.get(found[1]) or scope) == scope]
    _refuse_empty_roots([file for file, _, gone in doomed if gone], roots)
    for file, doc, gone in doomed:
        with writing_versions(ctx):  # still so once no other write runs: or it is not pruned
            if (gone and not _gone(file)) or str(file) not in select(
                    ctx.kg, f"SELECT ?file WHERE {{ ?doc {SOURCE_FILE} ?file }}",
                    {"doc": IRI(doc)}, scopes=[scope]).column("file"):
                continue  # the file came back, or the document was ingested from another
            delete_recorded(ctx, doc, reason=(f"source removed: {file}" if gone
                                              else f"no longer in its source: {file}"))
        yield DocumentPruned(doc, str(file))


def _gone(file: Path) -> bool:
    """Whether ``file`` is known to be gone: only a missing path (or a folder on its way that
    is no folder) says so. A file that cannot be looked at (a folder this process may not
    enter, a network share whose handle went stale, an I/O error) is not gone."""
    try:
        os.stat(file)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return False


def _refuse_empty_roots(gone: list[Path], roots: list[Path]) -> None:
    """Refuse to prune files gone from an ingested folder that holds nothing at all: an
    empty mount point (a drive or share not mounted) looks so, and its files are not gone."""
    for root in roots:
        if not root.is_dir() or not _holds_nothing(root):
            continue
        lost = [file for file in gone if _under(file, [root])]
        if lost:
            raise InvalidArgumentError(
                f"cannot prune: {root} is an empty folder (a drive or share not mounted?), "
                f"and pruning would delete the {len(lost)} document(s) read from it; nothing "
                "was pruned. Mount it and run again, or, if its files were removed on "
                "purpose, delete those documents with `trails delete IRI`")


def _holds_nothing(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:  # it cannot be listed: its files are not known to be gone either
        return True


def _under(file: Path, roots: list[Path]) -> bool:
    named = {file, file.parent.resolve() / file.name}  # as recorded, and its folder resolved
    return any(path == root or root in path.parents for path in named for root in roots)
