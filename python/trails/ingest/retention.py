"""Deleting expired documents (``trails prune --expired``), and recording each deletion.

:func:`prune_expired` deletes every document whose expiry (``trails:expires``, see
:mod:`trails.ingest.expiry`) has passed, from the graph and the vector store, one at a time
and each as crash-safe as :func:`~trails.ingest.maintenance.delete_document` (a kill leaves a
document whole or gone; expired, it is already never retrieved, and the next prune finishes).

Every deletion that is recorded goes through :func:`delete_recorded`: the record of a
document's deletion is on the disk before anything of the document is removed, so a kill at
any moment never leaves a deletion without its record (at worst a record of a deletion the
next run finishes), and a record that cannot be written stops the deletion.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from trails.audit import DeletionRecord, default_caller, new_run_id
from trails.audit.records import started_now
from trails.ingest.expiry import ExpiredDocument, expired_documents, utc_now
from trails.ingest.maintenance import delete_document
from trails.parts import Audited, ContextParts

__all__ = ["delete_recorded", "prune_expired", "record_deletion"]


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
    return [document for document in expired
            if delete_recorded(ctx, document.iri, reason="expired",
                               expired_at={document.iri: document.expires})]


def delete_recorded(ctx: ContextParts, document: str, *, reason: str,
                    expired_at: Mapping[str, dt.datetime] | None = None,
                    caller: str | None = None, include_user_triples: bool = False) -> bool:
    """Delete ``document`` as :func:`~trails.ingest.maintenance.delete_document` does, its
    audit record written first (:func:`record_deletion`); False when there was no such
    document (nothing is recorded).

    Raises:
        StorageError: the record could not be written (nothing was deleted), or a store
            failed.
    """
    return delete_document(ctx, document, include_user_triples=include_user_triples,
                           before_removal=lambda: record_deletion(
                               ctx, [document], reason=reason, expired_at=expired_at,
                               caller=caller))


def record_deletion(ctx: ContextParts, documents: Sequence[str], *, reason: str,
                    expired_at: Mapping[str, dt.datetime] | None = None,
                    caller: str | None = None) -> None:
    """Record in the context's audit trail that ``documents`` are deleted, and why: one
    ``audit:Deletion`` activity, each document ``prov:invalidated`` (for retention, the moment
    each expired is kept with the record). Call it before deleting (:func:`delete_recorded`
    does). Nothing is recorded for a context that does not audit.

    Raises:
        StorageError: the record could not be written to the disk; do not delete.
    """
    if not documents or not isinstance(ctx, Audited) or not ctx.audit.enabled:
        return
    moment = started_now()
    ctx.audit.record_first(DeletionRecord(
        run_id=new_run_id(), caller=caller or ctx.audit.caller or default_caller(),
        started=moment, ended=moment, reason=reason, documents=list(documents),
        expired_at={iri: when.isoformat() for iri, when in (expired_at or {}).items()}))
