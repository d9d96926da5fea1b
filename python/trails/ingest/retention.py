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
from collections.abc import Sequence

from trails.ingest.expiry import ExpiredDocument, expired_documents, utc_now
from trails.ingest.maintenance import delete_document
from trails.parts import ContextParts

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
    record_deletion(ctx, removed)
    return removed


def record_deletion(ctx: ContextParts, removed: Sequence[ExpiredDocument]) -> None:
    """Record that ``removed`` (``(IRI, expiry)`` pairs) were deleted because they expired.

    This is the single call site for auditing retention deletions: it is meant to write one
    PROV-O activity to the context's audit trail (which documents, when, why: expired at
    these moments). Until that trail exists it writes nothing; every deletion made by
    :func:`prune_expired` passes through here, after the documents are gone.
    """
    del ctx, removed  # nothing to record into yet; see the docstring
