"""``SparqlEndpointGraph``: the embedded graph's surface over the SPARQL 1.1 Protocol (httpx).

The query texts it sends are built in :mod:`trails.kg.remote.rewrite`, the responses read in
:mod:`trails.kg.remote.results` (a result the server cut, again in pages: ``paging``); this
module holds the requests, the protocol dataset that confines a query to scopes, and how
failures are reported.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from trails import deadline
from trails._lazy import require
from trails.errors import ConfigurationError, EndpointUnavailableError, SparqlError
from trails.kg.bindings import apply_bindings
from trails.kg.exchange import QuadExport, load_quads
from trails.kg.parse_errors import is_update, parse_problem
from trails.kg.rdfio import RdfSource
from trails.kg.remote.connection import auth_headers, split_credentials, ssl_context
from trails.kg.remote.connection import update_url as _default_update_url
from trails.kg.remote.dialect import (
    VIRTUOSO_DEFAULT_GRAPH,
    VIRTUOSO_REPLACE,
    Params,
    check_dialect,
    dataset,
    refuse_whole_store_updates,
    update_graphs,
    virtuoso_scoped,
    virtuoso_store_select,
    virtuoso_union,
    virtuoso_update,
)
from trails.kg.remote.paging import read_all
from trails.kg.remote.results import (
    QueryAnswer,
    batches,
    canonical_booleans,
    insert_requests,
    server_message,
)
from trails.kg.remote.rewrite import (
    default_scope_only,
    query_form,
    refuse_service,
    refuse_similarity,
    with_prefixes,
)
from trails.kg.remote.transport import ATOMIC as _ATOMIC
from trails.kg.remote.transport import DEFAULT_MAX_RESPONSE_BYTES, answered, check_limits, send
from trails.kg.reserved import check_quads, check_removal, check_update
from trails.kg.result import QueryResult
from trails.kg.sparql import PREFIXES, check_filter, iris_or_error
from trails.kg.variables import check_bound
from trails.recorded import Settings, Where, with_resilience
from trails.resilience import Resilience, breaker_for
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE, scope_graph, scope_of_graph

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    import httpx

__all__ = ["SparqlEndpointGraph"]

_RESULTS_JSON = "application/sparql-results+json"
_N_TRIPLES = "application/n-triples"
_FORM = "application/x-www-form-urlencoded"
_UPDATE = "application/sparql-update"
_UNION_DEFAULT_GRAPH = "http://www.w3.org/ns/sparql-service-description#UnionDefaultGraph"


class SparqlEndpointGraph(QuadExport):
    """A knowledge graph on a SPARQL 1.1 endpoint, with the surface of ``OxigraphGraph``.

    Args:
        query_url: the endpoint's query URL (``oxigraph serve``: ``http://host:7878/query``).
        update_url: its update URL; by default ``.../update`` when ``query_url`` ends with
            ``/query``, else ``query_url`` itself. A ``user:password@`` in either URL is
            sent as basic auth and kept out of the URL this graph shows (messages, ``repr``,
            ``trails.json``, which records no secret: reopened, the credentials come from
            ``$TRAILS_SPARQL_AUTH``).
        headers: sent with every request (an ``Authorization`` header, say).
        auth: an httpx auth (``("user", "password")`` for basic auth).
        timeout: seconds one try may take in all, from connecting to the answer's last byte.
        max_response_bytes: the most of an answer read (decompressed; default 256 MiB): a
            larger one raises SparqlError naming this setting.
        resilience: retries and the circuit breaker (:class:`trails.resilience.Resilience`,
            or a mapping of its fields; default: its defaults). A query is retried after a
            refused or reset connection, a timeout, HTTP 5xx or 429 (``Retry-After``
            honoured); an update only when it certainly never reached the server (the
            connection was refused), since the server may have applied one that timed out.
            After ``failure_threshold`` failed calls in a row the endpoint's circuit opens and
            calls fail at once until a probe succeeds (docs/resilience.md).
        batch_size: at most this many quads per ``INSERT DATA`` request in :meth:`extend`.
        default_graph_uri: an IRI the server accepts in ``default-graph-uri`` for its default
            graph, if it has one (Jena Fuseki: ``urn:x-arq:DefaultGraph``); see
            :mod:`trails.kg.remote` for how the default scope is confined without it. With
            ``dialect="virtuoso"``: the named graph that holds the store's default graph
            (``urn:trails:default-graph`` unless given).
        dialect: ``"standard"``, or ``"virtuoso"`` for Virtuoso 7 (query URL ``.../sparql``),
            whose differences :mod:`trails.kg.remote.dialect` lists.

    Raises:
        InvalidArgumentError: an unknown ``dialect``, a ``timeout`` that is not a positive,
            finite number, a ``batch_size`` or ``max_response_bytes`` that is not a positive
            integer.

    >>> kg = SparqlEndpointGraph("http://127.0.0.1:7878/query")  # doctest: +SKIP
    >>> kg.query("SELECT ?n WHERE { ?s schema:name ?n }", scopes=["legal"]).rows  # doctest: +SKIP
    """

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        timeout: float = 10.0,
        batch_size: int = 5000,
        default_graph_uri: str | None = None,
        dialect: str = "standard",
        resilience: Resilience | Mapping[str, Any] | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        check_limits(timeout, batch_size, max_response_bytes)
        self._httpx = require("httpx", "A knowledge graph on a SPARQL endpoint")
        # A URL's user:password@ leaves the URL, which messages, trails.json and /health
        # show, and is sent as basic auth (an explicit ``auth`` wins, as in httpx).
        self.query_url, query_login = split_credentials(query_url)
        self.update_url, update_login = split_credentials(
            update_url if update_url is not None else _default_update_url(query_url))
        self._url_auth = {} if auth is not None else {
            url: self._httpx.BasicAuth(*login)
            for url, login in ((self.query_url, query_login), (self.update_url, update_login))
            if login is not None}
        self.timeout = float(timeout)
        self.max_response_bytes = max_response_bytes
        self.batch_size = batch_size
        self.dialect = check_dialect(dialect)
        self._virtuoso = dialect == "virtuoso"
        if self._virtuoso and default_graph_uri is None:
            default_graph_uri = VIRTUOSO_DEFAULT_GRAPH
        self.default_graph_uri = default_graph_uri
        # Where quads of the default graph are written: a named graph on Virtuoso.
        self._stored_default = default_graph_uri if self._virtuoso else None
        self.prefixes = dict(PREFIXES)
        # Whether writes are refused here: the server decides (credentials, a read-only one).
        self.read_only = False
        self._client: httpx.Client = self._httpx.Client(
            headers=dict(headers or {}), auth=auth, timeout=self._httpx.Timeout(self.timeout),
            follow_redirects=False, transport=deadline.transport(
                self.timeout, self.query_url, verify=ssl_context(self._httpx)))
        self._plain_default_graph: bool | None = None  # None: not checked yet
        self.resilience = Resilience.from_settings(resilience)
        self.resilience.check_url("the SPARQL endpoint", self.query_url, self.update_url)
        self._breaker = breaker_for("the SPARQL endpoint", self.query_url, self.resilience)

    @property
    def client(self) -> httpx.Client:
        """The underlying ``httpx.Client`` (to add event hooks, say)."""
        return self._client

    # -- queries -------------------------------------------------------------------------------

    def query(
        self,
        sparql: str,
        bindings: Mapping[str, Any] | None = None,
        *,
        scopes: Sequence[str] | None = None,
    ) -> QueryAnswer:
        """Run a SPARQL query: SELECT -> QueryResult, ASK -> bool, CONSTRUCT -> list of triples.

        Raises:
            SparqlError: the query does not parse (the server's message), is an update
                (nothing sent) or, with ``scopes``, cannot be confined (UnsafeFilterError:
                it uses SERVICE, or GRAPH/FROM in a form the default-scope rewrite cannot
                prove harmless).
            ConfigurationError: the default scope with named scopes on a server that cannot
                name its default graph, or the endpoint rejects the credentials or the URL.
            EndpointUnavailableError: refused, timed out, or HTTP 5xx.
        """
        refuse_similarity(sparql, self.prefixes)
        if is_update(sparql):  # some servers (Virtuoso) run an update sent as a query
            raise SparqlError(parse_problem(sparql, self.prefixes, "an update"))
        text = with_prefixes(apply_bindings(sparql, bindings), self.prefixes)
        text, params = self._confine(text, scopes)
        form = query_form(text)
        # One type per form: Virtuoso answers a CONSTRUCT with a result set if allowed to.
        accept = _N_TRIPLES if form in ("CONSTRUCT", "DESCRIBE") else _RESULTS_JSON
        answer = read_all(lambda sent: self._post(self.query_url, "query", sent, params,
                                                  accept=accept), text, self.query_url, form)
        return canonical_booleans(answer) if self._virtuoso else answer

    def select_iris(
        self,
        sparql: str,
        bindings: Mapping[str, Any] | None = None,
        *,
        scopes: Sequence[str] | None = None,
    ) -> list[str]:
        """Run a retrieval filter (checked with ``check_filter`` before any request) and
        return its IRIs in order; non-IRI values are skipped, duplicates keep the first place."""
        refuse_similarity(sparql, self.prefixes)
        variable = check_filter(sparql, self.prefixes)
        check_bound(sparql, (bindings or {}).keys())  # a forgotten binding is no empty answer
        result = self.query(sparql, bindings, scopes=scopes)
        if not isinstance(result, QueryResult):  # pragma: no cover - check_filter ensures SELECT
            raise SparqlError("the SPARQL filter did not return solutions")
        seen: dict[str, None] = {}
        others = []  # literals, blank nodes: no candidate (iris_or_error)
        for row in result.raw:
            term = row.get(variable)
            if isinstance(term, ox.NamedNode):
                seen.setdefault(term.value, None)
            elif term is not None:
                others.append(str(term))
        return iris_or_error(variable, list(seen), others)

    # -- updates -------------------------------------------------------------------------------

    def update(self, sparql: str, bindings: Mapping[str, Any] | None = None) -> None:
        """Run a SPARQL 1.1 update (one request: the server applies it whole or not at all).

        Raises:
            SparqlError: it does not parse, or (Virtuoso) it drops or clears all graphs at once,
                which Virtuoso acknowledges without doing.
        """
        text = apply_bindings(sparql, bindings) if bindings else sparql
        check_update(text, self.prefixes)
        text = with_prefixes(text, self.prefixes)
        if self._virtuoso:
            refuse_whole_store_updates(text)
            named = update_graphs(text)  # None: every graph, listed (one query)
            text = virtuoso_update(text, str(self.default_graph_uri),
                                   self._store_graphs() if named is None else named)
        self._post(self.update_url, "update", text, [])

    def add(self, quad: ox.Quad) -> None:
        """Add one quad (one request)."""
        self.extend([quad])

    def extend(self, quads: Iterable[ox.Quad]) -> None:
        """Add quads with ``INSERT DATA`` requests of at most ``batch_size`` quads each.

        Each request is atomic; if one fails, the earlier ones stay (adding quads is
        idempotent, so re-running the whole call finishes the work).
        """
        for batch in batches(check_quads(quads), self.batch_size):
            for text in insert_requests(batch, self._stored_default, virtuoso=self._virtuoso):
                self._post(self.update_url, "update", text, [])

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None:
        """Same as :meth:`extend` (the server has no separate bulk path over the protocol)."""
        self.extend(quads)

    def remove_graph(self, graph: ox.NamedNode | ox.DefaultGraph) -> None:
        """Remove a named graph and its triples (the default graph: its triples)."""
        check_removal(graph)
        if isinstance(graph, ox.DefaultGraph):
            where = f"GRAPH <{self._stored_default}>" if self._stored_default else "DEFAULT"
            self.update(f"CLEAR SILENT {where}")
        else:
            self.update(f"DROP SILENT GRAPH {graph}")

    def load(self, source: RdfSource | Any, format: str | None = None, scope: str | None = None,
             *, base_iri: str | None = None, replace: bool | str = False,
             allow_empty: bool = False) -> int:
        """Load RDF as :meth:`trails.kg.OxigraphGraph.load` does (and raises): parsed here,
        sent as one ``INSERT DATA`` request (with ``replace``, one update) the server applies
        whole or not at all (whatever ``batch_size`` says; raise ``timeout`` for a large
        file). On Virtuoso 7, one a ~2,000 triples with blank nodes, and ``replace`` is
        refused (ConfigurationError, nothing sent): see ``VIRTUOSO_REPLACE``."""
        return load_quads(self._insert_at_once, source, format, scope, base_iri, replace=replace,
                          update=self.update, query=self.query, allow_empty=allow_empty,
                          replace_refused=VIRTUOSO_REPLACE if self._virtuoso else None)

    def _insert_at_once(self, quads: list[ox.Quad]) -> None:
        if not quads:
            return
        # One request; on Virtuoso one a ~2,000 triples with blank nodes. (A graph named by a
        # blank node was refused when the source was read.)
        for text in insert_requests(quads, self._stored_default, virtuoso=self._virtuoso):
            self._post(self.update_url, "update", text, [])

    def _quads(self, scope: str | None) -> list[ox.Quad]:
        """One scope's quads (confined as a scoped query is), or every graph's in one query,
        so a blank node shared by two graphs stays one node."""
        if scope is not None:
            graph = scope_graph(scope)
            rows = self.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }", scopes=[scope])
            return [ox.Quad(r["s"], r["p"], r["o"], graph)
                    for r in (rows.raw if isinstance(rows, QueryResult) else [])]
        result = self._plain_select("?s ?p ?o ?g", "export every graph")
        default = ox.NamedNode(self._stored_default) if self._stored_default else None
        return [ox.Quad(r["s"], r["p"], r["o"],
                        ox.DefaultGraph() if r["g"] is None or r["g"] == default else r["g"])
                for r in result.raw]

    def scopes(self) -> list[str]:
        """The scopes that hold triples: ``default`` and every scope's named graph."""
        result = self.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } "
                            f'FILTER(STRSTARTS(STR(?g), "{SCOPE_BASE}")) }}')
        named = (scope_of_graph(str(g)) for g in result.column("g")) if isinstance(
            result, QueryResult) else ()
        return [DEFAULT_SCOPE, *sorted(s for s in named if s is not None and s != DEFAULT_SCOPE)]

    def __len__(self) -> int:
        """The number of quads on the server (one COUNT query)."""
        result = self._plain_select("(COUNT(*) AS ?n)", "count the quads of the store")
        return int(result.rows[0]["n"]) if result.rows else 0

    def _plain_select(self, projection: str, purpose: str) -> QueryResult:
        """``SELECT projection`` over the quads ``?s ?p ?o ?g`` of the server's own default
        graph and its named graphs (no dataset; on Virtuoso, every graph but its own)."""
        if self._virtuoso:
            text = virtuoso_store_select(projection)
        else:
            self._check_default_graph_mode(purpose)
            text = (f"SELECT {projection} WHERE {{ {{ ?s ?p ?o }} UNION "
                    "{ GRAPH ?g { ?s ?p ?o } } }")
        result = read_all(lambda sent: self._post(self.query_url, "query", sent, [],
                                                  accept=_RESULTS_JSON), text, self.query_url)
        if self._virtuoso:
            result = canonical_booleans(result)
        if not isinstance(result, QueryResult):  # pragma: no cover - a SELECT's answer
            raise SparqlError(f"the endpoint {self.query_url} answered a SELECT with no rows")
        return result

    def flush(self) -> None:
        """Nothing to do: the server has applied every request that returned."""

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __repr__(self) -> str:
        return f"<SparqlEndpointGraph {self.query_url}>"

    # -- scopes ------------------------------------------------------------------------------

    def _confine(self, text: str, scopes: Sequence[str] | None) -> tuple[str, Params]:
        """The text to send and the protocol parameters that confine it to ``scopes``."""
        if scopes is None:
            return self._union_view(text)
        names = list(dict.fromkeys(scopes))  # a scope named twice is one graph, sent once
        if not names:
            raise ValueError("scopes=[] names no scope; pass None for the union of all graphs")
        refuse_service(text)
        graphs = [scope_graph(s) for s in names]  # checks the names
        named = [g.value for g in graphs if isinstance(g, ox.NamedNode)]
        if self._virtuoso:
            return virtuoso_scoped(text, named, len(named) < len(graphs),
                                   str(self.default_graph_uri))
        if len(named) == len(graphs):
            return text, dataset(named, named)
        if self.default_graph_uri is not None:
            # The default scope adds no named-graph-uri: it brings no named graph.
            return text, dataset(named + [self.default_graph_uri], named)
        if named:
            others = names[1:] if names[0] == DEFAULT_SCOPE else named
            raise ConfigurationError(
                f"the endpoint {self.query_url} cannot name its default graph in the SPARQL "
                f"protocol (oxigraph serve cannot), so a query cannot be confined to the default "
                f"scope together with {', '.join(map(repr, others))}: "
                "query the scopes one at a time, or pass default_graph_uri=... if the server "
                "names its default graph (Jena Fuseki: urn:x-arq:DefaultGraph)")
        self._check_default_graph_mode("confine a query to the default scope")
        return default_scope_only(text), []

    def _union_view(self, text: str) -> tuple[str, Params]:
        """Every graph as the default graph (the protocol's ``union-default-graph``)."""
        if self._virtuoso:
            return virtuoso_union(text, str(self.default_graph_uri), self._store_graphs)
        return text, [("union-default-graph", "")]

    def _store_graphs(self) -> list[str]:
        """Virtuoso: the graphs that hold the store's quads (not Virtuoso's own)."""
        return [r["g"].value for r in self._plain_select("DISTINCT ?g", "list graphs").raw]

    def _check_default_graph_mode(self, purpose: str) -> None:
        """Refuse a server whose default graph is the union of all graphs (read once)."""
        if self._plain_default_graph is None:
            response = self._send("GET", self.query_url, "service description request",
                                  headers={"Accept": _N_TRIPLES})
            if response.status_code >= 500:
                raise EndpointUnavailableError(
                    f"the SPARQL endpoint {self.query_url} failed with HTTP "
                    f"{response.status_code}: {server_message(response)}. {_ATOMIC}")
            # A server that describes no union default graph (or no service at all) is taken
            # at its word: the package documentation states the requirement.
            self._plain_default_graph = not (
                response.status_code == 200 and _UNION_DEFAULT_GRAPH in response.text)
        if not self._plain_default_graph:
            raise ConfigurationError(
                f"the endpoint {self.query_url} announces a union default graph "
                "(oxigraph serve --union-default-graph), so a query without a dataset sees every "
                f"graph and trails cannot {purpose}; restart the server without that option "
                "(trails asks for the union itself where it wants it)")

    # -- HTTP ----------------------------------------------------------------------------------

    def _post(self, url: str, kind: str, text: str, params: Params,
              accept: str | None = None) -> httpx.Response:
        """A query as an HTML form (the protocol's URL-encoded POST: Virtuoso 7 never answers
        a POST of ``application/sparql-query``), an update as ``application/sparql-update``."""
        query = kind == "query"
        headers = {"Content-Type": _FORM if query else f"{_UPDATE}; charset=utf-8",
                   **({"Accept": accept} if accept else {})}
        body = (urllib.parse.urlencode([("query", text), *params]) if query else text).encode()
        response = self._send("POST", url, kind, content=body, headers=headers)
        return answered(response, url, kind, text)

    def _send(self, method: str, url: str, kind: str, **kwargs: Any) -> httpx.Response:
        if url in self._url_auth:
            kwargs["auth"] = self._url_auth[url]
        try:
            return send(self._client, self.resilience, self._breaker, self.timeout, method, url,
                        kind, max_bytes=self.max_response_bytes, **kwargs)
        except EndpointUnavailableError:
            self._plain_default_graph = None  # the server may come back with other options
            raise

    # -- trails.json (trails.recorded.Recordable) ---------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        """Secrets are not settings: the Authorization header is ``$TRAILS_SPARQL_AUTH``."""
        options: dict[str, Any] = dict(settings)
        return cls(**options, headers=auth_headers())

    def recorded_settings(self, root: Path) -> Settings | None:
        settings: Settings = {"query_url": self.query_url, "update_url": self.update_url,
                              "timeout": self.timeout, "batch_size": self.batch_size}
        if self.default_graph_uri is not None:
            settings["default_graph_uri"] = self.default_graph_uri
        if self.dialect != "standard":
            settings["dialect"] = self.dialect
        if self.max_response_bytes != DEFAULT_MAX_RESPONSE_BYTES:
            settings["max_response_bytes"] = self.max_response_bytes
        return with_resilience(settings, self.resilience)
