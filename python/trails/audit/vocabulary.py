"""The terms of the audit trail: W3C PROV-O, plus trails' own for what PROV-O has no word
for (``ontologies/trails-audit.ttl`` describes them; ``trails-audit-shapes.ttl`` constrains
them)."""

from __future__ import annotations

import pyoxigraph as ox

from trails.kg.reserved import AUDIT_GRAPH_IRI

__all__ = ["AUDIT", "AUDIT_GRAPH", "JSON", "PROV", "RDFS_COMMENT", "RDFS_LABEL", "RDF_TYPE", "XSD"]

PROV = "http://www.w3.org/ns/prov#"
AUDIT = "https://trails.dev/ns/audit#"
XSD = "http://www.w3.org/2001/XMLSchema#"
JSON = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON")
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
RDFS_COMMENT = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#comment")
# The named graph of every audit record: no scope's, so a retrieval filter (confined to its
# scopes' graphs) never reads it, nor does a scoped query; an unscoped query reads everything.
AUDIT_GRAPH = ox.NamedNode(AUDIT_GRAPH_IRI)
