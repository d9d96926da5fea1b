"""What a request asks of the library, checked and confined to its key: the arguments of a
retrieve, and a SPARQL query run within the key's scopes. Blocking: called in worker threads.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.audit.records import SparqlQueryRecord, new_run_id, query_digest, started_now
from trails.context import Context
from trails.errors import InvalidArgumentError, PermissionDeniedError
from trails.ingest.expiry import utc_now
from trails.kg.base import Dataset, DatasetGraph, FunctionGraph, QueryOutput
from trails.kg.bindings import apply_bindings
from trails.kg.parse_errors import is_update
from trails.kg.remote.rewrite import query_form
from trails.kg.sparql import check_filter, check_limits, refuse_service
from trails.kg.terms import IRI
from trails.kg.variables import check_bound
from trails.rank import Step
from trails.records import RetrievalResult
from trails.retrieval.arguments import check_scope_argument
from trails.retrieval.recording import SearchCall, observe, record_refusal
from trails.retrieval.request import SearchRequest
from trails.retrieval.retrieve import known_scopes, retrieve
from trails.scopes import (
    DEFAULT_SCOPE,
    SCOPE_BASE,
    check_known_scopes,
    check_scope,
    is_scope_name,
    scope_graph,
    scope_of_graph,
)
from trails.service.keys import ApiKey
from trails.service.models import RetrieveRequest, TermObject
from trails.service.sparql_protocol import SparqlRequest, with_text_dataset
from trails.service.steps import build_steps

__all__ = ["NOTHING_GRANTED", "confine_dataset", "dataset_scopes", "keyed_search",
           "record_sparql", "request_call", "retrieve_options", "run_sparql", "search_scopes",
           "term_bindings", "text_dataset"]

# The note of an answer whose key's scopes hold nothing yet.
NOTHING_GRANTED = "none of the scopes this key grants holds anything"


def search_scopes(ctx: Context, key: ApiKey,
                  requested: Sequence[str] | None) -> list[str] | None:
    """The scopes a search on behalf of ``key`` reads. Those asked for, each granted and
    holding something; none asked for, every granted scope that holds something (an empty
    list when none does); None for a key with every scope that asked for none (the default
    scope, as the library reads it). An error names only scopes the key may read.

    Raises:
        PermissionDeniedError: ``requested`` names a scope the key does not grant.
        UnknownScopeError: ``requested`` names a granted scope that holds nothing.
        InvalidArgumentError: a malformed scope name, or an empty list.
    """
    asked = None if requested is None else check_scope_argument(list(requested))
    confined = key.confine(asked)
    if confined is None:
        return None
    known = known_scopes(ctx, confined)
    if asked is None:
        return [scope for scope in confined if scope in known or scope == DEFAULT_SCOPE]
    check_known_scopes(confined, known, readable=key.scopes)
    return confined


def keyed_search(ctx: Context, key: ApiKey, call: SearchCall,
                 options: Callable[[], dict[str, Any]]) -> RetrievalResult:
    """``retrieve(call.query)`` on behalf of ``key``, recorded in the audit trail whatever
    its answer. It reads :func:`search_scopes` (when none of them holds anything, an answer
    without hits, recorded as such); ``options()`` builds the rest of ``retrieve()``'s
    keyword arguments. A search refused after its request was read (a right or scope the
    key lacks, a filter that does not parse, an argument out of range, a backend down) is
    recorded as refused (``call`` says what was asked), then raised.

    Raises:
        Everything :func:`search_scopes`, ``options`` and ``retrieve()`` raise.
    """
    started = started_now()
    read = call  # once the scopes are known, the refusal record names them (and their levels)
    try:
        key.require("read")
        scopes = search_scopes(ctx, key, call.scopes or None)
        read = dataclasses.replace(call, scopes=[DEFAULT_SCOPE] if scopes is None else scopes)
        arguments = options()
        check_later_than_clock(arguments.get("now"))
        if scopes is not None and not scopes:
            _check_search(ctx, call, arguments)  # nothing to search, but a mistake is still one
            empty = RetrievalResult([], mode=call.mode, plan="empty", candidates=0,
                                    exhaustive=True, notes=[NOTHING_GRANTED])
            searched = dataclasses.replace(call, scopes=[], started=started, why=False,
                                           bindings=arguments.get("bindings"))
            return observe(empty, ctx, searched, 0.0, started_now())
        return retrieve(call.query, ctx, mode=call.mode, k=call.k,  # type: ignore[arg-type]
                        sparql_filter=call.sparql_filter, scope=scopes, caller=key.label,
                        **arguments)
    except Exception as error:
        record_refusal(ctx, dataclasses.replace(read, started=started), error)
        raise


def check_later_than_clock(now: object) -> None:
    """Refuse a ``now`` before the service's clock: a caller of the service may judge
    expiries at a later moment, never an earlier one, so a document past its expiry stays
    gone from every key's answers (expired means gone; the owner's Python API may look back).

    Raises:
        InvalidArgumentError: ``now`` names a moment already past.
    """
    if not isinstance(now, (str, dt.datetime)):
        return
    try:
        moment = utc_now(dt.datetime.fromisoformat(now) if isinstance(now, str) else now)
    except (ValueError, TypeError):
        return  # not a moment: retrieve() names that mistake in its own words
    clock = utc_now()
    if moment < clock:
        raise InvalidArgumentError(
            f"now={moment.isoformat()} is before the service's clock ({clock.isoformat()}): "
            "expiries are judged at now or later through the service, so a document past "
            "its expiry stays gone; leave now out, or give a later moment")


def _check_search(ctx: Context, call: SearchCall, arguments: Mapping[str, Any]) -> None:
    """Refuse what ``retrieve()`` would refuse of ``call`` before reading anything: the
    request as ``retrieve()`` checks it (its ``now``, the combinations no mode can run), and
    its filter as the graph checks it (the text, then the bindings it names and the variables
    nothing binds). ``arguments``: what ``options()`` built (bindings as terms).

    Raises:
        InvalidArgumentError, UnsafeFilterError, SparqlError, UnboundVariableError: with the
            words ``retrieve()`` uses for the same mistake.
    """
    SearchRequest(query=call.query, mode=call.mode, k=call.k,  # type: ignore[arg-type]  # checked here
                  filter=call.sparql_filter, **arguments)
    if call.sparql_filter is None:
        return
    functions = ctx.kg.functions if isinstance(ctx.kg, FunctionGraph) else ()
    check_filter(call.sparql_filter, ctx.kg.prefixes, functions=functions)
    bindings = arguments.get("bindings")
    check_bound(call.sparql_filter, (bindings or {}).keys())
    apply_bindings(call.sparql_filter, bindings)


def term_bindings(bindings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A request's bindings as the library takes them: JSON scalars as they are (a string is
    a plain literal, as in Python), SPARQL JSON results terms as RDF terms.

    Raises:
        InvalidArgumentError: a term that is no valid IRI or literal.
    """
    if bindings is None:
        return None
    converted: dict[str, Any] = {}
    for name, value in bindings.items():
        if not isinstance(value, TermObject):
            converted[name] = value
            continue
        try:
            if value.type == "uri":
                if value.datatype is not None or value.xml_lang is not None:
                    raise ValueError("a uri term takes no datatype or xml:lang")
                # Checked where retrieve() checks an IRI binding, in the same words.
                converted[name] = IRI(value.value)
            elif value.xml_lang is not None:
                if value.datatype is not None:
                    raise ValueError("a literal has a datatype or a language, not both")
                converted[name] = ox.Literal(value.value, language=value.xml_lang)
            else:
                datatype = None if value.datatype is None else ox.NamedNode(value.datatype)
                converted[name] = ox.Literal(value.value, datatype=datatype)
        except ValueError as exc:
            raise InvalidArgumentError(f"the binding {name!r}: {exc}") from None
    return converted


