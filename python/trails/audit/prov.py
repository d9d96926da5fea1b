"""Audit records as PROV-O triples in the audit graph, and back.

Each activity is a ``prov:Activity`` (``audit:Search``, ``audit:Deletion``,
``audit:SparqlQuery`` or ``audit:Feedback``, which names the run it rates by
``audit:feedbackOn``) with its times,
its agent (``prov:wasAssociatedWith``, labelled with the caller), what it was asked and
against which state, and for a search each returned chunk as ``prov:used`` with a
``prov:qualifiedUsage`` carrying rank, score, components, document and the filter solution
that admitted it: what SPARQL questions need. The whole record is also kept as one
``rdf:JSON`` literal (``audit:record``), so that showing and replaying a run read back
exactly what was recorded.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence

import pyoxigraph as ox

from trails.audit.records import (
    ActivityRecord,
    DeletionRecord,
    FeedbackRecord,
    SearchRecord,
    SparqlQueryRecord,
    from_json,
    run_iri,
)
from trails.audit.vocabulary import (
    AUDIT,
    AUDIT_GRAPH,
    JSON,
    PROV,
    RDF_TYPE,
    RDFS_COMMENT,
    RDFS_LABEL,
    XSD,
)
from trails.kg.terms import term_of

__all__ = ["agent_iri", "parse_time", "quads", "read_records"]


def _p(namespace: str, local: str) -> ox.NamedNode:
    return ox.NamedNode(namespace + local)


def _json(value: object) -> ox.Literal:
    return ox.Literal(json.dumps(value, ensure_ascii=False, sort_keys=True), datatype=JSON)


def _time(value: str) -> ox.Literal:
    # Always with an offset: SPARQL cannot order a time without one against one with, so
    # retention could never find such a record expired.
    return ox.Literal(parse_time(value).isoformat(), datatype=ox.NamedNode(XSD + "dateTime"))


def agent_iri(caller: str) -> ox.NamedNode:
    return ox.NamedNode("urn:trails:agent:" + urllib.parse.quote(caller, safe=""))


def _iri(value: str) -> ox.NamedNode | None:
    try:
        return ox.NamedNode(value)
    except ValueError:
        return None


def quads(record: ActivityRecord) -> list[ox.Quad]:
    """The triples of ``record`` in the audit graph."""
    run = ox.NamedNode(record.iri)
    agent = agent_iri(record.caller)
    triples: list[tuple[ox.NamedNode, ox.NamedNode, ox.NamedNode | ox.Literal | ox.BlankNode]] = [
        (run, RDF_TYPE, _p(PROV, "Activity")),
        (run, _p(PROV, "startedAtTime"), _time(record.started)),
        (run, _p(PROV, "endedAtTime"), _time(record.ended)),
        (run, _p(PROV, "wasAssociatedWith"), agent),
        (agent, RDF_TYPE, _p(PROV, "Agent")),
        (agent, RDFS_LABEL, ox.Literal(record.caller)),
        (run, _p(AUDIT, "record"), _json(record.to_json())),
    ]
    if isinstance(record, SearchRecord):
        triples += list(_search(run, record))
    elif isinstance(record, DeletionRecord):
        triples.append((run, RDF_TYPE, _p(AUDIT, "Deletion")))
        triples.append((run, _p(AUDIT, "reason"), ox.Literal(record.reason)))
        triples += [(run, _p(PROV, "invalidated"), iri) for doc in record.documents
                    if (iri := _iri(doc)) is not None]
    elif isinstance(record, SparqlQueryRecord):
        triples.append((run, RDF_TYPE, _p(AUDIT, "SparqlQuery")))
        if record.query is not None:
            triples.append((run, _p(AUDIT, "queryText"), ox.Literal(record.query)))
        triples.append((run, _p(AUDIT, "querySha256"), ox.Literal(record.query_sha256)))
        triples.append((run, _p(AUDIT, "form"), ox.Literal(record.form)))
        triples.append((run, _p(AUDIT, "answers"), ox.Literal(record.answers)))
        triples += [(run, _p(AUDIT, "scope"), ox.Literal(scope)) for scope in record.scopes]
        triples += _levels(run, record.levels)
    elif isinstance(record, FeedbackRecord):
        triples.append((run, RDF_TYPE, _p(AUDIT, "Feedback")))
        triples.append((run, _p(AUDIT, "feedbackOn"), ox.NamedNode(run_iri(record.run))))
        triples.append((run, _p(AUDIT, "rating"), ox.Literal(record.rating)))
        if record.note is not None:
            triples.append((run, RDFS_COMMENT, ox.Literal(record.note)))
    return [ox.Quad(s, p, o, AUDIT_GRAPH) for s, p, o in triples]


def _search(run: ox.NamedNode, record: SearchRecord,
            ) -> Iterator[tuple[ox.NamedNode, ox.NamedNode, ox.NamedNode | ox.Literal | ox.BlankNode]]:
    a = AUDIT
    yield run, RDF_TYPE, _p(a, "Search")
    if record.query is not None:
        yield run, _p(a, "queryText"), ox.Literal(record.query)
    yield run, _p(a, "querySha256"), ox.Literal(record.query_sha256)
    if record.rewritten is not None:
        yield run, _p(a, "rewrittenText"), ox.Literal(record.rewritten)
    if record.rewritten_sha256 is not None:
        yield run, _p(a, "rewrittenSha256"), ox.Literal(record.rewritten_sha256)
    yield run, _p(a, "mode"), ox.Literal(record.mode)
    yield run, _p(a, "k"), ox.Literal(record.k)
    if record.filter is not None:
        yield run, _p(a, "filter"), ox.Literal(record.filter)
    for name, value in sorted(record.bindings.items()):
        binding = ox.NamedNode(f"{record.iri}/binding/{urllib.parse.quote(name, safe='')}")
        yield run, _p(a, "binding"), binding
        yield binding, _p(a, "variable"), ox.Literal(name)
        yield binding, _p(a, "value"), term_of(value)
    for scope in record.scopes:
        yield run, _p(a, "scope"), ox.Literal(scope)
    yield from _levels(run, record.levels)
    if record.fusion is not None:
        yield run, _p(a, "fusion"), ox.Literal(record.fusion)
    for step in record.steps:
        yield run, _p(a, "step"), ox.Literal(step)
    if record.min_score is not None:
        yield run, _p(a, "minScore"), ox.Literal(float(record.min_score))
    if record.fallback is not None:
        yield run, _p(a, "fallback"), ox.Literal(record.fallback)
    if record.as_of is not None:
        yield run, _p(a, "asOf"), _time(record.as_of)
    yield run, _p(a, "plan"), ox.Literal(record.plan)
    if record.candidates is not None:
        yield run, _p(a, "candidates"), ox.Literal(record.candidates)
    yield run, _p(a, "exhaustive"), ox.Literal(record.exhaustive)
    if record.filter_path is not None:
        yield run, _p(a, "filterPath"), ox.Literal(record.filter_path)
    if record.fusion_weights is not None:
        yield run, _p(a, "fusionWeights"), _json(record.fusion_weights)
    for note in record.notes:
        yield run, _p(a, "note"), ox.Literal(note)
    if record.embedder is not None:
        yield run, _p(a, "embedder"), ox.Literal(record.embedder)
    if record.graph_revision is not None:
        yield run, _p(a, "graphRevision"), ox.Literal(record.graph_revision)
    if record.store_revision is not None:
        yield run, _p(a, "storeRevision"), ox.Literal(record.store_revision)
    if record.replay_of is not None:
        yield run, _p(PROV, "wasInformedBy"), ox.NamedNode(record.replay_of)
    for hit in record.hits:
        usage = ox.NamedNode(f"{record.iri}/hit/{hit.rank}")
        chunk = _iri(hit.iri)
        yield run, _p(PROV, "qualifiedUsage"), usage
        yield usage, RDF_TYPE, _p(PROV, "Usage")
        if chunk is not None:
            yield run, _p(PROV, "used"), chunk
            yield usage, _p(PROV, "entity"), chunk
        else:  # a vector added by hand under an id that is no IRI: named, not linked
            yield usage, _p(a, "entityId"), ox.Literal(hit.iri)
        yield usage, _p(a, "rank"), ox.Literal(hit.rank)
        if hit.score is not None:
            yield usage, _p(a, "score"), ox.Literal(float(hit.score))
        document = None if hit.document is None else _iri(hit.document)
        if document is not None:
            yield usage, _p(a, "document"), document
        if hit.components:
            yield usage, _p(a, "components"), _json(hit.components)
        for name, value in sorted((hit.admitted_by or {}).items()):
            solution = ox.NamedNode(f"{usage.value}/admitted/{urllib.parse.quote(name, safe='')}")
            yield usage, _p(a, "admittedBy"), solution
            yield solution, _p(a, "variable"), ox.Literal(name)
            yield solution, _p(a, "value"), term_of(value)


def _levels(run: ox.NamedNode, levels: Mapping[str, str],
            ) -> list[tuple[ox.NamedNode, ox.NamedNode, ox.Literal]]:
    """One ``audit:securityLevel`` per level the run read (AuditConfig.levels)."""
    return [(run, _p(AUDIT, "securityLevel"), ox.Literal(level))
            for level in sorted(set(levels.values()))]


def read_records(rows: Sequence[str]) -> list[ActivityRecord]:
    """Records from ``audit:record`` literals (those that do not parse are left out)."""
    records = []
    for text in rows:
        try:
            records.append(from_json(json.loads(text)))
        except (ValueError, TypeError):
            continue
    return records


def parse_time(value: str) -> dt.datetime:
    """A record's time (ISO 8601; one without an offset is UTC, as trails writes them).

    Raises:
        ValueError: no ISO 8601 time (TypeError: no text).
    """
    moment = dt.datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
