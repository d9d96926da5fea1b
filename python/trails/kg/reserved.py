"""The audit graph is trails' own: no user write reaches it.

``urn:trails:audit`` holds the audit trail (ADR 0018), which ``trails audit`` lists as what
happened. A triple a user could add there would be listed as a search or a deletion that
never happened, so every write a graph takes from outside (``load`` in any format, ``add``,
``extend``, ``bulk_extend``, ``load_nquads``, ``update``, ``remove_graph``) is refused when it
names that graph, and trails' own fold writes it inside :func:`writing_audit_graph`. Trails'
own updates (``hand_links.minted_links``) are not read: their text is generated.

An update is judged by its text, escapes undone: it is refused when it names the graph (an
IRI, a prefixed name a declared or predefined prefix could make, or a string where a
variable names a graph), or when it inserts into a graph chosen by a variable. Wiping every graph (``DROP ALL``) is allowed and
takes the trail with the rest. Writes through :attr:`OxigraphGraph.store` (the raw
pyoxigraph store) bypass trails altogether.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterable, Iterator, Mapping

import pyoxigraph as ox

from trails.errors import ConfigurationError, SparqlError
from trails.kg.hand_links import trails_own_writes
from trails.kg.sparql import check_limits, code_only, iri_refs, iris_only

__all__ = ["AUDIT_GRAPH_IRI", "check_nquads", "check_quads", "check_removal", "check_update",
           "writing_audit_graph"]

AUDIT_GRAPH_IRI = "urn:trails:audit"
_AUDIT = ox.NamedNode(AUDIT_GRAPH_IRI)
_WRITING = contextvars.ContextVar("trails_writing_audit_graph", default=False)
# The IRI, in any text (an IRI, a string IRI() could make one of), ending where an IRI can.
_NAMED = re.compile(re.escape(AUDIT_GRAPH_IRI) + r"(?![^\s<>\"'{}|^`\\])")
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
# Case-insensitive keywords start with a character class of their first letter: re then
# skips ahead to that letter, where a pattern opening in (?i) or a lookbehind is tried at
# every position of the text (an ingest's updates are ~200 KB; 4-8x faster).
# A declaration in text whose strings and comments are blanked (sparql.iris_only): no space
# is needed after PREFIX, and a prefix may start with any letter.
_PREFIX = re.compile(r"[Pp](?i:REFIX)\s*([^\W\d_][\w.-]*)?:\s*<([^>]*)>")
_BASE = re.compile(r"[Bb](?i:ASE)\s*<")
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# Keywords, not parts of ?var, $var, prefix:name or a longer word (in text whose strings,
# IRIs and comments are blanked): the lookbehind checks the character before the first letter
# (İ and ı too: IGNORECASE matches them for I).
_INSERT = re.compile(r"[Iiİı](?<![?$:@\w-].)(?i:NSERT)(?![\w:-])")
_VARIABLE_GRAPH = re.compile(r"[Gg](?<![?$:@\w-].)(?i:RAPH)\s+[?$]")
_WHY = (f"the graph <{AUDIT_GRAPH_IRI}> holds the audit trail, which trails alone writes "
        "(docs/compliance.md)")


@contextlib.contextmanager
def writing_audit_graph() -> Iterator[None]:
    """Writes in this block (this thread or task) may reach the audit graph: the fold's."""
    token = _WRITING.set(True)
    try:
        yield
    finally:
        _WRITING.reset(token)


def check_quads(quads: Iterable[ox.Quad]) -> list[ox.Quad]:
    """``quads`` as a list, checked before any is written.

    Raises:
        ConfigurationError: one is in the audit graph (nothing is written).
    """
    listed = quads if isinstance(quads, list) else list(quads)
    if not _WRITING.get() and any(q.graph_name == _AUDIT for q in listed):
        raise ConfigurationError(f"{_WHY}: nothing was written; put your triples in a scope "
                                 "(scope=..., --scope NAME) or a graph of your own")
    return listed


def check_nquads(text: str) -> str:
    """N-Quads ``text``, refused when a quad is in the audit graph (parsed only when the
    text names it).

    Raises:
        ConfigurationError: it has one.
    """
    if not _WRITING.get() and AUDIT_GRAPH_IRI in text:
        check_quads(ox.parse(text, format=ox.RdfFormat.N_QUADS, lenient=True))
    return text


def check_removal(graph: ox.NamedNode | ox.DefaultGraph) -> None:
    """Refuse removing the audit graph.

    Raises:
        ConfigurationError: ``graph`` is the audit graph.
    """
    if not _WRITING.get() and graph == _AUDIT:
        raise ConfigurationError(f"{_WHY}: it cannot be removed by hand; its records age out "
                                 "with the audit setting retention_days")


def check_update(text: str, prefixes: Mapping[str, str]) -> None:
    """Refuse an update that names the audit graph or inserts into a variable graph, or
    whose shape would crash the parser (:func:`~trails.kg.sparql.check_limits`).

    Trails' own updates (ingestion's step 4, deletes, repair, relinking: ``minted_links``)
    are not read: they name only scope graphs and ``urn:trails:minted``, a document's values
    sit in object position, and scanning them was ~8% of an ingest (6.9 MB of update text
    for 3,000 documents).

    Raises:
        SparqlError: it does (nothing is written).
    """
    if _WRITING.get() or trails_own_writes():
        return
    check_limits(text, unscoped=True)  # a parser crash (deep nesting, long chains) is no write
    plain = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)
    code = code_only(plain)
    declarations = iris_only(plain)
    declared = {**prefixes, **{name or "": iri for name, iri in _PREFIX.findall(declarations)}}
    based = _BASE.search(declarations) is not None  # a relative prefix could resolve to it
    near = sorted(f"{name}:" for name, iri in declared.items()
                  if (iri and AUDIT_GRAPH_IRI.startswith(iri) or based and not _ABSOLUTE.match(iri))
                  and f"{name}:" in code)
    variable = _VARIABLE_GRAPH.search(code) is not None
    # A string matters only where a variable could make it the graph (BIND(IRI("...") AS ?g)):
    # elsewhere it is a value (a document's title), never a graph.
    named = AUDIT_GRAPH_IRI in plain and AUDIT_GRAPH_IRI in iri_refs(plain)  # scan only then
    if named or near or (variable and _NAMED.search(plain)):
        raise SparqlError(f"{_WHY}: this update names it{' through ' + near[0] if near else ''}"
                          "; nothing was written. Write your triples to a scope's graph or "
                          "one of your own")
    if variable and _inserts_into_variable_graph(code):
        raise SparqlError(f"{_WHY}, and this update inserts into a graph chosen by a variable, "
                          "which could be that one; nothing was written. Name the graphs it "
                          "inserts into (GRAPH <urn:trails:scope:NAME> { ... })")


def _inserts_into_variable_graph(code: str) -> bool:
    """Whether a ``GRAPH ?var`` of ``code`` (strings, IRIs, comments blanked) lies in an
    ``INSERT`` template; one in a ``WHERE`` only reads."""
    variables = [m.start() for m in _VARIABLE_GRAPH.finditer(code)]
    for insert in _INSERT.finditer(code) if variables else ():
        start = code.find("{", insert.end())
        depth, end = 0, len(code)
        for position in range(max(start, 0), len(code)):
            depth += {"{": 1, "}": -1}.get(code[position], 0)
            if depth == 0:
                end = position
                break
        if start >= 0 and any(start < v < end for v in variables):
            return True
    return False