def retrieve_options(body: RetrieveRequest, reranker: Step | None) -> dict[str, Any]:
    """The keyword arguments of ``retrieve()`` for ``body`` beyond its query, mode, k,
    filter and scopes (:func:`keyed_search` passes those); ``reranker``: what the ``rerank``
    step runs (the service's cross-encoder, if it has one).

    Raises:
        InvalidArgumentError: an unknown step or option, a malformed binding or ``now``.
    """
    return {
        "bindings": term_bindings(body.bindings), "fusion": body.fusion,
        "steps": build_steps([(s.name, s.options) for s in body.steps], reranker),
        "min_score": body.min_score, "why": body.why, "now": body.now,
        "fallback": body.fallback,
    }


def request_call(body: RetrieveRequest, caller: str) -> SearchCall:
    """What ``body`` asks, as the audit trail records a search."""
    return SearchCall.asked(body, caller, steps=[s.name for s in body.steps])


def confine_dataset(ctx: Context, key: ApiKey, request: SparqlRequest) -> Dataset:
    """The dataset a protocol query runs over, within ``key``'s scopes.

    Without a dataset: the scopes the key reads (a key with every scope: every scope that
    holds triples), each both merged into the default graph and a named graph, and no other
    graph (not the minting or audit records). With ``default-graph-uri``/``named-graph-uri``,
    or else the query's ``FROM``/``FROM NAMED``: the graphs they name, as the protocol and
    SPARQL define; a key with every scope may name any graph, a scoped key only its scopes'
    graphs (``urn:trails:scope:NAME``; the default scope's graph is the store's default
    graph). In the query's text, another graph reaches nothing, as ``GRAPH`` does.

    Raises:
        PermissionDeniedError: a protocol parameter names a graph outside the key's scopes
            (whether or not it exists, so the answer tells nothing about graphs the key
            cannot read).
        UnknownScopeError: it names the graph of a scope the key reads that holds nothing.
        InvalidArgumentError: it names the default scope's graph as a named graph.
    """
    if request.default_graphs is None and request.named_graphs is None:
        scopes = key.confine(None)
        graphs = [scope_graph(s) for s in (ctx.kg.scopes() if scopes is None else scopes)]
        return Dataset(tuple(graphs), tuple(g for g in graphs if isinstance(g, ox.NamedNode)))
    chosen = (_readable_graph if request.in_text else _granted_graph)
    default = [g for iri in request.default_graphs or () if (g := chosen(key, iri)) is not None]
    named = [g for iri in request.named_graphs or () if (g := chosen(key, iri)) is not None]
    if any(isinstance(g, ox.DefaultGraph) for g in named):  # it was dropped, unsaid
        raise InvalidArgumentError(
            f"the default scope's graph ({SCOPE_BASE}{DEFAULT_SCOPE}) is the store's default "
            "graph, which no GRAPH can name: name it as a default graph (default-graph-uri, "
            "FROM), not as a named graph (named-graph-uri, FROM NAMED)")
    dataset = Dataset(tuple(default), tuple(g for g in named if isinstance(g, ox.NamedNode)))
    # A scope's graph that holds nothing is a typo more often than not: refused, as a search
    # in such a scope is, rather than answered as an empty graph.
    asked = [scope for scope in dataset_scopes(dataset) if is_scope_name(scope)]
    check_known_scopes(asked, known_scopes(ctx, asked), readable=key.scopes)
    return dataset


