"""Deleting expired documents (``trails prune --expired``), and recording each deletion.

:func:`prune_expired` deletes every document whose expiry (``trails:expires``, see
:mod:`trails.ingest.expiry`) has passed, from the graph and the vector store, one at a time
and each as crash-safe as :func:`~trails.ingest.maintenance.delete_document` (a kill leaves a
document whole or gone; expired, it is already never retrieved, and the next prune finishes).
It then hands what it removed to :func:`record_deletion`, the one place a deletion for
retention is recorded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from trails.audit import DeletionRecord, default_caller, new_run_id
from trails.audit.records import started_now
from trails.ingest.expiry import ExpiredDocument, expired_documents, utc_now
from trails.ingest.maintenance import delete_document
from trails.parts import Audited, ContextParts

__all__ = ["prune_expired", "record_deletion"]


def prune_expired(ctx: ContextParts, *, now: dt.datetime | None = None,
                  dry_run: bool = False) -> list[ExpiredDocument]:
    """Delete the documents of every scope expired at ``now`` (default: the current time);
    with ``dry_run`` only find them. Returns ``(IRI, expiry)`` pairs, sorted by IRI.

    The triples a user added about a document survive, as with ``delete_document`` (ADR
    0012); its ``trails:expires`` is trails' own and goes with it.

    Raises:
        InvalidArgumentError: ``now`` has no offset (InvalidArgumentTypeError: no datetime).
        StorageError: a file cannot be read or written.
    """
    moment = utc_now(now)
    expired, _, _ = expired_documents(ctx.kg, moment)
    if dry_run or not expired:
        return expired
    removed = [document for document in expired if delete_document(ctx, document.iri)]
    record_deletion(ctx, [d.iri for d in removed], reason="expired",
                    expired_at={d.iri: d.expires for d in removed})
    return removed


def record_deletion(ctx: ContextParts, documents: Sequence[str], *, reason: str,
                    expired_at: Mapping[str, dt.datetime] | None = None,
                    caller: str | None = None) -> None:
    """Record in the context's audit trail that ``documents`` were deleted, and why: one
    ``audit:Deletion`` activity, each document ``prov:invalidated`` (for retention, the moment
    each expired is kept with the record). Nothing is recorded for a context that does not
    audit; like every record, a failure to write it is logged and counted, never raised."""
    if not documents or not isinstance(ctx, Audited) or not ctx.audit.enabled:
        return
    moment = started_now()
    ctx.audit.record(DeletionRecord(
        run_id=new_run_id(), caller=caller or ctx.audit.caller or default_caller(),
        started=moment, ended=moment, reason=reason, documents=list(documents),
        expired_at={iri: when.isoformat() for iri, when in (expired_at or {}).items()}))
