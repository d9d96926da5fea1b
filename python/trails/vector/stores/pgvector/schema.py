"""The tables trails keeps in PostgreSQL, and how a row is made of a vector and its metadata.

For a store called ``<table>`` (an identifier, by default ``trails``), in the connection's
schema:

- ``<table>``: one row per vector: ``id``, ``embedding vector(dim)`` (pgvector), ``metadata
  jsonb`` as the caller gave it, the promoted fields ``doc_iri``, ``scope``, ``version``,
  ``pending`` that filters and commits use, and the keyword text (``body``, the metadata's
  ``text``, else its ``snippet``) with its length in words;
- ``<table>__terms``: the keyword index: ``(term, id, tf)`` for every word of every row's
  text, so BM25 runs in SQL on statistics of any subset of rows (the caller's scopes);
- ``<table>__versions``: one row per document: its current version (ADR 0005);
- ``<table>__meta``: one row: format, dimension, embedder identity, and the revision every
  commit renews;
- ``<table>__hnsw``: the optional HNSW index (inner product) on the embeddings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from trails.errors import ConfigurationError, InvalidArgumentError
from trails.scopes import DEFAULT_SCOPE
from trails.text import text_words
from trails.vector.stores import arguments
from trails.vector.stores.arrays import optional_str

__all__ = ["BACK_REFERENCE", "BACK_REFERENCES_INDEX", "FORMAT", "Names", "Row", "as_array",
           "body_of", "build_indexes", "ddl", "held", "index_term", "names", "row", "term_rows",
           "where_clause"]

FORMAT = 1
_PROMOTED = ("doc_iri", "scope")  # delete_where compares these columns
# Lower-case so that PostgreSQL folds nothing, short so that the derived names fit in 63 bytes.
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


class Names(NamedTuple):
    """The quoted names of a store's tables and index (``psycopg.sql.Identifier`` values)."""

    items: Any
    terms: Any
    versions: Any
    meta: Any
    hnsw: Any
    back_refs: Any
    table: str


def names(sql: Any, table: str) -> Names:
    """The names for ``table`` (``sql``: ``psycopg.sql``).

    Raises:
        ConfigurationError: ``table`` is not a lower-case identifier of at most 41 characters.
    """
    if not isinstance(table, str) or not _IDENTIFIER.match(table):
        raise ConfigurationError(
            f"table={table!r} cannot name a PgVectorStore: use a lower-case identifier "
            "([a-z_][a-z0-9_]*, at most 41 characters)")
    items, terms, versions, meta, hnsw, back_refs = (
        sql.Identifier(table + suffix)
        for suffix in ("", "__terms", "__versions", "__meta", "__hnsw", "__back_refs"))
    return Names(items, terms, versions, meta, hnsw, back_refs, table)


# A row whose metadata["iri"] is a string other than its id: a back-reference (ADR 0026).
BACK_REFERENCE = ("jsonb_typeof(metadata -> 'iri') = 'string' AND metadata ->> 'iri' <> ''"
                  " AND metadata ->> 'iri' <> id")
# The rows with a back-reference, indexed apart: most stores hold none, and whether any row
# has one is asked by every filtered search (a scan of the table without it: ~150 ms at
# 100,000 rows).
BACK_REFERENCES_INDEX = (f"CREATE INDEX IF NOT EXISTS {{back_refs}} ON {{items}} (id)"
                         f" WHERE {BACK_REFERENCE}")


def build_indexes(conn: Any, sql_of: Any, table: str, *, hnsw: bool) -> None:
    """On a writable open (``conn`` in autocommit; ``sql_of`` fills the names): the index a
    table made before it existed lacks, and the HNSW index when asked for. A build reads every
    row, which can take longer than the store's ``statement_timeout`` allows a query (HNSW:
    ~4 minutes at 100,000 rows), so the builds run without it."""
    with conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")
        if conn.execute("SELECT to_regclass(%s)", (table + "__back_refs",)).fetchone()[0] is None:
            conn.execute(sql_of(BACK_REFERENCES_INDEX))
        if hnsw:
            conn.execute(sql_of("CREATE INDEX IF NOT EXISTS {hnsw} ON {items} USING hnsw"
                                " (embedding vector_ip_ops)"))


def ddl(dim: int) -> list[str]:
    """The statements that create a store, with ``{items}``, ``{terms}``... for its names."""
    return [
        (f"CREATE TABLE {{items}} (id text PRIMARY KEY, embedding vector({dim}) NOT NULL,"
        " metadata jsonb NOT NULL, doc_iri text, scope text NOT NULL, version text,"
        " pending boolean NOT NULL DEFAULT false, body text,"
        " body_len integer NOT NULL DEFAULT 0)"),
        "CREATE INDEX ON {items} (doc_iri)",
        "CREATE INDEX ON {items} (scope) WHERE NOT pending",
        "CREATE INDEX ON {items} (id) WHERE pending",
        BACK_REFERENCES_INDEX,
        ("CREATE TABLE {terms} (term text NOT NULL, id text NOT NULL REFERENCES {items} (id)"
        " ON DELETE CASCADE, tf integer NOT NULL, PRIMARY KEY (term, id))"),
        "CREATE INDEX ON {terms} (id)",
        ("CREATE TABLE {versions} (doc_iri text PRIMARY KEY, version text NOT NULL,"
        " scope text NOT NULL, content_hash text NOT NULL, chunks integer NOT NULL)"),
        ("CREATE TABLE {meta} (one boolean PRIMARY KEY DEFAULT true CHECK (one),"
        " format integer NOT NULL, dim integer NOT NULL, embedder jsonb,"
        " revision text NOT NULL, ann_recall double precision, ann_rows bigint)"),
    ]


