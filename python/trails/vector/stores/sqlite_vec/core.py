"""The store file, its vector files and the scoring index: opening, writes, deletes and reads.

SQLite is the durable record and the commit point; the vectors live in append-only,
memory-mapped slot files beside it (:mod:`.vector_file`), which search reads in place (ADR
0002, ADR 0014). The index of live slots (:mod:`.slot_index`) is read at the first
read, kept in step with every write and read again when another process commits.

**One committed state per read.** Every read runs in a :meth:`SqliteCore.snapshot`: a SQLite
read transaction (WAL keeps its state however many commits follow) in which the index is first
brought to that state (``PRAGMA data_version`` read inside the transaction, so the version and
the rows it describes agree). ``retrieve`` holds one snapshot for its whole read, so the vector
ranking, the keyword ranking and the metadata of one answer come from one committed state.

**Threads.** A store object has one connection and one index, guarded by the index's
re-entrant lock: a snapshot and a write each hold it throughout, so the threads of a process
that share a store take turns (a snapshot pins the one index to its state; two at different
states could not share it). Threads that must read in parallel open a store (or a read-only
context) each; SQLite's WAL lets any number of connections read while one writes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from trails.errors import ConfigurationError, ContextDamagedError
from trails.faults import corrupt_file
from trails.scopes import DEFAULT_SCOPE
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores import arguments
from trails.vector.stores.arrays import optional_str
from trails.vector.stores.base import BaseVectorStore
from trails.vector.stores.records import DocumentIris, SearchPlan, VectorHit
from trails.vector.stores.sqlite_vec import schema
from trails.vector.stores.sqlite_vec.compaction import compact, worth_compacting
from trails.vector.stores.sqlite_vec.driver import open_database
from trails.vector.stores.sqlite_vec.folding import ROW, fold, unfold
from trails.vector.stores.sqlite_vec.keyword import Fts5Index, take_texts
from trails.vector.stores.sqlite_vec.live_slots import keep_live, read_live, read_rows, stamp_of
from trails.vector.stores.sqlite_vec.slot_index import Candidates, SlotIndex
from trails.vector.stores.sqlite_vec.vector_file import VectorFiles, make_keys, vector_checksums

if TYPE_CHECKING:
    from typing import Self

__all__ = ["SqliteCore", "reads"]

F = TypeVar("F", bound=Callable[..., Any])


def reads(method: F) -> F:
    """Run ``method`` in its store's :meth:`~SqliteCore.snapshot` (joining one already held)."""
    @functools.wraps(method)
    def wrapper(self: SqliteCore, *args: Any, **kwargs: Any) -> Any:
        with self.snapshot():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]

# How many candidate sets (``ids`` tuples) a store remembers, most recent first.
MEMO_SIZE = 4


