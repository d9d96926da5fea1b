"""The embedded knowledge graph: a thin wrapper over ``pyoxigraph.Store``."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyoxigraph as ox

from trails.errors import SparqlError, StorageError
from trails.faults import closed, storage_fault
from trails.kg import hand_links
from trails.kg.base import Dataset
from trails.kg.bindings import apply_bindings
from trails.kg.carried import Carry, Touched
from trails.kg.exchange import QuadExport, load_quads
from trails.kg.function_calls import FunctionCalls
from trails.kg.hand_links import HandLinks, minted_links
from trails.kg.loads import ReplaceOption
from trails.kg.opening import Stamp, kept_in_the_log, open_store, patience, vanished_while_moving
from trails.kg.parse_errors import parse_problem
from trails.kg.rdfio import RdfSource
from trails.kg.reserved import check_nquads, check_quads, check_removal, check_update
from trails.kg.result import QueryResult, query_output
from trails.kg.sparql import PREFIXES, check_filter, check_limits, iris_or_error, refuse_service
from trails.kg.variables import check_bound
from trails.recorded import Settings, Where, relative
from trails.scopes import DEFAULT_SCOPE, dataset_options, scope_graph, scope_of_graph

if TYPE_CHECKING:
    from typing import Self

__all__ = ["GRAPH_DIR", "OxigraphGraph"]

GRAPH_DIR = "graph"  # where a context keeps its embedded graph, unless settings say

T = TypeVar("T")


class OxigraphGraph(QuadExport):
    """A knowledge graph in memory (``path=None``) or in a directory, queried with SPARQL 1.1.

    Queries see the union of all graphs unless ``scopes`` confines them: then the scopes'
    named graphs are both the default graph and the only graphs ``GRAPH``/``FROM NAMED`` can
    reach, whatever the query text says.

    ``read_only=True`` opens a view of the directory as it is at that moment, beside the one
    writer Oxigraph allows; :meth:`refresh` opens a newer one. A full disk, a read-only mount
    or a corrupt file raises a StorageError (ContextDamagedError) naming the directory, and a
    store that met one is reopened at the next call; after :meth:`close` every call says the
    graph is closed.

    >>> kg = OxigraphGraph()
    >>> kg.update('INSERT DATA { <https://x/a> schema:name "A" }')
    >>> kg.query("SELECT ?n WHERE { ?s schema:name ?n }").rows
    [{'n': 'A'}]
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> None:
        self.path = None if path is None else os.path.abspath(path)  # whatever cwd is later
        self.read_only = read_only
        self.prefixes = dict(PREFIXES)
        self._functions: dict[str, tuple[Callable[..., Any], bool]] = {}
        self._closed = False
        self._opening = threading.Lock()  # one reopen at a time: a second would find it locked
        # next() on a count is atomic: two threads moving it on never land on an old number.
        self._states = itertools.count(1)
        self._generation = 0
        self._quiet = threading.local()  # writes that leave the revision (unrevised())
        self._stamp = Stamp(self.path, read_only)
        self.hand_links = HandLinks(self.path)  # writes that may have moved chunk links
        self._carry = None if self.path is None or read_only else Carry(self.path, self.select_tsv)
        self._store: ox.Store | None = self._open()
        self._stamp.opened(self._stamp.revision)

    def _open(self) -> ox.Store:
        store, self._view_state = open_store(self.path, read_only=self.read_only)
        return store

    def refresh(self) -> None:
        """Open a read-only graph (a view of the moment it opened) again, to see what its
        writer committed since; a writable graph always sees the latest state.

        Raises StorageError when the graph cannot be opened again (it stays as it was)."""
        if self.read_only and self.path is not None and not self._closed:
            with self._opening:
                # Before and after: a read overlapping the swap is never credited to either view.
                self._moved()
                before = self._stamp.on_disk()
                self._store = self._open()
                self._stamp.opened(before)
                self._moved()

    @property
    def generation(self) -> int:
        """Changes whenever what this object reads may have: each write through it (before
        and after), :meth:`refresh`, each use of :attr:`store` (``GenerationGraph``)."""
        return self._generation

    @property
    def revision(self) -> str | None:
        """A stamp beside the store's files that every write through this class renews, so a
        later process can tell whether the graph changed (``RevisionGraph``); a view has the
        one of when it opened. None: none written since it existed."""
        if self._stamp.revision is None and not self.read_only:
            self._stamp.revision = self._stamp.on_disk()
        return self._stamp.revision

    @property
    def settled_revision(self) -> str | None:
        """The stamp naming exactly the state read here (None: none does, e.g. mid-write or
        the store handed out); :meth:`unrevised` writes are not covered (ADR 0029)."""
        return self._stamp.settled()

    @contextlib.contextmanager
    def unrevised(self) -> Iterator[None]:
        """Writes in this block (on this thread) leave :attr:`revision` alone: records of the
        graph's use (the audit trail), which change nothing a query over documents sees."""
        self._quiet.on = True
        try:
            yield
        finally:
            self._quiet.on = False

    def touching(self, subjects: Callable[[], Touched | None]
                 ) -> AbstractContextManager[None]:
        """Writes in this block (this thread) change only triples on ``subjects()``: kept
        filter columns are carried across them (``kg/carried.py``)."""
        return minted_links(None if self._carry is None else
                            self._carry.touching(subjects, self._stamp.settled()))

    def carry_columns(self) -> None:
        """Write the kept filter columns for the revision the declared writes settled on."""
        if self._carry is not None and not self._closed:
            self._carry.carry(self._stamp.settled())

    def _moved(self) -> None:
        self._generation = next(self._states)

    @property
    def _s(self) -> ox.Store:
        """The open store; reopened if a storage fault dropped it (a full disk leaves RocksDB
        refusing every write until it is reopened)."""
        if self._closed:
            raise closed("knowledge graph", self.path)
        store = self._store
        if store is None:
            with self._opening:
                if self._store is None:  # a newer view, for a read-only graph: a new state
                    self._moved()
                    self._stamp.exact = False  # newer than its stamp, perhaps
                    self._store = self._open()
                    self._moved()
                store = self._store
        return store

    @contextlib.contextmanager
    def _faults(self, action: str, links: Callable[[], bool] | None = None) -> Iterator[None]:
        """A full disk, read-only mount or corrupt file met inside as a StorageError naming
        the directory; the store is dropped, so the next call reopens it. A write moves the
        :attr:`generation` as it starts and ends: no overlapping read is credited after it.
        ``links()``: whether the write may change chunk links (``kg/hand_links.py``)."""
        writing = action.startswith("writing")
        stamped = writing and not getattr(self._quiet, "on", False)
        if writing:
            self._moved()
        if stamped and self._carry is not None:
            self._carry.written()
        try:
            with (self._stamp.writing() if stamped else contextlib.nullcontext(),
                  self.hand_links.writing(links)):
                yield
        except (OSError, RuntimeError) as exc:
            fault = storage_fault(exc, self.path or "the in-memory graph", action)
            if fault is None:
                raise
            if self.path is not None:
                self._store = None  # releases RocksDB (and its lock) now: nothing else holds it
                self._moved()
            raise fault from exc.with_traceback(None)
        finally:
            if writing:
                self._moved()

    def _read(self, read: Callable[[], T]) -> T:
        """``read()`` on the store. A read-only view opens some files only when a query needs
        them; a writer's compaction may have deleted those ("No such file"): then a newer view
        is opened and the read runs again (``OPEN_PATIENCE`` seconds at most)."""
        for last in patience():
            opened_at = self._view_state
            try:
                with self._faults("reading the graph in"):
                    return read()
            except StorageError as exc:
                if (last or not self.read_only or self.path is None
                        or not vanished_while_moving(str(exc.__cause__), self.path, opened_at)):
                    raise
                # _faults dropped the store: the next try opens a newer view
        raise AssertionError("unreachable")  # pragma: no cover - the last try raises

    @property
    def store(self) -> ox.Store:
        """The pyoxigraph store, for anything this wrapper does not cover; writes through it
        bypass the stamp, so from here on no stamp this object writes is ``settled``."""
        self._moved()
        if not self.read_only and not self._closed:
            self.hand_links.handed_out()  # raw writes may move chunk links unseen
        return self._stamp.handed_out(self._s)

    @property
    def functions(self) -> frozenset[str]:
        """IRIs of the custom SPARQL functions registered with :meth:`register_function`."""
        return frozenset(self._functions)

    def register_function(self, iri: str, fn: Callable[..., Any], *, per_query: bool = False) -> None:
        """Make ``<iri>(...)`` callable inside this graph's queries (and retrieval filters).

        ``fn`` takes pyoxigraph terms and returns a term, or None for an unbound value. With
        ``per_query=True`` it is instead a factory, called once per query with the query's
        ``scopes`` (None: all graphs) and returning that query's function, so per-query state
        (a cache) lives exactly one query. An exception raised by the function is re-raised
        from ``query``/``select_iris`` once evaluation ends (pyoxigraph alone would turn it
        into an unbound value). Registering an IRI again replaces the function.

        >>> kg = OxigraphGraph()
        >>> kg.register_function("https://x/twice", lambda t: ox.Literal(2 * int(t.value)))
        >>> kg.query("SELECT ?v WHERE { BIND(<https://x/twice>(21) AS ?v) }").rows
        [{'v': 42}]
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        ox.NamedNode(iri)  # checks the IRI
        self._functions[iri] = (fn, per_query)

    def query(self, sparql: str, bindings: Mapping[str, Any] | None = None, *,
              scopes: Sequence[str] | None = None) -> QueryResult | bool | list[ox.Triple]:
        """Run a SPARQL query: SELECT -> QueryResult, ASK -> bool, CONSTRUCT -> list of triples.

        ``bindings`` maps variable names to Python values or RDF terms; they are bound as
        terms, never pasted into the text.

        Raises:
            SparqlError: the query does not parse or fails to evaluate.
        """
        check_limits(sparql, unscoped=scopes is None)  # a parser crash is no answer either
        if scopes is not None:  # a scoped caller may read only its scopes, never call out
            refuse_service(sparql, self.prefixes)
        text = apply_bindings(sparql, bindings)
        return self._evaluate(text, dataset_options(scopes), FunctionCalls(self._functions, scopes))

    def query_dataset(self, sparql: str, dataset: Dataset, *, scopes: Sequence[str],
                      base_iri: str | None = None) -> QueryResult | bool | list[ox.Triple]:
        check_limits(sparql)
        refuse_service(sparql, self.prefixes)
        graphs = {"default_graph": list(dataset.default), "named_graphs": list(dataset.named),
                  "base_iri": base_iri}
        return self._evaluate(sparql, graphs, FunctionCalls(self._functions, scopes))

    def _evaluate(self, text: str, graphs: dict[str, Any],
                  calls: FunctionCalls) -> QueryResult | bool | list[ox.Triple]:
        try:
            output = self._read(lambda: query_output(self._s.query(
                text, prefixes=self.prefixes, **graphs, **calls.options())))
        except SyntaxError as exc:
            raise SparqlError(parse_problem(text, self.prefixes, str(exc))) from exc
        except (RuntimeError, ValueError) as exc:
            calls.check()
            raise SparqlError(f"SPARQL query failed: {exc}") from exc
        calls.check()
        return output

    def select_iris(self, sparql: str, bindings: Mapping[str, Any] | None = None, *,
                    scopes: Sequence[str] | None = None) -> list[str]:
        """Run a retrieval filter (checked with ``check_filter``) and return its IRIs in order.

        Non-IRI values of the projected variable are skipped (only IRIs: ``iris_or_error``);
        duplicates keep the first place."""
        # A SELECT of exactly one variable: one TSV column, an unbound value an empty line.
        variable = check_filter(sparql, self.prefixes, functions=self._functions)
        check_bound(sparql, (bindings or {}).keys())  # a forgotten binding is no empty answer
        lines = self.select_tsv(apply_bindings(sparql, bindings), scopes).decode().split("\n")
        iris = list(dict.fromkeys(i[1:-1] for i in lines[1:] if i[:1] == "<" and i[:2] != "<<"))
        return iris_or_error(variable, iris, [] if iris else [i for i in lines[1:] if i][:1])

    def select_tsv(self, sparql: str, scopes: Sequence[str] | None = None) -> bytes:
        """A SELECT's solutions as Oxigraph writes them in TSV (terms as SPARQL text), for
        reading many terms at once (``select_iris``, ``kg/filter_index.py``); unchecked.
        Raises SparqlError when the query does not parse or fails to evaluate."""
        calls = FunctionCalls(self._functions, scopes)
        try:
            data = self._read(lambda: self._select_tsv(sparql, scopes, calls))
        except (RuntimeError, ValueError, SyntaxError) as exc:
            calls.check()
            raise SparqlError(f"SPARQL filter failed: {exc}") from exc
        calls.check()
        return data

    def _select_tsv(self, text: str, scopes: Sequence[str] | None,
                    calls: FunctionCalls) -> bytes:
        solutions = self._s.query(text, prefixes=self.prefixes, **dataset_options(scopes),
                                  **calls.options())
        # Serialising in Rust and splitting the text is ~2x faster than building a Python
        # term per solution (100,000 candidates: ~200 ms instead of ~380 ms). In TSV an IRI is
        # a line "<iri>"; literals start with a quote or digit, blank nodes with "_:", triple
        # terms with "<<", unbound values are empty; literals escape their newlines.
        if not isinstance(solutions, ox.QuerySolutions):  # check_filter allows SELECT only
            raise SparqlError("a retrieval filter must be a SELECT query")
        return solutions.serialize(format=ox.QueryResultsFormat.TSV) or b""

    def update(self, sparql: str, bindings: Mapping[str, Any] | None = None) -> None:
        """Run a SPARQL 1.1 update (INSERT DATA, DELETE WHERE, ...)."""
        self._check_writable()
        text = apply_bindings(sparql, bindings) if bindings else sparql
        check_update(text, self.prefixes)
        try:
            may_change = functools.partial(hand_links.update_may_change_links, text)
            with self._faults("writing the graph in", may_change):
                self._s.update(text, prefixes=self.prefixes)
        except SyntaxError as exc:
            raise SparqlError(f"SPARQL update does not parse: {exc}") from exc
        except (RuntimeError, ValueError) as exc:
            raise SparqlError(f"SPARQL update failed: {exc}") from exc

    def add(self, quad: ox.Quad) -> None:
        self.extend([quad])

    def extend(self, quads: Iterable[ox.Quad]) -> None:
        """Add quads in one transaction: all or none."""
        self._check_writable()
        listed = check_quads(quads)
        with self._faults("writing the graph in", lambda: hand_links.quads_change_links(listed)):
            self._s.extend(listed)

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None:
        """Add many quads fast, without transactional guarantees (ingestion's streaming path)."""
        self._check_writable()
        listed = check_quads(quads)
        with self._faults("writing the graph in", lambda: hand_links.quads_change_links(listed)):
            self._s.bulk_extend(listed)

    def load_nquads(self, text: str) -> None:
        """Add N-Quads text in one transaction: all or none (``NQuadsGraph``).

        Ingestion's fast path: parsed in Rust without the GIL, no Python ``Quad`` objects
        (~10 µs each). The parser is lenient: the text must come from a trusted writer.

        Raises:
            ConfigurationError: the graph was opened read-only.
            SyntaxError: the text is not N-Quads (with its line and column).
        """
        self._check_writable()
        with self._faults("writing the graph in", lambda: hand_links.nquads_may_change_links(text)):
            self._s.load(check_nquads(text), format=ox.RdfFormat.N_QUADS, lenient=True)

    def remove_graph(self, graph: ox.NamedNode) -> None:
        self._check_writable()
        check_removal(graph)
        with self._faults("writing the graph in", lambda: True):
            self._s.remove_graph(graph)

    def load(self, source: RdfSource | Any, format: str | None = None, scope: str | None = None,
             *, base_iri: str | None = None, replace: ReplaceOption = False,
             allow_empty: bool = False) -> int:
        """Load RDF into the graph in one transaction; how many quads the source held.

        ``source``: a file (a ``Path``, or a one-line ``str`` naming a file or ending with
        an RDF suffix), RDF content (``bytes``, any other ``str``), or an rdflib graph. The
        format: ``format`` (turtle, trig, ntriples, nquads, n3, rdfxml, jsonld, a media
        type), else the file's suffix, else Turtle/TriG (JSON-LD for ``{``). Without ``scope`` quads keep their graphs and triples go into the default
        scope; with ``scope`` triples go into that scope's graph (scoped filters see them),
        and RDF naming graphs of its own is refused. Loading the same IRIs and literals again
        adds nothing; blank nodes are new on every load. ``replace=True`` (a file) or a name
        (any source) replaces what it loaded into the scope before (ADR 0051; ``allow_empty``).

        >>> kg = OxigraphGraph()
        >>> kg.load(b'<https://x/a> <https://x/p> "v" .', scope="legal")
        1
        >>> kg.scopes()
        ['default', 'legal']

        Raises:
            RdfSyntaxError: the input does not parse (file, line and column named); nothing
                is loaded.
            ConfigurationError: no such file, an unknown format, ``scope=`` (or ``replace``)
                with named graphs, an empty source replacing (``allow_empty``), a read-only graph.
        """
        self._check_writable()
        with self._faults("writing the graph in"):  # methods of this graph, not the store's:
            # a traceback of a failed load must not keep the store (and its lock) alive.
            return load_quads(self.extend, source, format, scope, base_iri, replace=replace,
                              update=self.update, query=self.query, allow_empty=allow_empty)

    def _quads(self, scope: str | None) -> Iterable[ox.Quad]:
        graph = None if scope is None else scope_graph(scope)
        return self._s.quads_for_pattern(None, None, None, graph)

    def scopes(self) -> list[str]:
        """The scopes that hold triples: ``default`` and every scope's named graph that is not
        empty (Oxigraph keeps a graph whose last triple went, as a delete leaves it)."""
        named = self._read(lambda: [s for g in self._s.named_graphs() if (s := scope_of_graph(
            g.value)) and next(iter(self._s.quads_for_pattern(None, None, None, g)), None)])
        return [DEFAULT_SCOPE, *sorted(s for s in named if s != DEFAULT_SCOPE)]

    def __len__(self) -> int:
        return self._read(lambda: len(self._s))

    def flush(self) -> None:
        if self._stamp.writes_here() and self._store is not None:
            with self._faults("flushing the graph in"):
                self._store.flush()

    def _check_writable(self) -> None:
        self._stamp.check_writable()

    def close(self) -> None:
        """Flush (refused for lack of space: only logged, ``kept_in_the_log``) and release
        the store, even when the flush fails; twice is fine; later calls say it is closed."""
        if self._closed:
            return
        try:
            with kept_in_the_log():
                self.carry_columns()
                self.flush()
        finally:
            self._closed = True
            self._store = self._stamp.let_go(self._store)  # pyoxigraph closes on drop
        self._stamp.closed()

    def __repr__(self) -> str:
        where = "memory" if self.path is None else self.path
        state = "closed" if self._closed else f"quads={len(self)}"
        return f"<OxigraphGraph {where} {state}>"

    # -- trails.json (trails.recorded.Recordable) ---------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        return cls(where.path(settings.get("path"), GRAPH_DIR), read_only=where.read_only)

    def recorded_settings(self, root: Path) -> Settings | None:
        return None if self.path is None else {"path": relative(self.path, root)}