class Row(NamedTuple):
    """The values of one ``<table>`` row, in the order of :data:`COLUMNS`."""

    id: str
    embedding: Any
    metadata: str
    doc_iri: str | None
    scope: str
    version: str | None
    pending: bool
    body: str | None
    body_len: int


COLUMNS = Row._fields


def body_of(metadata: Mapping[str, Any]) -> str | None:
    """The text a row is ranked by for keywords: its ``text``, else its ``snippet``."""
    for key in ("text", "snippet"):
        value = metadata.get(key)
        if isinstance(value, str):
            return value
    return None


def row(id: str, embedding: Any, metadata: Mapping[str, Any], pending: bool) -> Row:
    """The row for a checked vector. Metadata goes through JSON as the other stores keep it
    (values without a JSON form as their ``str``).

    Raises:
        InvalidArgumentError: a NUL character, which PostgreSQL text cannot hold, in the id
            or the metadata; or a float JSON cannot hold (NaN, infinity).
    """
    text = arguments.metadata_json(metadata, f"the metadata of {id!r}")
    if "\x00" in id or "\\u0000" in text:
        raise InvalidArgumentError(
            f"vector {id!r}: PostgreSQL cannot store a NUL character (\\x00) in an id or in "
            "metadata; remove it")
    plain = json.loads(text)
    body = body_of(plain)
    return Row(id, embedding, text, optional_str(plain.get("doc_iri")),
               str(plain.get("scope") or DEFAULT_SCOPE), optional_str(plain.get("version")),
               pending, body, 0 if body is None else len(text_words(body)))


def held(strings: Iterable[Any]) -> list[str]:
    """The strings among ``strings`` that a row can hold, once each, in order. PostgreSQL
    text cannot hold a NUL character or a lone surrogate (:func:`row` refuses them), so an
    id, document IRI or scope with one names no row: a lookup leaves it out rather than send
    it."""
    return list(dict.fromkeys(s for s in strings if isinstance(s, str) and "\x00" not in s
                              and arguments.utf8(s)))


# The longest word the keyword index keeps as it is, in UTF-8 bytes: its key (term, id) is a
# B-tree entry, which holds at most ~2,700 bytes (with an id of up to 2,000).
MAX_TERM_BYTES = 512


def index_term(word: str) -> str:
    """How the keyword index holds ``word``: itself, or for a word longer than
    :data:`MAX_TERM_BYTES` (a run of base64 or hex) ``#`` and its SHA-256, which no word
    holds (words are letters and digits), so a query for it finds it as FTS5 does."""
    if len(word) * 4 <= MAX_TERM_BYTES:
        return word
    encoded = word.encode("utf-8")
    if len(encoded) <= MAX_TERM_BYTES:
        return word
    return "#" + hashlib.sha256(encoded).hexdigest()


def as_array(value: Any) -> np.ndarray:
    """A stored embedding as float32 (pgvector's ``Vector``, or an array already)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def term_rows(r: Row) -> list[tuple[str, str, int]]:
    """The keyword index's rows for ``r``: ``(term, id, tf)``."""
    if r.body is None:
        return []
    return [(term, r.id, tf) for term, tf in Counter(map(index_term, text_words(r.body))).items()]


def where_clause(filters: Mapping[str, Any], *, promoted: bool) -> tuple[str, list[Any]] | None:
    """A WHERE clause for metadata equal to every filter, with its parameters (no value
    is pasted into SQL), or None when nothing can match. Values compare as JSON: 1 equals
    1.0 but not true or "1". With ``promoted`` (delete_where), ``doc_iri`` and ``scope``
    compare the promoted columns and ``None`` matches nothing; else a ``None`` matches an
    explicit null, never a missing key. A value holding a NUL character matches nothing
    (no row holds one)."""
    clauses, params = ["TRUE"], list[Any]()
    for key, value in filters.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"metadata filter keys are strings, got {key!r}")
        if promoted and key in _PROMOTED:
            if value is None or not held([str(value)]):
                return None
            clauses.append(f"{key} = %s")
            params.append(str(value))
            continue
        if value is None and promoted:
            return None
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"metadata filter {key!r}: {value!r} has no JSON form to compare ({exc})"
            ) from exc
        if "\\u0000" in encoded or ("\\ud" in encoded
                                     and not arguments.lone_surrogate_free(encoded)):
            return None
        clauses.append("metadata -> %s = ANY(%s::jsonb[])")
        params.extend([key, [encoded, *_same_number(value)]])
    return " AND ".join(clauses), params



def _same_number(value: Any) -> list[str]:
    """The other JSON text of a number equal in value to ``value``, if it has one: jsonb
    compares numbers as decimals, and a float's shortest decimal (``1.1805916207174113e+21``)
    is not the digits of the integer it equals (``2**70``), past 2**53."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if isinstance(value, float):
        return [str(int(value))] if value.is_integer() and abs(value) >= 2**53 else []
    if abs(value) < 2**53:
        return []
    try:
        near = float(value)
    except OverflowError:
        return []
    return [json.dumps(near)] if near == value else []
