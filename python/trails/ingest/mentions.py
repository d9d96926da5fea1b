"""The triples of a chunk's mentions (ontologies/trails.ttl, ADR 0031).

For each entity a chunk mentions, ``<chunk> trails:mentions <entity>`` (what filters join
with the user's graph); for each mention, a node that says why::

    <chunk> trails:hasMention <chunk/m/HASH> .
    <chunk/m/HASH> a trails:Mention ; trails:entity <entity> ;
        trails:matchedText "Acme" ; trails:matchStart 18 ; trails:matchEnd 22 ;
        trails:label "ACME" ; trails:labelPredicate rdfs:label ; trails:linkedBy "label" .

The node's IRI extends the chunk's (which carries the version) with a hash of the mention,
so the same mention is the same node in every run and a re-link changes only what changed.
All of it is written in the chunk's scope with the chunk's own triples, and deleted with them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pyoxigraph as ox

from trails.ingest.linking import Mention
from trails.kg.base import KnowledgeGraph
from trails.kg.sparql import TRAILS
from trails.kg.terms import to_term
from trails.scopes import scope_graph

__all__ = [
    "HAS_MENTION",
    "MENTIONS",
    "MENTION_PREDICATES",
    "mention_iri",
    "mention_nquads",
    "mention_quads",
    "scope_is_linked",
    "unlinked_note",
]

MENTIONS = ox.NamedNode(TRAILS + "mentions")
HAS_MENTION = ox.NamedNode(TRAILS + "hasMention")
_MENTION = ox.NamedNode(TRAILS + "Mention")
_ENTITY = ox.NamedNode(TRAILS + "entity")
_MATCHED = ox.NamedNode(TRAILS + "matchedText")
_START, _END = ox.NamedNode(TRAILS + "matchStart"), ox.NamedNode(TRAILS + "matchEnd")
_LABEL, _LABEL_PREDICATE = ox.NamedNode(TRAILS + "label"), ox.NamedNode(TRAILS + "labelPredicate")
_LINKED_BY = ox.NamedNode(TRAILS + "linkedBy")
_RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
# What trails writes on a mention node besides its rdf:type: all a delete removes from it.
MENTION_PREDICATES = tuple(p.value for p in (
    _ENTITY, _MATCHED, _START, _END, _LABEL, _LABEL_PREDICATE, _LINKED_BY))


def mention_iri(chunk: str, mention: Mention) -> str:
    """The mention node's IRI: the chunk's, then a hash of everything the mention says."""
    key = "\x00".join(str(part) for part in (
        mention.entity, mention.start, mention.end, mention.text, mention.label,
        mention.predicate, mention.linker))
    return f"{chunk}/m/{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def mention_quads(chunk: str, mentions: Sequence[Mention], scope: str) -> list[ox.Quad]:
    """The triples of one chunk's mentions, in its scope's graph."""
    g, c = scope_graph(scope), ox.NamedNode(chunk)
    quads = [ox.Quad(c, MENTIONS, ox.NamedNode(e), g)
             for e in sorted({m.entity for m in mentions})]
    for mention in mentions:
        node = ox.NamedNode(mention_iri(chunk, mention))
        quads += [ox.Quad(c, HAS_MENTION, node, g),
                  ox.Quad(node, _RDF_TYPE, _MENTION, g),
                  ox.Quad(node, _ENTITY, ox.NamedNode(mention.entity), g),
                  ox.Quad(node, _MATCHED, ox.Literal(mention.text), g),
                  ox.Quad(node, _START, to_term(mention.start), g),
                  ox.Quad(node, _END, to_term(mention.end), g),
                  ox.Quad(node, _LINKED_BY, ox.Literal(mention.linker), g)]
        if mention.label is not None:
            quads.append(ox.Quad(node, _LABEL, ox.Literal(mention.label), g))
        if mention.predicate is not None:
            quads.append(ox.Quad(node, _LABEL_PREDICATE, ox.NamedNode(mention.predicate), g))
    return quads


def mention_nquads(chunk: str, mentions: Sequence[Mention], scope: str) -> str:
    """:func:`mention_quads` as N-Quads text."""
    return "".join(f"{quad} .\n" for quad in mention_quads(chunk, mentions, scope))


def scope_is_linked(kg: KnowledgeGraph, scope: str) -> bool:
    """Whether a chunk of ``scope`` mentions an entity: the scope was linked."""
    return kg.query("ASK { ?c trails:mentions ?e }", scopes=[scope]) is True


def unlinked_note(scope: str, documents: int) -> str:
    """The warning of a run without a linker that wrote ``documents`` into a linked scope."""
    return (f"scope {scope!r} has chunks linked to entities, but this run had no linker: the "
            f"{documents} document{'s' if documents > 1 else ''} it wrote mention nothing (a "
            "new version's links go with the old one); link them with trails link "
            "(ctx.link()), or ingest with --link (linker=LabelLinker())")
