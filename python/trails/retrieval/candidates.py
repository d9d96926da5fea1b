"""A filter's candidates: planned so the natural form runs like the best one, and kept while
the graph stays the same (ADR 0013).

On a graph that numbers its states (:class:`~trails.kg.base.GenerationGraph`: the embedded
Oxigraph), :func:`filter_candidates`:

1. checks the filter as written (its errors are the caller's, in the caller's terms);
2. plans it (``kg/planning.py``): evaluated over documents when the candidate variable only
   links chunks to documents and every ``schema:isPartOf`` triple is trails' own chunk link
   (:func:`chunk_links_intact`); its patterns in a join order driven by capped pattern counts;
3. answers a repeated filter (same text, bindings, scopes, same graph generation) from a small
   cache, as the same tuple, so a store can also keep what it derived from it.

A planned filter that fails where the written one would not (it never should) runs as
written. Filters calling the graph's Python functions (``trails:similarity``) depend on more
than the graph: they are neither planned nor kept. Other graphs (a SPARQL endpoint, which plans
for itself and can change unseen) run the filter as written.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from trails.errors import SparqlError
from trails.kg.base import FunctionGraph, GenerationGraph, KnowledgeGraph, TsvGraph, select
from trails.kg.bindings import check_bindings, check_bindings_used
from trails.kg.column_files import ColumnFiles
from trails.kg.equivalent_forms import equivalent_form
from trails.kg.expressions import unordered
from trails.kg.filter_index import FilterIndex, Selected
from trails.kg.link_counts import COUNT_CHUNKS, COUNT_LINKS, COUNT_TYPED_TARGETS, LINK_COUNTS
from trails.kg.planning import (
    ESTIMATE_CAP,
    IS_PART_OF,
    RDF_TYPE,
    FilterShape,
    Lift,
    Other,
    Triple,
    lift_to_documents,
    parse_filter,
    reorder,
)
from trails.kg.sparql import TRAILS, check_filter, code_only
from trails.kg.sparql_text import WORD_CHAR
from trails.kg.unions import distributed
from trails.kg.unrelated import ask_text, split_unrelated
from trails.kg.variables import check_bound, written_variables
from trails.retrieval import spans
from trails.retrieval.consistency import view_current
from trails.retrieval.filter_memory import CACHED_FILTERS, CACHED_IRIS, answer_key
from trails.retrieval.filter_memory import memory as _memory
from trails.tracing import traced
from trails.vector.stores.records import CodedIris, DocumentIris

__all__ = ["CACHED_FILTERS", "CACHED_IRIS", "chunk_links_intact", "filter_candidates",
           "links_reach_documents"]

log = logging.getLogger("trails.retrieve")

_TEXT = "https://schema.org/text"
_CHUNK_VALUES = frozenset({"https://schema.org/position", *(  # on every chunk, a row each
    TRAILS + p for p in ("startOffset", "endOffset", "version"))})
_EVERY_CHUNK = _CHUNK_VALUES | {IS_PART_OF, TRAILS + "mentions", TRAILS + "hasMention"}
_CHUNK = TRAILS + "Chunk"
_DECLARED = re.compile(r"\bPREFIX\s+([^\s:]*):\s*<([^>]*)>", re.IGNORECASE)  # (name, IRI)
# The link checks' counts, kept per graph revision with the columns (kg/link_counts.py)
_COUNT_LINKS, _COUNT_CHUNKS, _COUNT_TYPED_TARGETS = (
    count.query for count in (COUNT_LINKS, COUNT_CHUNKS, COUNT_TYPED_TARGETS))


@traced("trails.filter", arguments=spans.filter_arguments, result=spans.filter_result)
def filter_candidates(graph: KnowledgeGraph, sparql: str, bindings: Mapping[str, Any] | None,
                      scopes: Sequence[str] | None, *, documents: bool = True,
                      ordered: bool = False, path: list[str] | None = None,
                      ) -> tuple[str, ...]:
    """The filter's candidate IRIs, as :meth:`~trails.kg.base.KnowledgeGraph.select_iris`
    finds them, planned and kept (see the module docstring).

    With ``documents`` the answer may be a :class:`DocumentIris` of documents whose chunks are
    the candidates; without it it is always the filter's own IRIs. With ``ordered`` (graph
    mode, which lists the filter's own IRIs in the order the graph answers them) the filter
    runs as written: a plan of the same set may answer in another order. ``path``, when given, gets how the answer was found,
    as ``explain()`` says it: ``documents-columns`` (over documents, from the graph's
    columns), ``documents-query`` (over documents, a planned query), ``columns``,
    ``chunks-reordered``, ``chunks-rewritten`` (another form of it, not reordered),
    ``as-written`` (with why, when a lift was refused). An identical filter's answer kept
    from the same graph state says how that one was found.

    Raises:
        UnsafeFilterError, SparqlError, UnboundVariableError: as ``select_iris`` does, for
            the filter as written.
    """
    found = path if path is not None else []
    if not isinstance(graph, GenerationGraph) or _calls_functions(graph, sparql):
        found.append("as-written")
        return tuple(graph.select_iris(sparql, bindings, scopes=scopes))
    check_filter(sparql, graph.prefixes,
                 functions=graph.functions if isinstance(graph, FunctionGraph) else ())
    check_bound(sparql, (bindings or {}).keys())
    terms = check_bindings(bindings)
    check_bindings_used(sparql, terms)  # as the filter as written would: a typo is no filter
    key = answer_key(graph, sparql, terms, scopes, documents, ordered)
    memory = _memory(graph)
    generation = graph.generation
    with memory.lock:
        kept = memory.at(generation).answers.get(key)
        if kept is not None:
            memory.answers.move_to_end(key)
            found.append(kept[1])  # as the answer was found
            return kept[0]
    iris = (tuple(graph.select_iris(sparql, bindings, scopes=scopes)) if ordered else
            _planned(graph, generation, sparql, bindings, terms, scopes, documents, found))
    if ordered:
        found.append("as-written")
    with memory.lock:
        if graph.generation == generation:  # nothing wrote meanwhile: the answer holds
            memory.at(generation).keep(key, iris, found[-1])
    return iris


def _planned(graph: GenerationGraph, generation: int, sparql: str,
             bindings: Mapping[str, Any] | None, terms: Mapping[str, Any],
             scopes: Sequence[str] | None, documents: bool, path: list[str]) -> tuple[str, ...]:
    bound = set((bindings or {}).keys())
    shape = parsed = parse_filter(sparql, graph.prefixes)
    if shape is None and (plain := unordered(sparql, bound)) is not None:
        shape = parse_filter(plain, graph.prefixes)  # a set: the order is not part of it
    if shape is None:
        path.append("as-written")
        return tuple(graph.select_iris(sparql, bindings, scopes=scopes))
    shape = equivalent_form(shape, bound)  # a set of candidates: the planner's forms of it
    # what runs when nothing else applies: the filter as written, or another form of it
    unplanned = "as-written" if shape is parsed else "chunks-rewritten"
    if (split := split_unrelated(shape)) is not None:  # asked once, not joined
        shape, groups = split
        for group in groups:
            text = ask_text(shape, group)
            named = written_variables(code_only(text))
            if graph.query(text, {n: v for n, v in (bindings or {}).items() if n in named},
                           scopes=scopes) is not True:
                path.append("unrelated-empty")
                return ()
        iris = _planned_shape(graph, generation, sparql, bindings, terms, scopes, documents,
                              path, shape, "chunks-rewritten")
        path[-1] += f" ({len(groups)} unrelated group{'s' * (len(groups) > 1)} asked once)"
        return iris
    return _planned_shape(graph, generation, sparql, bindings, terms, scopes, documents, path,
                          shape, unplanned)


def _planned_shape(graph: GenerationGraph, generation: int, sparql: str,
                   bindings: Mapping[str, Any] | None, terms: Mapping[str, Any],
                   scopes: Sequence[str] | None, documents: bool, path: list[str],
                   shape: FilterShape, unplanned: str) -> tuple[str, ...]:
    bound = set((bindings or {}).keys())
    lifted = lift_to_documents(shape, bound) if documents else None
    untyped = _without_chunk_type(shape) if documents and lifted is None else None
    if untyped is not None:
        lifted = lift_to_documents(untyped, bound)
    why = ""  # why a filter that could be lifted is not
    if lifted is not None and (refused := _links_refusal(graph)) is not None:
        lifted, why = None, f" ({refused})"
    if lifted is not None and lifted.typed and not links_reach_documents(graph):
        # ?doc a trails:Document stands for the link: only if every target is one
        lifted, why = None, " (a schema:isPartOf link reaches no trails:Document)"
    if lifted is not None and untyped is not None:
        shape = untyped
    if lifted is not None and isinstance(graph, TsvGraph):
        indexed = _indexed(graph, generation, shape, lifted, terms, scopes)
        if indexed is not None:
            path.append("documents-columns")
            return indexed
    if lifted is None and (own := _own_columns(graph, generation, shape, terms,
                                               scopes)) is not None:
        path.append(f"columns{why}")
        return own
    variable, items = ((lifted.variable, lifted.items) if lifted is not None
                       else (shape.variable, list(shape.items)))
    order = reorder(shape, lambda triple: _estimate(graph, shape, triple, terms), bound, items)
    text = shape.text(variable, order if order is not None else items)
    # A rewrite may leave out what alone read a binding (a BIND nothing reads): a VALUES row
    # of a variable the query does not use changes no answer, and the graph refuses it.
    named = written_variables(code_only(text))
    used = {name: value for name, value in (bindings or {}).items() if name in named}
    try:
        iris = graph.select_iris(text, used, scopes=scopes)
    except SparqlError as exc:  # a planning mistake must not cost the caller the answer
        written = tuple(graph.select_iris(sparql, bindings, scopes=scopes))  # its errors: theirs
        log.warning("a planned filter failed (%s); it ran as written", exc)
        path.append("as-written (the planned form failed)")
        return written
    if lifted is None:
        path.append(f"{'chunks-reordered' if order is not None else unplanned}{why}")
        return tuple(iris)
    path.append("documents-query")
    documents_found = DocumentIris(iris)
    documents_found.generation = generation
    return documents_found


def _indexed(graph: GenerationGraph, generation: int, shape: FilterShape, lifted: Lift,
             terms: Mapping[str, Any], scopes: Sequence[str] | None) -> DocumentIris | None:
    """The lifted filter's documents from the graph's columns (``kg/filter_index.py``), or
    None when it is not a shape they answer."""
    assert isinstance(graph, TsvGraph)  # checked by the caller
    found = _from_columns(graph, generation, scopes, shape, lifted.variable, lifted.items, terms)
    if found is None:
        return None
    documents = DocumentIris(found)
    documents.generation = generation
    documents.coded = found.coded
    return documents


def _own_columns(graph: GenerationGraph, generation: int, shape: FilterShape,
                 terms: Mapping[str, Any], scopes: Sequence[str] | None,
                 ) -> CodedIris | None:
    """The IRIs of a filter testing its own variable's properties (a document's, a chunk's...)
    from the graph's columns, as a set (None: not answered). The chunks' text is no column; a
    predicate on every chunk is read as one if a chunk's value is tested as a variable (the
    graph would scan it per binding: ``?iri schema:position ?p``), else only if at hand (the
    graph's index finds ``schema:position 0``; a refused lift's document filter runs there)."""
    if not isinstance(graph, TsvGraph) or (getattr(graph, "read_only", False)
                                          and not view_current(graph)):
        return None
    groups = distributed(shape.items, shape.variable, terms, shape.prefixes) or [list(shape.items)]
    own = [t for group in groups for t in group  # a UNION's branches are read as groups too
           if isinstance(t, Triple) and shape.variable in t.variables]
    every = [("class", f"<{_CHUNK}>") if t.predicate == RDF_TYPE else ("column", t.predicate)
             for t in own if t.predicate in _EVERY_CHUNK or (  # as ingestion writes them
                 t.predicate == RDF_TYPE and _named(t.object, shape.prefixes) == _CHUNK)]
    scans = any(t.predicate in _CHUNK_VALUES and t.object[:1] in "?$" and t.object[1:] not in
                terms for t in own)  # the graph would read every chunk's value
    if any(t.predicate == _TEXT for t in own) or not scans and not all(
            _index(graph, generation, scopes).at_hand(kind, key) for kind, key in every):
        return None
    found = _from_columns(graph, generation, scopes, shape, shape.variable, shape.items, terms)
    if found is None or (not found and found.others):  # only blank nodes: an error there
        return None
    named = CodedIris(found)  # the store hashes the index's names once, not a filter's:
    named.coded = found.coded
    return named


def _from_columns(graph: GenerationGraph, generation: int, scopes: Sequence[str] | None,
                  shape: FilterShape, variable: str, items: Sequence[Triple | Other],
                  terms: Mapping[str, Any]) -> Selected | None:
    """``SELECT ?variable WHERE { items }`` from the graph's columns, or None when they do
    not answer it (or fail: the index must not cost the caller the answer)."""
    try:
        return _index(graph, generation, scopes).documents(
            variable, items, shape.prologue, shape.prefixes, terms)
    except SparqlError as exc:
        log.warning("the filter index failed (%s); the graph answers", exc)
        return None


def _without_chunk_type(shape: FilterShape) -> FilterShape | None:
    """``shape`` without ``?iri a trails:Chunk`` on its candidate variable, or None when it
    has none. Not an equivalence on any graph: it holds where the lift's own checks hold
    (every link trails' own, and no write of a chunk's type by hand since ``verify()``, which
    reads them), since ingestion writes a chunk's type beside its link, in the same graph,
    and deletes them together. The caller uses it only for a lift that passed those checks."""
    typed = [t for t in shape.items if isinstance(t, Triple) and t.predicate == RDF_TYPE
             and t.subject[1:] == shape.variable and t.subject[:1] in "?$"
             and _named(t.object, shape.prefixes) == _CHUNK]
    if not typed:
        return None
    items = tuple(i for i in shape.items if i not in typed)
    # How often the variable is written, as the lift counts it: in the text the items write,
    # plus any place of the filter as written they do not account for (a comment, a string).
    def written(text: str) -> int:
        return len(re.findall(rf"[?$]{re.escape(shape.variable)}(?!{WORD_CHAR})", text))
    beyond = max(0, shape.occurrences - written(shape.text()))
    return dataclasses.replace(shape, items=items,
                               occurrences=written(shape.text(items=items)) + beyond)


def _named(term: str, prefixes: Mapping[str, str]) -> str:
    """The IRI ``term`` names as written (``<...>`` or a prefixed name), else the text."""
    if term[:1] == "<":
        return term[1:-1]
    prefix, colon, local = term.partition(":")
    return prefixes[prefix] + local if colon and prefix in prefixes else term


def _index(graph: GenerationGraph, generation: int, scopes: Sequence[str] | None,
           ) -> FilterIndex:
    """The columns of ``graph`` at ``generation`` in ``scopes`` (made on first use)."""
    memory = _memory(graph)
    key = None if scopes is None else tuple(scopes)
    with memory.lock:
        index = memory.at(generation).indexes.get(key)
        if index is None:
            assert isinstance(graph, TsvGraph)
            index = memory.indexes[key] = _new_index(graph, scopes)
        return index


def _new_index(graph: TsvGraph, scopes: Sequence[str] | None) -> FilterIndex:
    """Columns for ``graph`` in ``scopes``, kept on disk under the graph's settled revision
    when it has one (a fresh process then reads them back instead of the graph)."""
    carry = getattr(graph, "carry_columns", None)
    if carry is not None:  # a writer's kept columns, brought to the revision it wrote last
        carry()
    path: str | None = getattr(graph, "path", None)
    revision: str | None = getattr(graph, "settled_revision", None)
    if path is None or revision is None:
        return FilterIndex(graph.select_tsv, scopes)
    return FilterIndex(graph.select_tsv, scopes,
                       files=ColumnFiles(path, revision, scopes),
                       current=lambda: getattr(graph, "settled_revision", None) == revision)


def _estimate(graph: GenerationGraph, shape: FilterShape, triple: Triple,
              terms: Mapping[str, Any]) -> int:
    """How many triples ``triple`` matches with the bindings it uses, up to ``ESTIMATE_CAP``
    (all graphs), per generation."""
    if triple.unbounded(terms):
        return ESTIMATE_CAP  # every term, each one its own zero-length path: not worth counting
    used = sorted(name for name in terms if name in triple.variables)
    values = "" if not used else (
        f"VALUES ({' '.join('?' + name for name in used)}) "
        f"{{ ({' '.join(str(terms[name]) for name in used)}) }}")
    try:
        return _count(graph, shape.pattern_query(triple, values))
    except SparqlError:
        return 1 << 62  # cannot tell: last


def _count(graph: GenerationGraph, query: str) -> int:
    """The number a ``SELECT (COUNT(*) AS ?n)`` query answers, counted once per generation."""
    memory = _memory(graph)
    generation = graph.generation
    with memory.lock:
        known = memory.at(generation).counts.get(query)
    if known is not None:
        return known
    def counted() -> int:
        rows = select(graph, query).rows
        return int(rows[0]["n"]) if rows else 0
    count = (_index(graph, generation, None).counted(query, LINK_COUNTS[query].texts, counted)
             if query in LINK_COUNTS and isinstance(graph, TsvGraph) else counted())
    with memory.lock:
        memory.at(generation).counts[query] = count
    return count


def chunk_links_intact(graph: GenerationGraph) -> bool:
    """Whether every ``schema:isPartOf`` triple can be the link trails minted from a chunk to
    its document: as many of them as chunks (trails writes one per chunk, so a user's own
    ``isPartOf`` triple, anywhere, makes the counts differ). Counted once per generation.
    Filters are evaluated over documents only while this holds (a chunk's document is then
    exactly the group the store expands a document into). A write that may have moved links
    unseen by the counts (marked, ``kg/hand_links.py``) makes it False until ``verify()``."""
    return _links_refusal(graph) is None


def _links_refusal(graph: GenerationGraph) -> str | None:
    """Why the chunk links may not stand for documents (None: they may). A read-only view
    older than the graph's files is refused too: the marks read now may have been cleared
    after a write its state still holds (``retrieve()`` refreshes such a view first; a caller
    of :func:`filter_candidates` may not)."""
    marked = getattr(graph, "hand_links", None)
    if marked is not None and marked.marks():
        return "chunk links or document types changed by hand: trails verify plans it again"
    if marked is not None and getattr(graph, "read_only", False) and not view_current(graph):
        return "a view older than the graph's files"
    if _count(graph, _COUNT_LINKS) != _count(graph, _COUNT_CHUNKS):
        return "the graph has schema:isPartOf triples trails did not write"
    return None


def links_reach_documents(graph: GenerationGraph) -> bool:
    """Whether every ``schema:isPartOf`` triple links to a ``trails:Document`` (then the
    documents stand for the targets of the links). Counted once per generation."""
    return _count(graph, _COUNT_LINKS) == _count(graph, _COUNT_TYPED_TARGETS)


def _calls_functions(graph: KnowledgeGraph, sparql: str) -> bool:
    """Whether ``sparql`` may call one of the graph's Python functions: by local name, or as
    ``prefix:rest`` where the prefix (the graph's or one the filter declares) ends where the
    local name does not start (``schema:`` for ``https://schema.org/``); a false alarm only
    costs the plan."""
    if not isinstance(graph, FunctionGraph):
        return False
    named = [*getattr(graph, "prefixes", {}).items(), *_DECLARED.findall(sparql)]
    return any(iri.rstrip("/#").rsplit("/", 1)[-1].rsplit("#", 1)[-1] in sparql
               or any(iri.startswith(space) and f"{name}:{iri[len(space):]}" in sparql
                      for name, space in named)
               for iri in graph.functions)
