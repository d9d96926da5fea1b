"""Filters on a resource's properties answered from columns of the graph, not a scan (ADR 0029).

A filter lifted to documents (``kg/planning.py``: ``SELECT ?doc`` over triple patterns and
FILTERs) mostly tests properties of documents: ``?doc schema:dateCreated ?d . FILTER(?d >=
?since)``, ``?doc meta:jurisdiction "EU"``, ``?doc meta:topic ?t . ?t rdfs:subClassOf*
?broad``, ``FILTER NOT EXISTS { ?doc meta:classification ?c }``; a chunk-level one, a chunk's
(``?iri schema:position ?p``). Oxigraph walks every matching triple each time. Here a
predicate's triples are read once per graph state into a **column** (``kg/columns.py``: one
row per triple, the subject's code and the object's code, and the distinct objects as
terms), and a filter becomes array operations over it:

- ``?doc P <term>`` (a constant or a bound variable): the rows whose object is that term (RDF
  term equality, as a triple pattern matches);
- ``?doc P ?v`` with FILTERs on ``?v`` alone: the FILTERs run in Oxigraph itself over the
  column's *distinct* values (a small store of one triple per value), so their meaning is the
  engine's own, at a cost in distinct values (a few thousand dates), not in documents;
- ``?doc P ?t`` where ``?t`` joins patterns that do not mention ``?doc`` (a taxonomy): those
  patterns run in Oxigraph as ``SELECT DISTINCT ?t`` (small by nature; a large answer gives
  up), then the rows whose object is one of them;
- ``FILTER NOT EXISTS { ?doc P <term-or-variable> }``: the documents found by the rest, less
  those rows' subjects;
- ``OPTIONAL { ?doc P ?d } FILTER(!BOUND(?d) || test of ?d)``: the documents found by the rest,
  less those with a value of P of which none passes the test.

Patterns on ``?doc`` intersect; a UNION's branches unite (``kg/unions.py``). Anything else
(another OPTIONAL, paths on ``?doc``, a variable shared by two of ``?doc``'s patterns, a FILTER
on two columns, blank nodes or triple terms among the values) is not answered here:
:meth:`FilterIndex.documents` returns None and the filter runs in Oxigraph as before. Nothing
here guesses a SPARQL semantics: every comparison, function and term equality is evaluated by
Oxigraph or is plain term identity.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from trails._arrays import firsts
from trails.kg.column_files import (
    ColumnFiles,
    Kept,
    RunTsv,
    SubjectCodes,
    keepable,
    read_rows,
    tsv_rows,
)
from trails.kg.column_plans import ColumnPlan, column_plan
from trails.kg.columns import Column, Term, bound_values, passing, unused
from trails.kg.planning import IS_PART_OF, RDF_TYPE, Other, Triple
from trails.kg.unions import distributed

__all__ = ["SATELLITE_ROWS", "FilterIndex", "Selected"]

# Patterns that join the documents' values (a taxonomy) may select this many values at most.
SATELLITE_ROWS = 100_000
# Solutions of patterns joined to nothing of the documents' (``?claim ex:filed ?c``) the
# columns answer one by one; past this the graph joins them.
OUTER_ROWS = 64


class Selected(list[str]):
    """IRIs a :class:`FilterIndex` selected, with ``coded``: ``(token, names, codes)``, the
    index's token, its names so far (an object array, only ever appended to while the token
    stays the same) and the IRIs' places among them. A store that hashes names hashes an
    index's names once and then picks a filter's by code (``slot_index.SlotIndex._keys``).
    ``others``: how many blank nodes and triple terms it selected too (no IRIs, left out)."""

    def __init__(self, iris: list[str], coded: tuple[object, np.ndarray, np.ndarray],
                 others: int = 0) -> None:
        super().__init__(iris)
        self.coded = coded
        self.others = others


class FilterIndex:
    """Columns of one graph state (one dataset: the scopes a filter runs in), built on demand.

    ``run`` evaluates a SELECT on the graph and returns Oxigraph's TSV; a FilterIndex must be
    dropped when the graph changes (the caller keeps one per graph generation). With ``files``
    (the graph's settled revision when the index was made) columns are kept on disk and read
    back (``kg/column_files.py``) while ``current()`` says the graph still shows that revision.
    """

    def __init__(self, run: RunTsv, scopes: Sequence[str] | None,
                 files: ColumnFiles | None = None,
                 current: Callable[[], bool] = lambda: False) -> None:
        self._run = run
        self._files = files
        self._current = current
        self._scopes = None if scopes is None else list(scopes)
        self._lock = threading.Lock()
        self._columns: dict[str, Column | None] = {}
        self._typed: dict[str, np.ndarray | None] = {}
        self._subject_codes = SubjectCodes()
        self.names = self._subject_codes.names  # subject code -> subject term (TSV)
        self._iri_array = np.empty(0, dtype=object)  # subject code -> IRI or None (_iris)
        self._is_iri = np.empty(0, dtype=bool)  # subject code -> has an IRI (_iris)
        self._token = object()  # names this index's codes (Selected.coded)

    # -- columns ----------------------------------------------------------------------------

    def column(self, predicate: str) -> Column | None:
        """The column of ``predicate`` (None: too large to keep)."""
        with self._lock:
            if predicate not in self._columns:
                kept = self._kept("column", predicate, f"?s <{predicate}> ?o", pairs=True)
                if not kept.whole:
                    self._columns[predicate] = None
                else:
                    values = list(kept.values)
                    codes = {value: code for code, value in enumerate(values)}
                    plain = not any(v.startswith(("_:", "<<")) for v in values)
                    self._columns[predicate] = Column(self._subject_codes.coded(kept),
                                                      kept.objects, values, codes, plain)
            return self._columns[predicate]

    def _kept(self, kind: str, key: str, pattern: str, *, pairs: bool) -> Kept:
        """The rows of ``pattern`` (``?s`` and ``?o``: a column, or ``?s`` alone: a class's
        members), from this revision's file, else from the graph (then kept in a file)."""
        files = self._files if self._keepable(pattern) else None
        if files is not None and self._current():
            kept = files.load(kind, key)
            if kept is not None:
                return kept
        kept = self._read(pattern, pairs)
        if files is not None and self._current():  # nothing was written while it was read
            files.save(kind, key, kept)
        return kept

    def counted(self, query: str, patterns: Sequence[str], count: Callable[[], int]) -> int:
        """``count()``, the answer of ``query`` (a COUNT of ``patterns``), kept per revision
        like the columns (a fresh process's link checks then read no graph)."""
        files = self._files if all(self._keepable(p) for p in patterns) else None
        if files is not None and self._current():
            kept = files.load("count", query)
            if kept is not None and len(kept.subjects) == 1:
                return int(kept.subjects[0])
        found = count()
        if files is not None and self._current():
            files.save("count", query, Kept(np.array([found], dtype=np.int64),
                                            np.empty(0, np.int64), [], []))
        return found

    def at_hand(self, kind: str, key: str) -> bool:
        """Whether the column (``kind`` "column") or class ("class") ``key`` is read in this
        process or kept for this revision: using it then reads no graph."""
        held = self._columns if kind == "column" else self._typed
        return held.get(key) is not None or (self._files is not None and self._current()
                                             and self._files.has(kind, key))

    def _keepable(self, pattern: str) -> bool:
        return self._files is not None and keepable(self._run, pattern, self._scopes)

    def _read(self, pattern: str, pairs: bool) -> Kept:
        return read_rows(self._run, pattern, pairs, self._scopes)

    def typed(self, term: str) -> np.ndarray | None:
        """The subject codes of ``?s a <term>`` (per class; None: too many to keep)."""
        with self._lock:
            if term not in self._typed:
                kept = self._kept("class", term, f"?s <{RDF_TYPE}> {term}", pairs=False)
                self._typed[term] = np.unique(self._subject_codes.coded(kept)) if kept.whole else None
            return self._typed[term]

    # -- filters ----------------------------------------------------------------------------

    def documents(self, variable: str, items: Sequence[Triple | Other], prologue: str,
                  prefixes: Mapping[str, str], terms: Mapping[str, Term]) -> Selected | None:
        """The IRIs ``SELECT ?variable WHERE { items }`` selects (bindings ``terms``; the
        items' prefixed names resolved with ``prefixes``), or None when the group is not one
        this index answers (then nothing was decided). A UNION: a group per branch."""
        answers: list[np.ndarray] = []
        for group in distributed(items, variable, terms, prefixes) or [list(items)]:
            found_each = self._selected(variable, group, prologue, prefixes, terms)
            if found_each is None:
                return None
            answers.extend(found_each)
        # Each answer is sorted and unique (a column's subjects, or set operations on them).
        found = answers[0] if len(answers) == 1 else np.unique(
            np.concatenate([np.empty(0, dtype=np.int64), *answers]))
        named, is_iri = self._iris()
        iris = found[is_iri[found]]  # blank nodes and triple terms are no documents
        return Selected(named[iris].tolist(), (self._token, named, iris), len(found) - len(iris))

    def _selected(self, variable: str, items: Sequence[Triple | Other], prologue: str,
                  prefixes: Mapping[str, str], terms: Mapping[str, Term],
                  ) -> list[np.ndarray] | None:
        """:meth:`documents`' subject codes for a group without UNION, one sorted array per
        solution of the patterns beyond the documents (None: not answered)."""
        plan = column_plan(variable, items, terms, prefixes)
        if plan is None:
            return None
        solutions = self._outer(plan, prologue, terms) if plan.outer else [{}]
        if solutions is None:
            return None
        answers = [self._subjects(plan, prologue, {**terms, **row}) for row in solutions]
        found = [subjects for subjects in answers if subjects is not None]
        return found if len(found) == len(answers) else None

    def _outer(self, plan: ColumnPlan, prologue: str,
               terms: Mapping[str, Term]) -> list[dict[str, Any]] | None:
        """The solutions of the patterns beyond both the documents and their values, as the
        terms the conditions read (each a term's text, valid where a term is written), or
        None (too many, or a blank node, which no query can name again)."""
        body = " ".join(item.text for item in plan.outer)
        values = bound_values(body, terms)
        names = sorted(plan.outer_tested)
        slot = unused("_trails_found", body)  # a row even with no variable
        rows = tsv_rows(self._run(
            f"{prologue}SELECT DISTINCT {' '.join('?' + n for n in [*names, slot])} WHERE {{ "
            f"{values}{body} BIND(1 AS ?{slot}) }} LIMIT {OUTER_ROWS + 1}", self._scopes))
        if len(rows) > OUTER_ROWS or any(t[:2] in ("_:", "<<") for row in rows for t in row):
            return None
        return [dict(zip(names, row)) for row in rows]

    def _subjects(self, plan: ColumnPlan, prologue: str,
                  terms: Mapping[str, Term]) -> np.ndarray | None:
        """The subject codes (sorted, unique) the plan selects with ``terms`` bound (None: not
        answered)."""
        constants = self._constants(plan, prologue, terms)
        if constants is None:
            return None
        found: np.ndarray | None = None
        for pattern in plan.patterns:
            subjects = self._pattern(pattern, plan, prologue, constants, terms)
            if subjects is None:
                return None
            found = subjects if found is None else np.intersect1d(found, subjects,
                                                                  assume_unique=True)
        if found is None:
            return None
        for parts in plan.either:  # FILTER(A(?x) || B(?y)): the documents passing one part
            passing = []
            for name, test in parts.items():
                subjects = self._pattern(_value_pattern(plan, name), dataclasses.replace(
                    plan, conditions={name: [test]}), prologue, constants, terms)
                if subjects is None:
                    return None
                passing.append(subjects)
            found = np.intersect1d(found, np.unique(np.concatenate(passing)), assume_unique=True)
        for pattern, test in plan.unless:  # OPTIONAL { ?doc P ?d } FILTER(!BOUND(?d) || test)
            name = pattern.object[1:]
            valued = self._pattern(pattern, dataclasses.replace(plan, conditions={}), prologue,
                                   constants, terms)
            kept = self._pattern(pattern, dataclasses.replace(plan, conditions={name: [test]}),
                                 prologue, constants, terms)
            if valued is None or kept is None:
                return None
            found = np.setdiff1d(found, np.setdiff1d(valued, kept, assume_unique=True),
                                 assume_unique=True)
        for together in plan.absent:  # NOT EXISTS { ?doc P a . ?doc Q b }: less those with both
            matched: np.ndarray | None = None
            for pattern in together:
                subjects = self._pattern(pattern, plan, prologue, constants, terms)
                if subjects is None:
                    return None
                matched = subjects if matched is None else np.intersect1d(
                    matched, subjects, assume_unique=True)
            assert matched is not None  # column_plan keeps a pattern at least
            found = np.setdiff1d(found, matched, assume_unique=True)
        return found

    def _iris(self) -> tuple[np.ndarray, np.ndarray]:
        """Each subject code's IRI (None for a blank node or triple term) and whether it has
        one, made as codes are added (naming half the documents is then no Python loop)."""
        with self._lock:
            made = len(self._iri_array)
            if made < len(self.names):
                added = np.array([n[1:-1] if n[:1] == "<" and n[:2] != "<<" else None
                                  for n in self.names[made:]] + [None], dtype=object)[:-1]
                named = np.fromiter((a is not None for a in added), dtype=bool, count=len(added))
                self._iri_array = np.concatenate([self._iri_array, added])
                self._is_iri = np.concatenate([self._is_iri, named])
            return self._iri_array, self._is_iri

    def _constants(self, plan: ColumnPlan, prologue: str,
                   terms: Mapping[str, Term],
                   ) -> dict[str, str] | None:
        """Each constant object (as written) and bound variable as Oxigraph writes it in TSV,
        so it compares with the columns' values as text."""
        every = [*plan.patterns, *(p for together in plan.absent for p in together)]
        written = sorted({p.object for p in every if p.object[:1] not in "?$"})
        bound = sorted({p.object[1:] for p in every
                        if p.object[:1] in "?$" and p.object[1:] in terms})
        wanted = [*written, *(str(terms[name]) for name in bound)]
        if not wanted:
            return {}
        names = " ".join(f"?x{i}" for i in range(len(wanted)))
        try:
            rows = tsv_rows(self._run(
                f"{prologue}SELECT {names} WHERE {{ VALUES ({names}) {{ ({' '.join(wanted)}) }} }}",
                self._scopes))
        except (SyntaxError, ValueError, RuntimeError):
            return None
        if len(rows) != 1 or len(rows[0]) != len(wanted):
            return None
        keys = [*written, *(f"?{name}" for name in bound)]
        return dict(zip(keys, rows[0]))

    def _pattern(self, pattern: Triple, plan: ColumnPlan, prologue: str, constants: dict[str, str],
                 terms: Mapping[str, Term],
                 ) -> np.ndarray | None:
        """The subject codes one pattern on the document variable admits."""
        assert pattern.predicate is not None  # _plan keeps single predicates only
        target = pattern.object
        name = target[1:] if target[:1] in "?$" else None
        if pattern.predicate == RDF_TYPE and (name is None or name in terms):
            return self.typed(constants[target if name is None else f"?{name}"])
        if pattern.predicate == RDF_TYPE and name in plan.satellites:  # ?class joined on
            return self._members(name, plan, prologue, terms)
        column = self.column(pattern.predicate)
        if column is None or not column.plain:
            return None
        if name is None or name in terms:
            code = column.codes.get(constants[target if name is None else f"?{name}"])
            return column.subjects_with(np.array([] if code is None else [code], dtype=np.int64))
        if name in plan.satellites:  # a chunk's document: its conditions are columns too
            chosen = self._satellite(name, plan, prologue, terms,
                                     linked=pattern.predicate == IS_PART_OF)
            if chosen is None:
                return None
            codes = [column.codes[v] for v in chosen if v in column.codes]
            return column.subjects_with(np.array(codes, dtype=np.int64))
        conditions = plan.conditions.get(name, [])
        if not conditions:
            subjects = column.subjects  # in subject order: the first of equals keeps each once
            return subjects if column.distinct else subjects[firsts(subjects)]
        # The group's prefixes (the graph's as the filter was read, and its own): the
        # graph's may change while the index lives (``kg.prefixes`` is a plain dict).
        return column.subjects_with(passing(column, name, conditions, prologue,
                                             plan.prefixes, terms))

    def _members(self, name: str, plan: ColumnPlan, prologue: str,
                 terms: Mapping[str, Term]) -> np.ndarray | None:
        """The subject codes of ``?doc a ?name`` for the classes the patterns joined to
        ``?name`` select (column_plan admits a class variable only so joined), or None."""
        classes = self._satellite(name, plan, prologue, terms)
        # A blank node written in a query is a variable, not that class, also inside a triple
        # term (``<<( _:b ex:p ex:o )>>`` would read every such triple's members): the graph
        # joins it.
        if classes is None or any(c.startswith("_:") or (c.startswith("<<") and "_:" in c)
                                  for c in classes):
            return None
        members = [self.typed(c) for c in sorted(classes)]
        if any(m is None for m in members):
            return None  # a class with a member per chunk (trails:Chunk): too many to keep
        return np.unique(np.concatenate([np.array([], dtype=np.int64), *members]))

    def _satellite(self, name: str, plan: ColumnPlan, prologue: str,
                   terms: Mapping[str, Term], linked: bool = False) -> set[str] | None:
        """The values of ``?name`` the patterns beyond the documents select (None: too many).
        With ``linked`` (``?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d``: a
        chunk's document, an IRI, with conditions that the columns answer over documents
        alike) from the columns when they answer those patterns, else from the graph (its
        index finds ``?t skos:broader <x>`` without reading a whole column)."""
        chosen = self.documents(name, plan.satellites[name], prologue, plan.prefixes,
                                terms) if linked else None
        if chosen is not None:
            return {f"<{iri}>" for iri in chosen}
        body = " ".join(item.text for item in plan.satellites[name])
        values = bound_values(body, terms)
        rows = tsv_rows(self._run(f"{prologue}SELECT DISTINCT ?{name} WHERE {{ {values}{body} }}"
                                  f" LIMIT {SATELLITE_ROWS + 1}", self._scopes))
        if len(rows) > SATELLITE_ROWS:
            return None
        return {row[0] for row in rows}


def _value_pattern(plan: ColumnPlan, name: str) -> Triple:
    """The document's pattern whose value is ``?name``."""
    return next(p for p in plan.patterns if p.object[:1] in "?$" and p.object[1:] == name)