def text_dataset(ctx: Context, key: ApiKey, query: str,
                 scopes: Sequence[str] | None) -> Dataset | None:
    """The dataset ``query``'s own ``FROM``/``FROM NAMED`` name, within ``scopes`` (those
    ``key`` grants that the call reads; None: every graph), as :func:`confine_dataset` reads
    it; None when the text names none.

    Raises:
        InvalidArgumentError, UnknownScopeError: as :func:`confine_dataset`; and the text
            names a dataset on a graph that runs queries over scopes only (a remote one),
            which would answer from the scopes instead.
    """
    asked = with_text_dataset(SparqlRequest(query), ctx.kg.prefixes, None)
    if not asked.in_text:
        return None
    if not isinstance(ctx.kg, DatasetGraph):
        raise InvalidArgumentError(
            f"this context's graph ({type(ctx.kg).__name__}) runs queries over scopes only, "
            "so it cannot read the graphs FROM and FROM NAMED name: remove them and name the "
            "scopes to read with the scopes argument")
    reader = key if scopes is None else dataclasses.replace(key, scopes=frozenset(scopes))
    return confine_dataset(ctx, reader, asked)


def _readable_graph(key: ApiKey, iri: str) -> ox.NamedNode | ox.DefaultGraph | None:
    """The graph ``iri`` names, if ``key`` may read it."""
    scope = scope_of_graph(iri)
    if scope is not None and (key.scopes is None or scope in key.scopes):
        try:
            return scope_graph(check_scope(scope))
        except ValueError:
            pass  # no scope's name: a graph like any other
    return ox.NamedNode(iri) if key.scopes is None else None


