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
import logging
from collections.abc import Callable, Sequence

import pyoxigraph as ox

from trails.ingest.expiry import (
    EXPIRES_KEY,
    ExpiredDocument,
    document_expiry,
    expired_in_scopes,
    store_owners,
    utc_now,
)

# The one recorded deletion path lives beside the deletion it records (repair uses it too).
from trails.ingest.maintenance import delete_recorded, record_deletion
from trails.ingest.minting import metadata_predicate
from trails.ingest.writer import writing_versions
from trails.kg.base import select
from trails.parts import ContextParts

log = logging.getLogger("trails")

__all__ = ["delete_recorded", "prune_expired", "record_deletion", "stopped_note"]


def prune_expired(ctx: ContextParts, *, now: dt.datetime | None = None, dry_run: bool = False,
                  on_deleted: Callable[[ExpiredDocument], object] | None = None,
                  ) -> list[ExpiredDocument]:
    """Delete the documents of every scope expired at ``now`` (default: the current time);
    with ``dry_run`` only find them. Returns ``(IRI, expiry)`` pairs, sorted by IRI;
    ``on_deleted`` is told of each as soon as it is gone.

    The triples a user added about a document survive, as with ``delete_document`` (ADR
    0012); its ``trails:expires`` is trails' own and goes with it.

    Raises:
        InvalidArgumentError: ``now`` has no offset (InvalidArgumentTypeError: no datetime).
        StorageError: a file cannot be read or written. An error after some documents were
            deleted names them in a note (``exc.__notes__``, and the command line's message).
    """
    moment = utc_now(now)
    if dry_run:
        return _by_current_rules(ctx, _expired(ctx, moment), moment)
    deleted: list[ExpiredDocument] = []
    with writing_versions(ctx):  # no version renewed between the reading and the deletes
        expired = _by_current_rules(ctx, _expired(ctx, moment), moment)
        try:
            for document in expired:
                if delete_recorded(ctx, document.iri, reason="expired",
                                   expired_at={document.iri: document.expires}):
                    deleted.append(document)
                    if on_deleted is not None:
                        on_deleted(document)
        except Exception as exc:
            if deleted:  # an error alone would read as though nothing had been deleted
                exc.add_note(stopped_note([d.iri for d in deleted],
                                          [d.iri for d in expired if d not in deleted]))
            raise
    return deleted


def stopped_note(deleted: Sequence[str], left: Sequence[str]) -> str:
    """What a deletion of several documents that stopped on an error had done: the documents
    deleted before it, and those it had not reached (or that failed)."""
    return (f"Deleted before it stopped: {len(deleted)} document"
            f"{'s' if len(deleted) != 1 else ''} ({', '.join(deleted)}); not deleted: "
            f"{', '.join(left) if left else 'none'}. Fix the error and run it again for the rest.")


def _expired(ctx: ContextParts, moment: dt.datetime) -> list[tuple[ExpiredDocument, str]]:
    return expired_in_scopes(ctx.kg, moment, store_owners(ctx.vectors))[0]


def _by_current_rules(ctx: ContextParts, expired: list[tuple[ExpiredDocument, str]],
                      moment: dt.datetime) -> list[ExpiredDocument]:
    """Those of ``expired`` (each with the scope whose graph expires it) that the scopes'
    retention rules as they are now (and their own ``expires``) expire too, with that expiry.
    A document's recorded expiry follows the rule of its last ingest: a rule since lengthened
    (a legal hold) or dropped must not delete what it now keeps. Its date, its own ``expires``
    and its scope are read in its scope's graph alone, as its expiry was."""
    own = metadata_predicate(EXPIRES_KEY, ctx.metadata_predicates)
    now_expires: dict[str, dt.datetime] = {}
    by_scope: dict[str, list[str]] = {}
    for document, scope in expired:
        by_scope.setdefault(scope, []).append(document.iri)
    for scope, iris in sorted(by_scope.items()):
        for start in range(0, len(iris), 500):
            values = " ".join(str(ox.NamedNode(iri)) for iri in iris[start:start + 500])
            for row in select(ctx.kg, f"SELECT ?doc ?created ?own WHERE {{ VALUES ?doc "
                                      f"{{ {values} }} ?doc trails:scope ?scope FILTER(STR("
                                      "?scope) = ?in) OPTIONAL { ?doc schema:dateCreated "
                                      f"?created }} OPTIONAL {{ ?doc {own} ?own }} }}",
                              {"in": scope}, scopes=[scope]):
                when = document_expiry({EXPIRES_KEY: row.get("own")}, row.get("created"),
                                       scope, ctx.retention)
                doc = str(row["doc"])
                if when is not None and when <= moment:
                    now_expires[doc] = min(when, now_expires.get(doc, when))
    kept = [e.iri for e, _ in expired if e.iri not in now_expires]
    if kept:
        log.warning("%d document(s) expired by a retention rule since lengthened or dropped "
                    "are kept (%s%s); ingest them again to record their expiry by the rules "
                    "now (until then they stay out of answers)", len(kept),
                    ", ".join(kept[:3]), ", ..." if len(kept) > 3 else "")
    return [ExpiredDocument(e.iri, now_expires[e.iri]) for e, _ in expired
            if e.iri in now_expires]
