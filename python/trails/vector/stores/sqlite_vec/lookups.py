"""Lookups by metadata, without a vector search: the rows that name their IRI in
``metadata["iri"]`` under another id (schema m006's partial index; ADR 0028), and ``find`` /
``count(filters)`` answered by one query."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from trails.vector.stores.base import metadata_matches
from trails.vector.stores.records import DocumentIris, back_reference
from trails.vector.stores.sqlite_vec import schema
from trails.vector.stores.sqlite_vec.core import reads
from trails.vector.stores.sqlite_vec.folding import ROW, sql_field, unfold
from trails.vector.stores.sqlite_vec.versions import SqliteVersions

__all__ = ["SqliteLookups"]

# Columns promoted out of the JSON metadata so delete_where on them uses an index.
_COLUMNS = ("doc_iri", "scope")


class SqliteLookups(SqliteVersions):
    """``BackReferences`` and ``find``'s query."""

    @reads
    def has_back_references(self) -> bool:
        """Whether some live row's ``metadata["iri"]`` is a string other than its id (one
        probe of schema m006's partial index, empty in the common case)."""
        return bool(self._db.execute(
            f"SELECT 1 FROM items INDEXED BY items_back_reference WHERE {schema.REFERS_ELSEWHERE}"
            " AND pending = 0 AND json_type(metadata, '$.iri') = 'text'"
            " AND metadata ->> '$.iri' <> '' LIMIT 1"))

    @reads
    def rows_named(self, iris: Iterable[str]) -> dict[str, str]:
        """``{id: back-reference}`` of the live rows whose back-reference (``metadata["iri"]``,
        else the id) or document is one of ``iris`` (only the document for a
        ``DocumentIris``); by slot."""
        documents_only = isinstance(iris, DocumentIris)
        names = [i for i in iris if isinstance(i, str)]
        given = json.dumps(names)
        named = ["doc_iri IN (SELECT value FROM json_each(?))"]
        if not documents_only:  # by id, or by a metadata["iri"] other than the id (m006's index)
            named += ["id IN (SELECT value FROM json_each(?))",
                      ("rowid IN (SELECT rowid FROM items INDEXED BY items_back_reference WHERE"
                       f" {schema.REFERS_ELSEWHERE} AND metadata ->> '$.iri' IN"
                       " (SELECT value FROM json_each(?)))")]
        rows = self._db.execute(
            f"SELECT id, metadata ->> '$.iri', doc_iri FROM items WHERE pending = 0 AND"
            f" ({' OR '.join(named)}) ORDER BY slot", (given,) * len(named))
        wanted = set(names)
        found = {}
        for id, iri, doc in rows:  # the SQL shortlists; the back-reference decides
            name = back_reference(id, {"iri": iri})
            if doc in wanted or (not documents_only and name in wanted):
                found[id] = name
        return found

    @reads
    def _matching(self, filters: dict[str, Any], limit: int | None) -> list[str]:
        """The rows SQL finds by each value's JSON type and value; a text, list or object
        value is then checked in Python (:func:`~.base.metadata_matches`)."""
        where, params, exact = _typed_where(filters)
        cut = f" LIMIT {int(limit)}" if exact and limit is not None else ""
        rows = self._db.execute(f"SELECT id, {ROW} FROM items WHERE pending = 0 AND"
                                f" {' AND '.join(where)} ORDER BY id{cut}", params)
        if exact:
            return [r[0] for r in rows]
        return [r[0] for r in rows if metadata_matches(unfold(*r), filters)][:limit]

    def _delete_matching(self, filters: Mapping[str, Any]) -> int:
        """Rows staged or live whose promoted ``doc_iri``/``scope`` columns and metadata equal
        ``filters`` (checked scalars, compared as :meth:`_matching` does; None: nothing)."""
        if any(value is None for value in filters.values()):
            self._check_writable()
            return 0
        rest = {k: v for k, v in filters.items() if k not in _COLUMNS}
        where, params, exact = _typed_where(rest)
        where += [f"{key} = ?" for key in _COLUMNS if key in filters]
        params += [filters[key] for key in _COLUMNS if key in filters]
        with self._writing():  # the ids and their deletion: one transaction
            rows = self._db.execute(
                f"SELECT id, {ROW} FROM items WHERE {' AND '.join(where)}", params)
            return self._delete_ids([r[0] for r in rows if exact or metadata_matches(
                unfold(*r), rest)])


def _typed_where(filters: Mapping[str, Any]) -> tuple[list[str], list[Any], bool]:
    """WHERE clauses (and their parameters) for rows whose metadata holds each filter's
    JSON type and value, and whether they are exact (else a text, list, object or huge
    integer value is to be checked in Python, :func:`~.base.metadata_matches`)."""
    where, params, exact = ["1"], list[Any](), True
    for key, value in filters.items():
        if key == "text":  # a string text lives in its own column (schema m003)
            exact = False
            continue
        kind, path = sql_field(key)
        if value is None or isinstance(value, bool):
            where.append(f"{kind} = '{json.dumps(value)}'")
        elif isinstance(value, (int, float)):
            where.append(f"{kind} IN ('integer', 'real') AND {path} = ?")
            if isinstance(value, int) and not -2**63 <= value < 2**63:
                # SQLite reads an integer beyond 64 bits as a real: narrow by that,
                # then compare exactly in Python
                value, exact = float(value), False
            params.append(value)
        elif isinstance(value, str):
            where.append(f"{kind} = 'text' AND {path} = ?")
            params.append(value)
        else:
            where.append(f"{kind} = '{'object' if isinstance(value, dict) else 'array'}'")
            exact = False
    return where, params, exact
