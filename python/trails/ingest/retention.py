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

from trails.ingest.expiry import ExpiredDocument, expired_documents, utc_now

# The one recorded deletion path lives beside the deletion it records (repair uses it too).
from trails.ingest.maintenance import delete_recorded, record_deletion
from trails.ingest.writer import writing_versions
from trails.parts import ContextParts

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
    if dry_run:
        return expired_documents(ctx.kg, moment)[0]
    with writing_versions(ctx):  # no version renewed between the reading and the deletes
        expired, _, _ = expired_documents(ctx.kg, moment)
        return [document for document in expired
                if delete_recorded(ctx, document.iri, reason="expired",
                                   expired_at={document.iri: document.expires})]