def _granted_graph(key: ApiKey, iri: str) -> ox.NamedNode | ox.DefaultGraph:
    graph = _readable_graph(key, iri)
    if graph is None:
        raise PermissionDeniedError(
            f"the API key {key.label!r} does not grant the scope of the graph <{iri}>; it "
            f"reads only its scopes' graphs ({SCOPE_BASE}NAME for "
            f"{', '.join(sorted(key.scopes or ()))})")
    return graph


def dataset_scopes(dataset: Dataset) -> list[str]:
    """The scopes whose graphs a dataset reads (the audit record's scopes)."""
    scopes = [DEFAULT_SCOPE if isinstance(g, ox.DefaultGraph) else scope_of_graph(g.value)
              for g in (*dataset.default, *dataset.named)]
    return list(dict.fromkeys(s for s in scopes if s is not None))


def run_sparql(ctx: Context, query: str, dataset: Dataset, base_iri: str) -> QueryOutput:
    """Run a protocol query over ``dataset`` (see :func:`confine_dataset`), relative IRIs
    resolved against ``base_iri`` (the endpoint's URL); never a SERVICE call, never an
    update.

    Raises:
        SparqlError: the query does not parse, is too large, or uses SERVICE.
        PermissionDeniedError: the text is an update.
        InvalidArgumentError: the graph cannot run a query over such a dataset.
    """
    check_limits(query)
    if is_update(query):  # no query starts so: refused whether or not it parses
        raise PermissionDeniedError(
            "this endpoint answers SPARQL queries only: updates are refused. Add documents "
            "with POST /ingest and remove them with DELETE /documents/{iri}")
    refuse_service(query, ctx.kg.prefixes)
    if isinstance(ctx.kg, DatasetGraph):
        return ctx.kg.query_dataset(query, dataset, scopes=dataset_scopes(dataset),
                                    base_iri=base_iri)
    scopes = dataset_scopes(dataset)  # a graph that can only be confined to scopes
    graphs = [scope_graph(s) for s in scopes]
    if (not scopes or set(graphs) != set(dataset.default)
            or {g for g in graphs if isinstance(g, ox.NamedNode)} != set(dataset.named)):
        raise InvalidArgumentError(
            f"this context's graph ({type(ctx.kg).__name__}) runs queries over scopes only: "
            "name the same scope graphs as default and named graphs (default-graph-uri and "
            "named-graph-uri, or FROM and FROM NAMED in the query), or none")
    return ctx.kg.query(query, None, scopes=scopes)


def record_sparql(ctx: Context, caller: str, query: str, scopes: Sequence[str] | None,
                  output: QueryOutput, started: str) -> str | None:
    """Record an answered protocol query in the audit trail with the caller's label; its run
    id, or None when the context does not audit (a record that cannot be written is logged
    and counted, never raised)."""
    if not ctx.audit.enabled:
        return None
    answers = int(output) if isinstance(output, bool) else len(output)
    settings = ctx.audit.settings
    record = SparqlQueryRecord(
        run_id=new_run_id(), caller=caller, started=started, ended=started_now(),
        query_sha256=query_digest(query),
        query=query if settings.query_text == "full" and not settings.digest_only(scopes)
        else None,
        form="ASK" if isinstance(output, bool) else query_form(query),
        scopes=[] if scopes is None else list(scopes), levels=settings.levels_of(scopes),
        answers=answers)
    return record.run_id if ctx.audit.record(record) else None
