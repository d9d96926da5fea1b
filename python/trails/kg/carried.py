"""Kept columns carried across a writer's own commits (ADR 0029, second amendment).

A column kept for one revision (``kg/column_files.py``) used to be thrown away by the next
write: the first filter on that property after an ingest read the whole property from the
graph again (1-13 s at a million chunks). A writer knows more than a reader: ingestion can
say, before it writes, which *subjects* its write may touch (the documents, their chunks old
and new, the chunks' mention nodes, the staged manifests). Every triple a write adds or
removes has one of them as its subject, so a column of the state after the write is

    the column before it, without its rows on those subjects,
    plus the rows on those subjects read from the graph after it,

and the graph is read for the run's subjects only, or read whole when the run touched more
subjects than the column has rows. The link checks' counts (ADR 0013, ``kg/link_counts.py``)
are carried by their change: each declared block counts the solutions on its subjects before
its first write and after its last, and the run adds the differences to the kept answers.
Blocks that overlap in time (two writing threads) cannot tell their changes apart: the counts
are then not carried (the columns still are).

Exactness rests on two rules, both checked here rather than trusted:

- only writes declared with :meth:`Carry.touching` are carried; any other stamped write
  through the graph (``kg.update`` by a user, ``trails load``, a repair) makes the carry void
  and the next revision's columns are read from the graph as before;
- the files are written for the revision the graph settles on only if it is settled (no raw
  store handed out, no write in flight) and every write since the files' revision was
  declared; they are then the same files a reader would have built (same keys, digests, and
  the audit-graph rule of ``column_files.keepable``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from trails.kg.column_files import ColumnFiles, Kept, RunTsv, keepable, read_rows
from trails.kg.link_counts import LINK_COUNTS, Lookups
from trails.kg.planning import RDF_TYPE

__all__ = ["Carry", "Keys", "Touched"]

# Kept files as (kind, key): ("column", predicate IRI) or ("class", "<class IRI>").
Keys = frozenset[tuple[str, str]]
# What a writer declares: its subjects (IRIs), each with the kept files its writes on that
# subject can change (None: any); a subject named twice can change either's.
Touched = Iterable[tuple[str, Keys | None]]

log = logging.getLogger("trails.filter")
# A run that touches more subjects than this share of the smallest kept link count (and
# more than RECOUNT_FLOOR) leaves the counts to readers, whose one count then costs less
# than counting the run's changes: at 1.19M links, counting them whole took 4.6 s (3.9 us a
# link) and counting a run's changes ~0.9 ms a subject (ADR 0029).
RECOUNT_SHARE = 0.004
RECOUNT_FLOOR = 2_000


class Carry:
    """What the declared writes through one writable graph changed since ``base``, the last
    revision whose columns are kept, and how to bring those columns to a later revision."""

    def __init__(self, graph_path: str, run: RunTsv) -> None:
        self.path = graph_path
        self._run = run
        self._lock = threading.RLock()
        self._declared = threading.local()  # depth: declared blocks open on this thread
        self._active = 0  # declared blocks open on any thread
        self._started = 0  # declared blocks begun, ever
        self._reset(None)

    def _reset(self, base: str | None) -> None:
        self.base = base
        self.void = False
        # the subjects declared writes touched (TSV terms) and the kept files each can change
        self.subjects: dict[str, Keys | None] = {}
        # the kept link counts of base, by (query, scopes): their change since base; None
        # once a change could not be counted, or counting it costs more than counting again
        self.changes: dict[tuple[str, tuple[str, ...] | None], int] | None = None
        self._bound = 0.0  # subjects past which a reader's count is the cheaper
        if base is not None:
            counts = {}
            for kind, key, scopes in self._files(base):
                if kind != "count" or key not in LINK_COUNTS:
                    continue
                found = ColumnFiles(self.path, base, scopes).load(kind, key)
                if found is not None and len(found.subjects) == 1:
                    counts[key, None if scopes is None else tuple(scopes)] = int(found.subjects[0])
            self.changes = dict.fromkeys(counts, 0)
            self._bound = max(min(counts.values(), default=0) * RECOUNT_SHARE, RECOUNT_FLOOR)

    # -- while writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def touching(self, subjects: Callable[[], Touched | None], settled: str | None
                 ) -> Iterator[None]:
        """Writes in this block (on this thread) change only triples whose subject is one of
        ``subjects()`` (IRIs; None: they cannot all be named), asked before the first write;
        ``settled`` is the graph's settled revision now. Each subject comes with the kept
        files (:data:`Keys`) its writes can change, None for any.

        No lock is held while the block runs (the writes take the vector store's locks, which
        a filter holds while it asks for columns); a carry asked meanwhile waits for the end
        of the run instead (:meth:`carry`)."""
        with self._lock:
            # Only with no other block open: one that began untracked would write after
            # the new base without having named its subjects.
            if (self.base is None and settled is not None and not self._active
                    and self._files(settled)):
                self._reset(settled)
            tracking = self.base is not None and not self.void
            if self._active and self.changes is not None:
                self.changes = None  # another block is writing: its changes would mix in
            self._active += 1
            self._started += 1
            started = self._started
        self._declared.depth = getattr(self._declared, "depth", 0) + 1
        try:
            terms: set[str] = set()
            before: dict[tuple[str, tuple[str, ...] | None], int] = {}
            if tracking:
                asked = subjects()
                with self._lock:
                    if asked is None:  # the writer cannot name them all
                        self.void = True
                    else:
                        for subject, keys in asked:
                            if subject:
                                term = f"<{subject}>"
                                terms.add(term)
                                held = self.subjects.get(term, keys)
                                self.subjects[term] = (None if held is None or keys is None
                                                       else held | keys)
                        if len(self.subjects) > self._bound:
                            self.changes = None  # a large run: readers count them again
                        before = dict.fromkeys(self.changes or {}, 0)
                before = self._counts_on(before, terms)
            yield
            if before:
                after = self._counts_on(before, terms)
                with self._lock:
                    if self._started != started:  # a block began meanwhile
                        self.changes = None
                    if self.changes is not None:
                        for key in before:
                            if key in self.changes:
                                self.changes[key] += after[key] - before[key]
        except BaseException:
            with self._lock:
                self.void = self.void or self.base is not None
            raise
        finally:
            self._declared.depth -= 1
            with self._lock:
                self._active -= 1

    def written(self) -> None:
        """A stamped write is about to run: one not declared voids what is carried."""
        if not getattr(self._declared, "depth", 0):
            with self._lock:
                self.void = self.void or self.base is not None

    # -- after writing ----------------------------------------------------------------------

    def carry(self, settled: str | None) -> None:
        """Write the kept columns of ``base`` again for ``settled`` (the graph's settled
        revision now), when every write between them was declared; then start from there."""
        with self._lock:
            base = self.base
            if base is None or settled == base or self._active:
                return  # nothing to carry, or a declared block is still writing
            if self.void or settled is None:
                self._reset(None)
                return
            try:
                self._write(base, settled)
            except Exception as exc:  # noqa: BLE001 - a carry is an optimisation: readers rebuild
                log.info("kept columns not carried to %s: %s", settled, exc)
            self._reset(settled)

    def _counts_on(self, keys: Iterable[tuple[str, tuple[str, ...] | None]], terms: set[str]
                   ) -> dict[tuple[str, tuple[str, ...] | None], int]:
        """The solutions of each kept link count on ``terms`` now; empty (and the counts no
        longer carried) when one cannot be counted: a carry must never fail a write."""
        lookups: dict[tuple[str, ...] | None, Lookups] = {}
        try:
            return {(query, scopes): LINK_COUNTS[query].on(lookups.setdefault(
                scopes, Lookups(self._run, None if scopes is None else list(scopes))), terms)
                for query, scopes in keys}
        except Exception as exc:  # noqa: BLE001 - readers count them again
            log.info("link counts not carried: %s", exc)
            with self._lock:
                self.changes = None
            return {}

    def _write(self, base: str, settled: str) -> None:
        # all read before the first is written: writing a new revision's first file removes
        # the folders of the others
        loaded = [(kind, key, scopes, ColumnFiles(self.path, base, scopes).load(kind, key))
                  for kind, key, scopes in self._files(base)]
        # Each column reads again only the subjects whose writes could change it; the
        # columns of one scopes read their rows on those subjects together (one prefetch).
        read: list[tuple[str, str, list[str] | None, Kept, set[str]]] = []
        groups: dict[str, tuple[Lookups, list[str], set[str]]] = {}
        for kind, key, scopes, kept in loaded:
            if kept is None or not kept.whole:
                continue
            if kind == "count":
                self._write_count(settled, key, scopes, kept)
                continue
            pattern = _pattern(kind, key)
            if pattern is None or not keepable(self._run, pattern, scopes):
                continue
            terms = {t for t, keys in self.subjects.items() if keys is None or (kind, key) in keys}
            if len(terms) > len(kept.subjects):  # cheaper read whole (a large first ingest)
                carried = read_rows(self._run, pattern, kind == "column", scopes)
                ColumnFiles(self.path, settled, scopes).save(kind, key, carried)
                continue
            group = groups.setdefault(repr(scopes), (Lookups(self._run, scopes), [], set()))
            group[1].append(_predicate(kind, key))
            group[2].update(terms)
            read.append((kind, key, scopes, kept, terms))
        for lookups, predicates, terms in groups.values():
            if len(predicates) > 1:
                lookups.prefetch(predicates, terms)
        for kind, key, scopes, kept, terms in read:
            carried = self._rows(kept, kind, key, terms, groups[repr(scopes)][0])
            ColumnFiles(self.path, settled, scopes).save(kind, key, carried)

    def _write_count(self, settled: str, query: str, scopes: list[str] | None,
                     kept: Kept) -> None:
        """The kept answer of a link count, plus its change since base."""
        count = LINK_COUNTS.get(query)
        change = (self.changes or {}).get((query, None if scopes is None else tuple(scopes)))
        if count is None or change is None or len(kept.subjects) != 1 or not all(
                keepable(self._run, p, scopes) for p in count.texts):
            return
        ColumnFiles(self.path, settled, scopes).save("count", query, Kept(
            np.array([int(kept.subjects[0]) + change], dtype=np.int64), np.empty(0, np.int64),
            [], []))

    def _rows(self, kept: Kept, kind: str, key: str, terms: set[str],
              lookups: Lookups) -> Kept:
        """``kept`` without its rows on ``terms``, plus those subjects' rows read now."""
        pairs = kind == "column"
        names, values = list(kept.names), list(kept.values)
        # One pass over the names in C (a column on chunks has a million): the codes, then
        # the stale ones found by the run's subjects, not by testing every name.
        name_codes = dict(zip(names, range(len(names))))
        value_codes = dict(zip(values, range(len(values))))
        stale = np.zeros(len(names), dtype=bool)
        stale[[code for term in terms if (code := name_codes.get(term)) is not None]] = True
        keep = ~stale[kept.subjects] if len(kept.subjects) else np.zeros(0, dtype=bool)
        subjects = [kept.subjects[keep]]
        objects = [kept.objects[keep] if pairs else np.empty(0, np.int64)]
        rows = _rows_on(kind, key, terms, lookups)
        subjects.append(np.array([_code(name_codes, names, r[0]) for r in rows],
                                 dtype=np.int64))
        objects.append(np.array([_code(value_codes, values, r[1]) for r in rows]
                                if pairs else [], dtype=np.int64))
        return Kept(np.concatenate(subjects), np.concatenate(objects) if pairs else
                    np.empty(0, np.int64), names, values)

    def _files(self, revision: str) -> list[tuple[str, str, list[str] | None]]:
        return ColumnFiles.kept(self.path, revision)


def _rows_on(kind: str, key: str, terms: set[str], lookups: Lookups) -> list[tuple[str, str]]:
    """The rows (subject, object) of a column or class whose subject is one of ``terms``
    (a class's object compared as a term here: see :class:`Lookups`). ``lookups`` serves the
    columns of one scopes, all their predicates read at once before the first (prefetch)."""
    found = lookups.of(_predicate(kind, key), True, terms)
    rows = [row for term in sorted(terms) for row in found[term]]
    return rows if kind == "column" else [row for row in rows if row[1] == key]


def _predicate(kind: str, key: str) -> str:
    """The predicate, as SPARQL text, of a kept column's or class's rows."""
    return f"<{key if kind == 'column' else RDF_TYPE}>"


def _pattern(kind: str, key: str) -> str | None:
    """The pattern a kept column's or class's rows (``?s``, ``?o``) came from."""
    if kind == "column":
        return f"?s <{key}> ?o"
    if kind == "class":
        return f"?s <{RDF_TYPE}> {key}"
    return None


def _code(codes: dict[str, int], terms: list[str], term: str) -> int:
    code = codes.get(term)
    if code is None:
        code = codes[term] = len(terms)
        terms.append(term)
    return code
