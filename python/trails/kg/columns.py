"""A column of the graph: one predicate's triples as codes, and the tests of its values.

:class:`Column` holds a predicate's triples (``kg/filter_index.py`` reads them once per graph
state, ``kg/column_files.py`` keeps them): the subject's and the object's code per triple, and
the distinct objects as terms. :func:`passing` runs a filter's FILTERs on a value in Oxigraph
itself, over the distinct values only (a small store of one triple per value), so their
meaning is the engine's own, at a cost in distinct values, not in triples (ADR 0029).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyoxigraph as ox

from trails._arrays import firsts
from trails.errors import SparqlError
from trails.kg.planning import Other
from trails.kg.sparql_text import WORD_CHAR
from trails.kg.variables import written_variables

__all__ = ["Column", "Term", "bound_values", "passing", "unused"]

_VALUE = "urn:trails:value"

Term = ox.NamedNode | ox.Literal | ox.BlankNode


@dataclass
class Column:
    """The triples of one predicate (within one dataset): subjects and objects as codes."""

    subjects: np.ndarray  # int64: the subject code of each triple (FilterIndex.names)
    objects: np.ndarray  # int64: the object code of each triple (index into values)
    values: list[str]  # the distinct objects, as TSV terms
    codes: dict[str, int]
    plain: bool  # no blank node or triple term among the values
    _store: ox.Store | None = field(default=None, repr=False)
    distinct: bool = field(default=False, repr=False)  # no subject in two rows

    def __post_init__(self) -> None:
        # Rows in subject order: when no subject repeats (a document's one date), the rows a
        # test selects are already sorted and unique, with no np.unique over half a corpus.
        order = np.argsort(self.subjects, kind="stable")
        self.subjects, self.objects = self.subjects[order], self.objects[order]
        self.distinct = not bool(np.any(self.subjects[1:] == self.subjects[:-1]))

    def subjects_with(self, codes: np.ndarray) -> np.ndarray:
        """The (sorted, unique) subject codes of the rows whose object code is in ``codes``."""
        if not len(codes):
            return np.empty(0, dtype=np.int64)
        chosen = self.subjects[np.isin(self.objects, codes)]
        return chosen if self.distinct else chosen[firsts(chosen)]

    def store(self) -> ox.Store:
        """The distinct values as triples ``<urn:trails:value#i> <urn:trails:value> value``:
        FILTERs on a value run here, in Oxigraph, once per value."""
        if self._store is None:
            store = ox.Store()
            body = " ".join(f"<{_VALUE}#{i}> <{_VALUE}> {value} ."
                            for i, value in enumerate(self.values))
            store.update(f"INSERT DATA {{ {body} }}")
            self._store = store
        return self._store


def _written(name: str, text: str) -> bool:
    """Whether ``?name`` (or ``$name``) is written in ``text``."""
    return re.search(rf"[?$]{re.escape(name)}(?!{WORD_CHAR})", text) is not None


def bound_values(body: str, terms: Mapping[str, Term]) -> str:
    """``VALUES`` of the bindings ``body`` reads, to start it with ("" when it reads none)."""
    written = written_variables(body)
    used = sorted(name for name in terms if name in written)
    return "" if not used else (f"VALUES ({' '.join('?' + v for v in used)}) "
                                f"{{ ({' '.join(str(terms[v]) for v in used)}) }} ")


def unused(slot: str, body: str, taken: str = "") -> str:
    """``slot``, lengthened until ``body`` writes no variable of that name (nor is it
    ``taken``): a variable of the index's own in a query around the user's text."""
    while slot == taken or _written(slot, body):
        slot += "_"
    return slot


def passing(column: Column, name: str, conditions: Sequence[Other], prologue: str,
             prefixes: Mapping[str, str], terms: Mapping[str, Term]) -> np.ndarray:
    """The value codes of ``column`` that every FILTER in ``conditions`` keeps, evaluated by
    Oxigraph over the distinct values (the filters name ``?name`` and bound variables only)."""
    body = " ".join(condition.text for condition in conditions)
    values = bound_values(body, terms)
    slot = unused("_trails_code", body, name)  # the value's code
    query = f"{prologue}SELECT ?{slot} WHERE {{ {values}?{slot} <{_VALUE}> ?{name} . {body} }}"
    try:
        solutions = column.store().query(query, prefixes=dict(prefixes))
        assert isinstance(solutions, ox.QuerySolutions)  # a SELECT
        data = solutions.serialize(format=ox.QueryResultsFormat.TSV) or b""
    except (SyntaxError, ValueError, RuntimeError, OSError) as exc:  # the graph answers then
        raise SparqlError(f"a test of the values of ?{name} failed: {exc}") from exc
    # One code per line, read in C: a date range over ten years passes thousands of values.
    codes = _CODE.findall(data)
    return np.array(codes, dtype=np.bytes_).astype(np.int64) if codes else np.empty(0, np.int64)


_CODE = re.compile(rb"^<" + re.escape(_VALUE.encode()) + rb"#(\d+)>", re.MULTILINE)
