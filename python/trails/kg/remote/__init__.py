"""A knowledge graph behind a SPARQL 1.1 endpoint (Oxigraph server, Jena Fuseki, GraphDB...).

``SparqlEndpointGraph`` offers the surface of the embedded :class:`~trails.kg.OxigraphGraph`
over the SPARQL 1.1 Protocol: the same queries give the same :class:`QueryResult` of pyoxigraph
terms, the same booleans and triples, and scopes confine queries the same way (ADR 0006).

- :mod:`~trails.kg.remote.client`: the graph class, its requests and failures (httpx, the
  ``remote`` extra, imported when a graph is built);
- :mod:`~trails.kg.remote.rewrite`: query texts (prefixes, the default-scope rewrite, the
  refusals), pure functions;
- :mod:`~trails.kg.remote.results`: responses read as the embedded graph's results, and
  ``INSERT DATA`` texts;
- :mod:`~trails.kg.remote.dialect`: what differs on Virtuoso 7 (``dialect="virtuoso"``) and
  how the client makes up for it, or refuses.

Verified servers: ``oxigraph serve`` (``dialect="standard"``, the default) and Virtuoso Open
Source 7.2 (``dialect="virtuoso"``, query and update URL ``http://host:8890/sparql``); both run
the graph contract suite (``tests/test_kg_contract.py``). Queries are sent as URL-encoded
forms (Virtuoso 7 never answers a POST of ``application/sparql-query``), with one ``Accept``
type per query form (JSON results for SELECT/ASK, N-Triples for CONSTRUCT/DESCRIBE).

How scopes are confined on the server
-------------------------------------

- ``scopes=None`` (the administrator's view) sends the protocol parameter
  ``union-default-graph``: the default graph is the union of all graphs, as embedded.
- Named scopes only: ``default-graph-uri`` and ``named-graph-uri`` both list the scopes'
  graphs. The protocol's dataset overrides ``FROM``/``FROM NAMED`` in the text and ``GRAPH``
  reaches only those graphs, exactly like pyoxigraph's ``default_graph``/``named_graphs``.
- The default scope is the store's **default graph**, which the SPARQL protocol can only name
  if the server has a name for it: ``oxigraph serve`` parses every ``default-graph-uri`` as an
  IRI of a named graph and has none. Pass ``default_graph_uri=`` for servers that do (Jena
  Fuseki: ``urn:x-arq:DefaultGraph``); then it is one more protocol graph. Without it, a query
  in the default scope is sent **without** a dataset, after the client has removed every way
  out of the default graph from the text (:func:`~trails.kg.remote.rewrite.default_scope_only`
  says how, and how the parser checks it); a text the rewrite cannot handle is refused
  (:class:`UnsafeFilterError`), never sent.
  This needs a server whose default graph is not the union of all graphs; the client reads the
  server's service description once and refuses to confine the default scope on a server that
  announces ``sd:UnionDefaultGraph`` (``oxigraph serve --union-default-graph``). A server that
  publishes no service description is taken to query its own default graph.
- The default scope together with named scopes needs a dataset whose default graph merges the
  store's default graph with named graphs: without ``default_graph_uri`` no protocol request
  can say that, and such a query raises :class:`ConfigurationError` instead of running
  unconfined.
- ``SERVICE`` is refused in every scoped query: the server would send the inner pattern to any
  endpoint, itself included, without the dataset (an escape seen on ``oxigraph serve``).

Writes and failures
-------------------

``extend`` sends ``INSERT DATA`` in requests of at most ``batch_size`` quads; each request is
atomic on the server, a whole ``extend`` is not (embedded, it is one transaction). Blank node
labels are scoped to a request. A request has ``timeout`` seconds per connect/read/write; a
refused connection, a timeout or an HTTP 5xx is tried again under the graph's resilience
policy (:mod:`trails.resilience`: retries within a deadline, a circuit breaker), then raises
:class:`EndpointUnavailableError`; an HTTP 400 (the server's parser) raises
:class:`SparqlError` at once.
"""

from __future__ import annotations

from trails.kg.remote.client import SparqlEndpointGraph

__all__ = ["SparqlEndpointGraph"]
