"""A knowledge graph behind a SPARQL 1.1 endpoint (Oxigraph server, Jena Fuseki, GraphDB...).

``SparqlEndpointGraph`` offers the surface of the embedded :class:`~trails.kg.OxigraphGraph`
over the SPARQL 1.1 Protocol: the same queries give the same :class:`QueryResult` of pyoxigraph
terms, the same booleans and triples, and scopes confine queries the same way (ADR 0006).

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
  in the default scope is sent **without** a dataset (its default graph is then the store's
  default graph) after the client has removed every way out of it from the text: ``FROM`` and
  ``FROM NAMED`` clauses are deleted (embedded, the scope's dataset overrides them) and each
  ``GRAPH t { ... }`` becomes an empty group binding no solution (embedded, the default scope
  has no named graphs, so ``GRAPH`` matches nothing). The rewrite does not rely on its own
  reading of the text: the SPARQL parser (pyoxigraph's, the parser of ``oxigraph serve``)
  checks it. Every ``graph``/``from``/``service`` in the final text, wherever it stands, has
  one letter changed (a letter for a letter, so strings, IRIs and comments keep their extent)
  and the result must still parse, which it does only if none of them was a keyword. A text
  the rewrite cannot handle is refused (:class:`UnsafeFilterError`), never sent.
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
labels are scoped to a request. Every request fails fast: no retries, ``timeout`` seconds per
connect/read/write; a refused connection, a timeout or an HTTP 5xx raises
:class:`EndpointUnavailableError`, an HTTP 400 (the server's parser) :class:`SparqlError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails._lazy import require
from trails.errors import (
    ConfigurationError,
    EndpointUnavailableError,
    SparqlError,
    UnsafeFilterError,
)
from trails.kg.bindings import apply_bindings
from trails.kg.result import QueryResult
from trails.kg.sparql import PREFIXES, check_filter, uses_similarity
from trails.scopes import DEFAULT_SCOPE, scope_graph

__all__ = ["SparqlEndpointGraph"]

_RESULTS_JSON = "application/sparql-results+json"
_N_TRIPLES = "application/n-triples"
_ACCEPT = f"{_RESULTS_JSON}, {_N_TRIPLES};q=0.9"
_UNION_DEFAULT_GRAPH = "http://www.w3.org/ns/sparql-service-description#UnionDefaultGraph"
_EMPTY = ox.Store()


class SparqlEndpointGraph:
    """A knowledge graph on a SPARQL 1.1 endpoint, with the surface of ``OxigraphGraph``.

    Args:
        query_url: the endpoint's query URL (``oxigraph serve``: ``http://host:7878/query``).
        update_url: its update URL; by default ``.../update`` when ``query_url`` ends with
            ``/query``, else ``query_url`` itself.
        headers: sent with every request (an ``Authorization`` header, say).
        auth: an httpx auth (``("user", "password")`` for basic auth).
        timeout: seconds allowed to connect, and then for each read and write, per request.
            There are no retries: an unavailable endpoint fails the call at once.
        batch_size: at most this many quads per ``INSERT DATA`` request in :meth:`extend`.
        default_graph_uri: an IRI the server accepts in ``default-graph-uri`` for its default
            graph, if it has one (Jena Fuseki: ``urn:x-arq:DefaultGraph``); see the module
            documentation for how the default scope is confined without it.

    >>> kg = SparqlEndpointGraph("http://127.0.0.1:7878/query")  # doctest: +SKIP
    >>> kg.query("SELECT ?n WHERE { ?s schema:name ?n }", scopes=["legal"]).rows  # doctest: +SKIP
    """

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        timeout: float = 10.0,
        batch_size: int = 5000,
        default_graph_uri: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._httpx = require("httpx", "A knowledge graph on a SPARQL endpoint")
        self.query_url = query_url
        if update_url is None:
            update_url = query_url[: -len("/query")] + "/update" if query_url.endswith("/query") else query_url
        self.update_url = update_url
        self.timeout = float(timeout)
        self.batch_size = batch_size
        self.default_graph_uri = default_graph_uri
        self.prefixes = dict(PREFIXES)
        self._client = self._httpx.Client(
            headers=dict(headers or {}), auth=auth, timeout=self._httpx.Timeout(self.timeout),
            follow_redirects=False, verify=_ssl_context(self._httpx))
        self._plain_default_graph: bool | None = None  # None: not checked yet

    @property
    def client(self) -> Any:
        """The underlying ``httpx.Client`` (to add event hooks, say)."""
        return self._client

    # -- queries -------------------------------------------------------------------------------

    def query(
        self,
        sparql: str,
        bindings: Mapping[str, Any] | None = None,
        *,
        scopes: Sequence[str] | None = None,
    ) -> QueryResult | bool | list[ox.Triple]:
        """Run a SPARQL query: SELECT -> QueryResult, ASK -> bool, CONSTRUCT -> list of triples.

        Raises:
            SparqlError: the query does not parse (the server's message) or, with ``scopes``,
                cannot be confined (UnsafeFilterError: it uses SERVICE, or GRAPH/FROM in a
                form the default-scope rewrite cannot prove harmless).
            ConfigurationError: the default scope with named scopes on a server that cannot
                name its default graph, or the endpoint rejects the credentials or the URL.
            EndpointUnavailableError: refused, timed out, or HTTP 5xx.
        """
        _refuse_similarity(sparql, self.prefixes)
        text = self._with_prefixes(apply_bindings(sparql, bindings))
        text, params = self._confine(text, scopes)
        response = self._post(self.query_url, "query", text, "application/sparql-query", params,
                              accept=_ACCEPT)
        return _parse_response(response, self.query_url)

    def select_iris(
        self,
        sparql: str,
        bindings: Mapping[str, Any] | None = None,
        *,
        scopes: Sequence[str] | None = None,
    ) -> list[str]:
        """Run a retrieval filter (checked with ``check_filter`` before any request) and
        return its IRIs in order; non-IRI values are skipped, duplicates keep the first place."""
        _refuse_similarity(sparql, self.prefixes)
        variable = check_filter(sparql, self.prefixes)
        result = self.query(sparql, bindings, scopes=scopes)
        if not isinstance(result, QueryResult):  # pragma: no cover - check_filter ensures SELECT
            raise SparqlError("the SPARQL filter did not return solutions")
        seen: dict[str, None] = {}
        for row in result.raw:
            term = row.get(variable)
            if isinstance(term, ox.NamedNode):
                seen.setdefault(term.value, None)
        return list(seen)

    # -- updates -------------------------------------------------------------------------------

    def update(self, sparql: str, bindings: Mapping[str, Any] | None = None) -> None:
        """Run a SPARQL 1.1 update (one request: the server applies it whole or not at all)."""
        text = apply_bindings(sparql, bindings) if bindings else sparql
        self._post(self.update_url, "update", self._with_prefixes(text),
                   "application/sparql-update", [])

    def add(self, quad: ox.Quad) -> None:
        self.extend([quad])

    def extend(self, quads: Iterable[ox.Quad]) -> None:
        """Add quads with ``INSERT DATA`` requests of at most ``batch_size`` quads each.

        Each request is atomic; if one fails, the earlier ones stay (adding quads is
        idempotent, so re-running the whole call finishes the work).
        """
        for batch in _batches(quads, self.batch_size):
            self._post(self.update_url, "update", _insert_data(batch),
                       "application/sparql-update", [])

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None:
        """Same as :meth:`extend` (the server has no separate bulk path over the protocol)."""
        self.extend(quads)

    def remove_graph(self, graph: ox.NamedNode | ox.DefaultGraph) -> None:
        """Remove a named graph and its triples (the default graph: its triples)."""
        if isinstance(graph, ox.DefaultGraph):
            self.update("CLEAR SILENT DEFAULT")
        else:
            self.update(f"DROP SILENT GRAPH {graph}")

    def __len__(self) -> int:
        """The number of quads on the server (one COUNT query)."""
        self._check_default_graph_mode("count the quads of the store")
        response = self._post(
            self.query_url, "query",
            "SELECT (COUNT(*) AS ?n) WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
            "application/sparql-query", [], accept=_RESULTS_JSON)
        result = _parse_response(response, self.query_url)
        return int(result.rows[0]["n"]) if isinstance(result, QueryResult) and result.rows else 0

    def flush(self) -> None:
        """Nothing to do: the server has applied every request that returned."""

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"<SparqlEndpointGraph {self.query_url}>"

    # -- scopes ------------------------------------------------------------------------------

    def _confine(self, text: str, scopes: Sequence[str] | None) -> tuple[str, list[tuple[str, str]]]:
        """The text to send and the protocol parameters that confine it to ``scopes``."""
        if scopes is None:
            return text, [("union-default-graph", "")]
        names = list(scopes)
        if not names:
            raise ValueError("scopes=[] names no scope; pass None for the union of all graphs")
        _refuse_service(text)
        graphs = [scope_graph(s) for s in names]  # checks the names
        named = [g.value for g in graphs if isinstance(g, ox.NamedNode)]
        has_default = len(named) < len(graphs)
        if not has_default or self.default_graph_uri is not None:
            default = named + ([self.default_graph_uri] if has_default else [])
            params = [("default-graph-uri", g) for g in default]
            # No named-graph-uri (the default scope alone): the dataset has no named graphs.
            params += [("named-graph-uri", g) for g in named]
            return text, params
        if named:
            raise ConfigurationError(
                f"the endpoint {self.query_url} cannot name its default graph in the SPARQL "
                f"protocol (oxigraph serve cannot), so a query cannot be confined to the default "
                f"scope together with {', '.join(map(repr, names[1:] if names[0] == DEFAULT_SCOPE else named))}: "
                "query the scopes one at a time, or pass default_graph_uri=... if the server "
                "names its default graph (Jena Fuseki: urn:x-arq:DefaultGraph)")
        self._check_default_graph_mode("confine a query to the default scope")
        return _default_scope_only(text), []

    def _check_default_graph_mode(self, purpose: str) -> None:
        """Refuse a server whose default graph is the union of all graphs (read once)."""
        if self._plain_default_graph is None:
            response = self._send("GET", self.query_url, "service description request",
                                  headers={"Accept": _N_TRIPLES})
            if response.status_code >= 500:
                raise EndpointUnavailableError(
                    f"the SPARQL endpoint {self.query_url} failed with HTTP "
                    f"{response.status_code}: {_server_message(response)}. {_ATOMIC}")
            # A server that describes no union default graph (or no service at all) is taken
            # at its word: the module documentation states the requirement.
            self._plain_default_graph = not (
                response.status_code == 200 and _UNION_DEFAULT_GRAPH in response.text)
        if not self._plain_default_graph:
            raise ConfigurationError(
                f"the endpoint {self.query_url} announces a union default graph "
                "(oxigraph serve --union-default-graph), so a query without a dataset sees every "
                f"graph and trails cannot {purpose}; restart the server without that option "
                "(trails asks for the union itself where it wants it)")

    # -- HTTP ----------------------------------------------------------------------------------

    def _with_prefixes(self, text: str) -> str:
        """``text`` after one line declaring the predeclared prefixes it does not declare.

        A later declaration of the same prefix wins, so a text that declares one of them
        itself keeps its own meaning even where the check above misses it.
        """
        declared = {m.group(1) for m in _PREFIX_DECL.finditer(_code(text)[0])}
        missing = [f"PREFIX {p}: <{iri}>" for p, iri in self.prefixes.items() if p not in declared]
        return _PROLOGUE_MARK + " ".join(missing) + "\n" + text if missing else text

    def _post(self, url: str, kind: str, body: str, content_type: str,
              params: list[tuple[str, str]], accept: str | None = None) -> Any:
        headers = {"Content-Type": f"{content_type}; charset=utf-8"}
        if accept:
            headers["Accept"] = accept
        response = self._send("POST", url, kind, content=body.encode("utf-8"), headers=headers,
                              params=params)
        status = response.status_code
        if status < 300:
            return response
        message = _server_message(response)
        if body.startswith(_PROLOGUE_MARK):
            message = _caller_positions(message)
        if status == 400:
            raise SparqlError(f"SPARQL {kind} does not parse or is not allowed (HTTP 400 from "
                              f"{url}): {message}")
        if status in (401, 403, 404, 405, 406, 415):
            raise ConfigurationError(
                f"the SPARQL endpoint {url} answered HTTP {status} to {_a(kind)}: {message}. Check "
                "the URL (query_url/update_url) and the credentials (headers=/auth=).")
        raise EndpointUnavailableError(
            f"the SPARQL endpoint {url} failed with HTTP {status}: {message}. {_ATOMIC}")

    def _send(self, method: str, url: str, kind: str, **kwargs: Any) -> Any:
        httpx = self._httpx
        try:
            return self._client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            self._plain_default_graph = None  # the server may come back with other options
            raise EndpointUnavailableError(
                f"the SPARQL endpoint {url} did not answer {_a(kind)} within {self.timeout:g} s "
                f"({type(exc).__name__}). {_ATOMIC}") from exc
        except httpx.TransportError as exc:
            self._plain_default_graph = None
            what = "refused the connection" if isinstance(exc, httpx.ConnectError) else "failed"
            raise EndpointUnavailableError(
                f"the SPARQL endpoint {url} {what} for {_a(kind)} ({type(exc).__name__}: {exc}). "
                f"{_ATOMIC}") from exc


# The predeclared prefixes take two lines before the caller's text (this mark, then them).
_PROLOGUE_MARK = "#trails-prefixes\n"
_ERROR_AT = re.compile(r"error at (\d+):(\d+)")


def _caller_positions(message: str) -> str:
    """A parser message about a text with the prefix lines, with the caller's line numbers."""
    return _ERROR_AT.sub(lambda m: f"error at {max(int(m.group(1)) - 2, 1)}:{m.group(2)}", message)

_ATOMIC = ("Nothing partial was committed by that request: the endpoint applies a request whole "
           "or not at all. Retry when the endpoint is back (ingestion is idempotent).")


_SSL: list[Any] = []


def _ssl_context(httpx: Any) -> Any:
    """One default TLS context per process: building one (the CA bundle) takes ~0.2 s."""
    if not _SSL:
        _SSL.append(httpx.create_ssl_context(trust_env=True))
    return _SSL[0]


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _server_message(response: Any) -> str:
    text = response.text.strip() or response.reason_phrase
    return text if len(text) <= 600 else text[:600] + "…"


def _parse_response(response: Any, url: str) -> QueryResult | bool | list[ox.Triple]:
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    results_format = ox.QueryResultsFormat.from_media_type(media) if media else None
    try:
        if results_format is not None:
            parsed = ox.parse_query_results(response.content, results_format)
            if isinstance(parsed, ox.QueryBoolean):
                return bool(parsed)
            variables = [v.value for v in parsed.variables]
            return QueryResult(variables, [{n: s[n] for n in variables} for s in parsed])
        rdf_format = ox.RdfFormat.from_media_type(media) if media else None
        if rdf_format is not None:
            return [ox.Triple(q.subject, q.predicate, q.object)
                    for q in ox.parse(response.content, rdf_format)]
    except SyntaxError as exc:
        raise SparqlError(f"the SPARQL endpoint {url} sent results that do not parse as "
                          f"{media}: {exc}") from exc
    raise SparqlError(f"the SPARQL endpoint {url} answered with {media or 'no content type'}, "
                      "neither SPARQL results nor RDF")


# -- INSERT DATA ------------------------------------------------------------------------------


def _batches(quads: Iterable[ox.Quad], size: int) -> Iterator[list[ox.Quad]]:
    batch: list[ox.Quad] = []
    for quad in quads:
        batch.append(quad)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _insert_data(quads: list[ox.Quad]) -> str:
    by_graph: dict[str | None, list[str]] = {}
    for q in quads:
        graph = q.graph_name
        if isinstance(graph, ox.DefaultGraph):
            key = None
        elif isinstance(graph, ox.NamedNode):
            key = str(graph)
        else:
            raise TypeError(f"a SPARQL update cannot name the blank-node graph {graph}; "
                            "use an IRI for the graph")
        by_graph.setdefault(key, []).append(f"{q.subject} {q.predicate} {q.object} .")
    parts = [" ".join(triples) if key is None else f"GRAPH {key} {{ {' '.join(triples)} }}"
             for key, triples in by_graph.items()]
    return "INSERT DATA {\n" + "\n".join(parts) + "\n}"


# -- confining a query to the store's default graph without a protocol dataset ----------------

# Strings (the four SPARQL forms), IRIs and comments: their content is never a keyword.
_OPAQUE = re.compile(
    r'"""(?:(?:"|"")?(?:[^"\\]|\\.))*"""'
    r"|'''(?:(?:'|'')?(?:[^'\\]|\\.))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|<(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>'
    r"|#[^\n\r]*"
)


def _keyword(word: str) -> re.Pattern[str]:
    # A keyword, not part of ?var, $var, prefix:name, a language tag or a longer word.
    return re.compile(rf"(?<![?$:@\w-]){word}(?![\w:-])", re.IGNORECASE)


_PREFIX_DECL = re.compile(r"(?<![?$:@\w-])PREFIX\s+([^\s:]*):", re.IGNORECASE)
_GRAPH = _keyword("GRAPH")
_FROM = _keyword("FROM")
_NAMED = re.compile(r"NAMED(?![\w:-])", re.IGNORECASE)
_VARIABLE = re.compile(r"[?$](\w+)")
_PNAME = re.compile(r"[^\s{}()<>\"'#,;]*:[^\s{}()<>\"'#,;]*")
# One letter of each word changes (a letter for a letter: the text's tokens keep their extent).
_MUTATIONS = {"graph": 3, "from": 2, "service": 3}
_SWAP = {"p": "q", "P": "Q", "o": "u", "O": "U", "v": "w", "V": "W"}


def _code(text: str) -> tuple[str, dict[int, int]]:
    """``text`` with strings, IRIs and comments blanked, and {start: end} of each blank."""
    spans: dict[int, int] = {}

    def blank(match: re.Match[str]) -> str:
        spans[match.start()] = match.end()
        return " " * len(match.group())

    return _OPAQUE.sub(blank, text), spans


def _mutate(text: str, words: Iterable[str]) -> str:
    """Every occurrence (any case, anywhere) of ``words`` with one letter changed."""
    pattern = re.compile("|".join(words), re.IGNORECASE)

    def change(match: re.Match[str]) -> str:
        word = match.group()
        i = _MUTATIONS[word.lower()]
        return word[:i] + _SWAP[word[i]] + word[i + 1 :]

    return pattern.sub(change, text)


def _parses(text: str) -> SyntaxError | None:
    """Parse ``text`` locally (evaluated on an empty store: call only on SERVICE-free text)."""
    try:
        _EMPTY.query(text)
    except SyntaxError as exc:
        return exc
    except (RuntimeError, ValueError, OSError):  # parsed; evaluation on nothing failed
        return None
    return None


def _refuse_similarity(text: str, prefixes: dict[str, str]) -> None:
    """Raise if ``text`` calls ``trails:similarity``, which only the embedded graph provides."""
    if uses_similarity(text, prefixes):
        raise SparqlError(
            "trails:similarity is evaluated in this Python process and is only available on the "
            "embedded graph (OxigraphGraph): a SPARQL endpoint cannot call it. Rank by meaning "
            "with retrieve(..., mode='hybrid', sparql_filter=...) instead: the endpoint filters, "
            "trails ranks the candidates")


def _refuse_service(text: str) -> None:
    """Raise unless the parser sees no SERVICE keyword in ``text``."""
    if "service" not in text.lower():
        return
    error = _parses(_mutate(text, ["service"]))
    if error is not None:
        if text.startswith(_PROLOGUE_MARK):
            error = _caller_positions(str(error))  # type: ignore[assignment]
        raise UnsafeFilterError(
            "a query confined to scopes cannot use SERVICE: the server would send its pattern "
            "to another endpoint (or to itself) outside the scopes; remove the SERVICE clause "
            f"(or the query does not parse: {error})")


def _default_scope_only(text: str) -> str:
    """The query confined to the store's default graph when sent without a dataset.

    ``FROM``/``FROM NAMED`` clauses are removed and each ``GRAPH t { P }`` becomes
    ``{ VALUES (vars of t and P) { } }``, which, like GRAPH over no named graphs, has no
    solution. The result must parse with no ``graph``/``from``/``service`` keyword left.
    """
    code, spans = _code(text)
    edits: list[tuple[int, int, str]] = []
    for match in _FROM.finditer(code):
        end = _dataset_clause_end(text, code, spans, match.end())
        if end is not None:
            edits.append((match.start(), end, " "))
    for match in _GRAPH.finditer(code):
        if any(start <= match.start() < end for start, end, _ in edits):
            continue  # inside a GRAPH group already replaced
        found = _graph_pattern_end(text, code, spans, match.end())
        if found is not None:
            end, variables = found
            names = " ".join(f"?{v}" for v in variables)
            empty = f"{{ VALUES ({names}) {{ }} }}" if variables else "{ FILTER(false) }"
            edits.append((match.start(), end, empty))
    out, last = [], 0
    for start, end, replacement in sorted(edits):
        if start < last:
            continue
        out += [text[last:start], replacement]
        last = end
    rewritten = "".join(out) + text[last:]
    error = _parses(_mutate(rewritten, _MUTATIONS))
    if error is not None:
        original = _parses(_mutate(text, ["service"]))
        if original is not None:
            message = str(original)
            if text.startswith(_PROLOGUE_MARK):
                message = _caller_positions(message)
            raise SparqlError(f"SPARQL query does not parse: {message}")
        raise UnsafeFilterError(
            "this query uses GRAPH or FROM in a form that trails cannot confine to the default "
            "scope on an endpoint that cannot name its default graph; in the default scope "
            "GRAPH matches nothing and FROM is ignored, so remove them")
    return rewritten


def _skip_space(text: str, code: str, spans: dict[int, int], pos: int) -> int:
    """The next position that is not white space or a comment (an IRI, blanked, counts)."""
    while pos < len(code) and code[pos].isspace():
        if pos in spans and text[pos] == "<":
            break
        pos = spans.get(pos, pos + 1)
    return pos


def _term_end(text: str, code: str, spans: dict[int, int], pos: int) -> int | None:
    """End of the variable, IRI or prefixed name at ``pos``, or None."""
    if pos in spans and text[pos] == "<":
        return spans[pos]
    for pattern in (_VARIABLE, _PNAME):
        match = pattern.match(code, pos)
        if match and match.end() > pos:
            return match.end()
    return None


def _dataset_clause_end(text: str, code: str, spans: dict[int, int], pos: int) -> int | None:
    pos = _skip_space(text, code, spans, pos)
    named = _NAMED.match(code, pos)
    if named:
        pos = _skip_space(text, code, spans, named.end())
    return _term_end(text, code, spans, pos)


def _graph_pattern_end(text: str, code: str, spans: dict[int, int],
                       pos: int) -> tuple[int, list[str]] | None:
    start = _skip_space(text, code, spans, pos)
    term_end = _term_end(text, code, spans, start)
    if term_end is None:
        return None
    brace = _skip_space(text, code, spans, term_end)
    if brace >= len(code) or code[brace] != "{":
        return None
    depth = 0
    for i in range(brace, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                variables = dict.fromkeys(_VARIABLE.findall(code, start, i))
                return i + 1, list(variables)
    return None