class SqliteCore(BaseVectorStore):
    """What every part of ``SqliteVecStore`` builds on: the connection (``_db``), the vector
    files (``_files``), the index of live slots (``_index``, whose lock guards it and orders
    writes), the keyword index (``_keywords``) and the data version the index was loaded at
    (``_version``)."""

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        dim: int | None = None,
        *,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = ":memory:" if str(path) == ":memory:" else os.path.abspath(path)  # any cwd
        self.read_only = read_only
        arguments.check_dim(dim)
        if read_only and (self.path == ":memory:" or not os.path.exists(self.path)):
            raise ConfigurationError(
                f"cannot open vector store {self.path!r} read-only: it does not exist yet; "
                "open it once without read_only=True to create it"
            )
        self._db = open_database(self.path, read_only=read_only)
        try:
            self._keywords = Fts5Index(self._db)
            self._dim = schema.prepare(self._db, self.path, dim, read_only, self._vector_files)
            self._index = SlotIndex(self._vector_files(self._dim))
            # The data version the index holds; -1: read it at the next read. Nothing per row
            # is read here: the first read takes the live slots (one aggregate) and maps the
            # vector files, which are checked then (a damaged one raises there).
            self._version = -1
            self._memo: OrderedDict[tuple[int, tuple[str, ...] | None],
                                    tuple[object, int, Any]] = OrderedDict()
            self._local = threading.local()  # the ids object keyword_search was given
            if embedder is not None:
                self.bind_embedder(embedder)
        except BaseException:
            self._db.close()  # a refused or damaged file is not left open
            raise

    def _vector_files(self, dim: int) -> VectorFiles:
        if getattr(self, "_files", None) is None:
            self._files = VectorFiles(self.path, dim)
        return self._files

    # -- identity -------------------------------------------------------------------------

    @reads
    def revision(self) -> str | None:
        """A stamp every commit renews (in a snapshot: the snapshot's); None before the
        first commit that recorded one."""
        return self._meta("revision")

    def _meta(self, key: str) -> str | None:
        return schema.read_meta(self._db, key)

    @property
    def _label(self) -> str:
        return self.path

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        raw = self._meta("embedder")
        return None if raw is None else EmbedderIdentity.model_validate_json(raw)

    @property
    def context_id(self) -> str | None:
        """The id of the context this file belongs to (None: not recorded yet)."""
        return self._meta("context")

    def bind_context(self, context_id: str) -> None:
        """Record the context this file belongs to (``Context.open`` checks it)."""
        self._check_writable()
        with self._db.transaction():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('context', ?)", (context_id,))

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        with self._db.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (identity.model_dump_json(),)
            )

    # -- loading and freshness ------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Hold one committed state of the file for every read inside the block.

        Searches, keyword searches, metadata and version lookups inside see the same state,
        whatever other processes commit meanwhile; the index is brought to it on entry.
        Blocks nest. Other threads using this store object wait until the block ends; writing
        inside it raises a ConfigurationError.

        Raises:
            ConfigurationError: the store is closed.
            StorageError: the file cannot be read (ContextDamagedError: it or a vector file is
                corrupt, missing or truncated; the message names it).

        >>> from trails.vector.stores.sqlite_vec import SqliteVecStore
        >>> store = SqliteVecStore(dim=2)
        >>> store.add("a", [1.0, 0.0])
        >>> with store.snapshot():
        ...     [hit.id for hit in store.search([1.0, 0.0])], store.count()
        (['a'], 1)
        """
        with self._index.lock:
            for attempt in range(3):
                with self._db.reading():
                    try:
                        self._refresh()
                    except ContextDamagedError:
                        # A snapshot taken just before a compaction committed names vector
                        # files the compaction then deleted: a fresh snapshot names the new
                        # ones. Files damaged for good fail every time.
                        if attempt == 2 or self._db.in_transaction:
                            raise
                        continue
                    yield self
                    return

    def _load(self) -> None:
        """Read the index of the state the caller's read or write transaction holds (so the
        data version recorded describes exactly the slots loaded)."""
        self._version = -1  # until the load completes
        version = self._db.data_version()
        file_id = self._meta("vector_file")
        if file_id is None:
            raise corrupt_file(self.path, "it records no vector files")
        slots = int(self._meta("vector_slots") or 0)
        if self._files.file_id != file_id:
            files = VectorFiles(self.path, self._dim, int(self._meta("vector_generation") or 0))
            files.attach(file_id, slots)
            self._files = files
            self._index.use(files)
        self._index.reset(slots, np.empty(0, dtype=np.int64),
                          json.loads(self._meta("scopes") or "[]"))
        self._index_rows("WHERE i.pending = 0",
                         stamp=None if self.path == ":memory:" else stamp_of(self._meta))
        self._version = version

    def _index_rows(self, where: str, params: Sequence[Any] = (),
                    stamp: dict[str, object] | None = None) -> None:
        """Mark the rows matching ``where`` (items ``i``) live in the index; given the
        ``stamp`` of the snapshot's state, from the file kept for it when there is one."""
        kept = None if stamp is None else read_live(self.path, stamp, self._index.slots)
        slots, rowids = read_rows(self._db, self.path, self._index.slots, where, params) \
            if kept is None else kept
        self._index.note_rowids(slots, rowids)
        self._index.set_alive(slots, True)

    def _refresh(self) -> None:
        """Reload if another process committed since we last looked (cheap pragma check), or
        if a failed write left the index unsure. Inside a snapshot or write transaction."""
        if self._version == -1 or (self.path != ":memory:"
                                   and self._db.data_version() != self._version):
            self._load()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction under the index lock, the index brought to the file's state
        first. The index changes inside too; if anything fails (the commit included: a full
        disk), the file rolls back and the index is reloaded at the next read."""
        self._check_writable()
        with self._index.lock:
            try:
                with self._db.transaction():
                    # Inside BEGIN IMMEDIATE no other connection can commit, and this
                    # connection's own commits leave data_version as it is: the version
                    # recorded here stays the index's after COMMIT.
                    self._refresh()
                    yield
                    # Renewed in every commit: another process, or a later run, can tell
                    # the store changed (RevisionedStore).
                    schema.write_meta(self._db, "revision", secrets.token_hex(8))
                    if self.path != ":memory:":  # the live slots of the state committed
                        keep_live(self.path, stamp_of(self._meta), self._files, self._index)
            except BaseException:
                self._version = -1
                raise

    # -- writes ---------------------------------------------------------------------------

    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        """``add_many`` in one transaction: all rows are stored, or none.

        The vectors go to fresh slots, flushed to disk before the rows naming them commit; a
        replaced row's old slot is left as it is (a snapshot may still read it)."""
        texts = take_texts(metas)  # stored once, in items.text (see schema.m003)
        docs = [optional_str(m.get("doc_iri")) for m in metas]
        versions = [optional_str(m.get("version")) for m in metas]
        scopes = [_scope(m) for m in metas]
        folds = [fold(*row) for row in zip(ids, metas, texts, docs, versions, scopes)]
        payload = [arguments.metadata_json(kept, f"the metadata of {id!r}")
                   for id, (kept, _) in zip(ids, folds)]
        with self._writing():
            existing = {r[0]: (r[1], r[2]) for r in self._db.execute(
                "SELECT id, rowid, slot FROM items WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),))}
            rowids = self._assign_rowids(ids, existing)
            first = int(self._meta("vector_slots") or 0)
            self._files.append(first, unit, make_keys(ids, docs, self._scope_codes(scopes), unit))
            self._db.executemany(
                "INSERT OR REPLACE INTO items(rowid, id, metadata, doc_iri, scope, version,"
                " pending, slot, folded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (r, i, p, d, s, v, int(pending), first + n, f)
                    for n, (r, i, p, d, s, v, (_, f)) in enumerate(zip(
                        rowids, ids, payload, docs, scopes, versions, folds))
                ],
            )
            schema.write_meta(self._db, "vector_slots", str(first + len(ids)))
            self._keywords.write(rowids, texts, pending)
            self._index.grow(first + len(ids))
            self._index.note_rowids(np.arange(first, first + len(ids), dtype=np.int64),
                                    np.asarray(rowids, dtype=np.int64))
            self._index.set_alive((slot for _, slot in existing.values()), False)
            if not pending:
                self._index.set_alive(range(first, first + len(ids)), True)
        self._compact_if_worth_it()

    def _compact_if_worth_it(self) -> None:
        """After a write: rewrite the vector files without their garbage when it outweighs
        the rows (:mod:`.compaction`). Never inside a caller's transaction: the old files are
        deleted only after the switch has committed."""
        if self._db.in_transaction or not worth_compacting(self._index.slots, len(self._index)):
            return
        old = self._files
        with self._writing():
            rows = int(self._db.execute("SELECT COUNT(*) FROM items")[0][0])
            if not worth_compacting(self._index.slots, rows):
                return
            fresh = compact(self._db, old, self._index.slots)
        self._files = fresh
        self._index.use(fresh)
        self._version = -1  # slots renumbered: read the index again at the next read
        old.remove()

    def _scope_codes(self, scopes: list[str]) -> list[int]:
        """Each scope's code, recording new scopes (in the caller's write transaction)."""
        codes = self._index.scope_codes
        new = [s for s in dict.fromkeys(scopes) if s not in codes]
        if new:
            for scope in new:
                codes[scope] = len(codes)
            schema.write_meta(self._db, "scopes", json.dumps(list(codes)))
        return [codes[s] for s in scopes]

    def _assign_rowids(self, ids: list[str], existing: Mapping[str, tuple[int, int]]
                       ) -> list[int]:
        next_rowid = int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM items")[0][0]) + 1
        rowids = []
        for id in ids:
            if id in existing:
                rowids.append(existing[id][0])
            else:
                rowids.append(next_rowid)
                next_rowid += 1
        return rowids

    # -- reads ----------------------------------------------------------------------------

    @reads
    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        rows, named = self._rows(ids, scopes)
        while True:
            slots, scores, plan, candidates = self._index.search(query, k, rows)
            names = self._names(slots)
            if len(names) < len(slots):  # the vector files hold a slot no row names
                raise corrupt_file(self.path, "a live vector slot has no row in its table")
            strangers = [] if named is None else [
                s for s in slots.tolist() if not named.admits(*names[s])]
            if not strangers or rows is None:
                break
            # A hash collision let in a row the names do not stand for: rank without it.
            rows = np.setdiff1d(rows, strangers)
        self._check_vectors(slots)
        ranked = sorted(((names[s][0], score) for s, score in zip(slots.tolist(), scores.tolist())),
                        key=lambda pair: (-pair[1], pair[0]))[:k]
        return self._hits(ranked, with_metadata), SearchPlan(plan, candidates, exhaustive=True)

    def _names(self, slots: np.ndarray) -> dict[int, tuple[str, str | None]]:
        """slot -> (id, doc_iri) of the rows naming ``slots``."""
        if not len(slots):
            return {}
        rows = self._db.execute(
            "SELECT slot, id, doc_iri FROM items WHERE slot IN (SELECT value FROM json_each(?))",
            (json.dumps(slots.tolist()),))
        return {int(r[0]): (r[1], r[2]) for r in rows}

    def _check_vectors(self, slots: np.ndarray) -> None:
        """Raise ContextDamagedError if a vector read from the file is not the one written."""
        if len(slots):
            written = self._files.keys(self._index.slots)["crc"][slots]
            if not np.array_equal(vector_checksums(self._index.vectors()[slots]), written):
                raise corrupt_file(self._files.paths.get("f32", self.path),
                                   "a vector does not match its checksum")

    def _hits(self, ranked: list[tuple[str, float]], with_metadata: bool) -> list[VectorHit]:
        metadata = self._metadata([id for id, _ in ranked]) if with_metadata else {}
        return [VectorHit(id, score, metadata.get(id, {})) for id, score in ranked]

    def _rows(self, ids: Iterable[str] | None, scopes: Sequence[str] | None
              ) -> tuple[np.ndarray | None, Candidates | None]:
        """In a snapshot: the live slots named by ``ids`` (vector ids or document IRIs) and in
        ``scopes`` (None when that is every row), and the names to check hits against.

        The same ``ids`` tuple at the same state and scopes is looked up once: a few recent
        answers are kept (a tuple cannot change, so its identity names its contents)."""
        key = None
        if isinstance(ids, tuple):
            key = (id(ids), None if scopes is None else tuple(scopes))
            cached = self._memo.get(key)
            if cached is not None and cached[0] is ids and cached[1] == self._index.generation:
                self._memo.move_to_end(key)
                answer: tuple[np.ndarray | None, Candidates | None] = cached[2]
                return answer
        named = None if ids is None else self._index.rows_for(
            ids if isinstance(ids, (list, tuple)) else list(ids), scopes)
        rows = None if named is None else named.slots
        if scopes is not None and ids is None:
            rows = self._index.in_scopes(list(scopes), rows)
            if len(rows) == len(self._index):
                rows = None  # every row is in scope: a plain full scan
        if key is not None:
            self._memo[key] = (ids, self._index.generation, (rows, named))
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return rows, named

    @reads
    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs
        (only the latter for a ``DocumentIris``), sorted."""
        names = json.dumps([i for i in iris if isinstance(i, str)])  # others name nothing
        ids = "0" if isinstance(iris, DocumentIris) else "id IN (SELECT value FROM json_each(?))"
        return [r[0] for r in self._db.execute(
            f"SELECT id FROM items WHERE pending = 0 AND ({ids}"
            " OR doc_iri IN (SELECT value FROM json_each(?))) ORDER BY id",
            (names,) if isinstance(iris, DocumentIris) else (names, names))]

    @reads
    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata of the ids that exist, as search hits carry it (no vectors read)."""
        return self._metadata(list(arguments.check_ids(ids)))

    def _metadata(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        rows = self._db.execute(
            f"SELECT id, {ROW} FROM items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),))
        return {r[0]: unfold(*r) for r in rows}

    @reads
    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """Live vectors (staged ones are not counted until published): the index's count at
        this snapshot (a SQL count reads an index of every row: 0.2 s at a million). With
        ``filters``, the live rows :meth:`find` would find."""
        return len(self._index) if not filters else self._count_matching(filters)

    @property
    def closed(self) -> bool:
        return self._db.closed

    def close(self) -> None:
        """Close the file (safe to call twice); any later call raises a ConfigurationError
        saying the store is closed."""
        self._db.close()
        self._files.close()


def _scope(metadata: Mapping[str, Any]) -> str:
    return str(metadata.get("scope") or DEFAULT_SCOPE)
