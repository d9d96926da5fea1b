"""The audit trail: every search, deletion, service SPARQL query and feedback on a run recorded as W3C PROV-O activities in the
context's audit graph (docs/compliance.md, ADR 0018)."""

from trails.audit.records import (
    ActivityRecord,
    DeletionRecord,
    FeedbackRecord,
    HitRecord,
    SearchRecord,
    SparqlQueryRecord,
    new_run_id,
    query_digest,
    run_iri,
)
from trails.audit.trail import AUDIT_DIRECTORY, AuditTrail, default_caller
from trails.audit.vocabulary import AUDIT, AUDIT_GRAPH, PROV

__all__ = ["AUDIT", "AUDIT_DIRECTORY", "AUDIT_GRAPH", "PROV", "ActivityRecord", "AuditTrail",
           "DeletionRecord", "FeedbackRecord", "HitRecord", "SearchRecord", "SparqlQueryRecord", "default_caller",
           "new_run_id", "query_digest", "run_iri"]
