"""``ctx.link()``: link the current chunks again after the user's graph changed (ADR 0031).

Only chunks of the versions the vector store records as current are linked; each batch of
documents changes in one graph update (the mention nodes and links that went, then those
that came), so a reader or a kill sees every document either linked as before or as now,
and running it again finishes the work (mention IRIs are content hashes: nothing twice).
The document versions themselves do not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyoxigraph as ox

from trails.errors import ConfigurationError
from trails.ingest.checks import linked
from trails.ingest.document import Chunk
from trails.ingest.graph_updates import documents_values, graph_block, mention_deletes
from trails.ingest.linker_settings import remember_linker, remembered_linker
from trails.ingest.linking import Linker, Mention, ScopeLinker, check_linker, linker_warnings
from trails.ingest.mentions import HAS_MENTION, MENTIONS, mention_iri, mention_quads
from trails.ingest.writer import writing_versions
from trails.kg.base import select
from trails.kg.hand_links import minted_links
from trails.parts import ContextParts
from trails.scopes import check_known_scopes, check_scope_argument
from trails.vector.stores.base import versioned

__all__ = ["LinkReport", "relink"]

BATCH_DOCUMENTS = 100


@dataclass
class LinkReport:
    """What ``ctx.link()`` changed: the ``(chunk, entity)`` links added and removed, how
    many mention nodes (one per matched span and label) came and went, and a warning for
    each scope where the linker found no labels to link to."""

    documents: int = 0
    chunks: int = 0
    added: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    mentions_added: int = 0
    mentions_removed: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.documents} documents, {self.chunks} chunks linked: "
                f"{len(self.added)} links added, {len(self.removed)} removed "
                f"({self.mentions_added} mentions added, {self.mentions_removed} removed)"
                + (f", {len(self.warnings)} warning{'s' if len(self.warnings) > 1 else ''}"
                   if self.warnings else ""))


def relink(ctx: ContextParts, linker: Linker | None, scopes: str | Sequence[str] | None = None
           ) -> LinkReport:
    """Link the current chunks of ``scopes`` (None: every scope with documents) again, with
    ``linker`` (its settings remembered), or None: the label linker as last set
    (:mod:`trails.ingest.linker_settings`).

    Raises:
        InvalidArgumentTypeError: ``linker`` is no Linker, or ``scopes`` no name nor list.
        InvalidArgumentError: ``scopes`` holds a malformed scope name or is empty.
        UnknownScopeError: a scope of ``scopes`` holds nothing (a typo would link nothing).
        ConfigurationError: the context is read-only.
    """
    check_linker(linker)
    if ctx.read_only:
        raise ConfigurationError("this context was opened read-only; reopen it writable to link")
    if linker is None:
        linker = remembered_linker(getattr(ctx, "directory", None))
    given: object = scopes  # a caller's set of names is a list of them, in order
    if isinstance(given, (set, frozenset)):
        given = sorted(given, key=str)
    wanted = None if given is None else set(check_scope_argument(given, "scopes"))
    records = versioned(ctx.vectors, "link").current_versions()
    if wanted is not None:
        check_known_scopes(sorted(wanted), {*ctx.kg.scopes(), *(r.scope for r in records.values())})
    by_scope: dict[str, dict[str, str]] = {}
    for doc, record in records.items():
        if wanted is None or record.scope in wanted:
            by_scope.setdefault(record.scope, {})[doc] = record.version
    report = LinkReport()
    remember_linker(ctx, linker)  # after the checks: a refused call records nothing
    for scope, versions in sorted(by_scope.items()):
        bound = linker.for_scope(ctx.kg, scope)
        report.warnings += linker_warnings(bound, scope)
        docs = sorted(versions)
        for start in range(0, len(docs), BATCH_DOCUMENTS):
            with writing_versions(ctx):  # the versions it links are the live ones as it writes
                live = versioned(ctx.vectors, "link").current_versions(
                    docs[start : start + BATCH_DOCUMENTS])
                batch = {d: r.version for d, r in live.items() if r.scope == scope}
                if batch:
                    _relink_batch(ctx, bound, scope, batch, report)
    return report


def _relink_batch(ctx: ContextParts, bound: ScopeLinker, scope: str, versions: dict[str, str],
                  report: LinkReport) -> None:
    values = documents_values(versions)
    rows = select(ctx.kg, f"SELECT ?doc ?c ?v ?text ?start ?end ?pos WHERE {{ {values} "
                          "?c a trails:Chunk ; schema:isPartOf ?doc ; trails:version ?v ; "
                          "schema:text ?text ; trails:startOffset ?start ; "
                          "trails:endOffset ?end ; schema:position ?pos }", scopes=[scope])
    new_nodes: dict[str, tuple[str, Mention]] = {}
    new_links: set[tuple[str, str]] = set()
    chunks = 0
    for row in rows:
        if row["v"] != versions[row["doc"]]:
            continue  # a stale chunk: verify(repair=True) removes it, nothing links it
        chunks += 1
        c = str(row["c"])
        for mention in linked(bound, Chunk(str(row["text"]), int(row["start"]),
                                           int(row["end"]), int(row["pos"]))):
            new_nodes[mention_iri(c, mention)] = (c, mention)
            new_links.add((c, mention.entity))
    old_nodes = {str(r["m"]): str(r["c"]) for r in select(
        ctx.kg, f"SELECT ?c ?m WHERE {{ {values} ?c schema:isPartOf ?doc ; "
                "trails:hasMention ?m }", scopes=[scope])}
    old_links = {(str(r["c"]), str(r["e"])) for r in select(
        ctx.kg, f"SELECT ?c ?e WHERE {{ {values} ?c schema:isPartOf ?doc ; "
                "trails:mentions ?e }", scopes=[scope])}
    gone = sorted(set(old_nodes) - set(new_nodes))
    came = sorted(set(new_nodes) - set(old_nodes))
    unlinked = sorted(old_links - new_links)
    updates = []
    if gone:
        updates.append(mention_deletes(scope, "VALUES ?m { " + " ".join(
            str(ox.NamedNode(m)) for m in gone) + " }"))
    dropped = [f"{ox.NamedNode(old_nodes[m])} {HAS_MENTION} {ox.NamedNode(m)} ." for m in gone]
    dropped += [f"{ox.NamedNode(c)} {MENTIONS} {ox.NamedNode(e)} ." for c, e in unlinked]
    if dropped:
        updates.append(f"DELETE DATA {{ {graph_block(scope, ' '.join(dropped))} }}")
    added = [f"{q.subject} {q.predicate} {q.object} ." for m in came
             for q in mention_quads(new_nodes[m][0], [new_nodes[m][1]], scope)]
    if added:
        updates.append(f"INSERT DATA {{ {graph_block(scope, ' '.join(added))} }}")
    if updates:
        with minted_links():  # mention links only: chunk links stay as minted
            ctx.kg.update(" ;\n".join(updates))  # one transaction for the batch
    report.documents += len(versions)
    report.chunks += chunks
    report.added += sorted(new_links - old_links)
    report.removed += unlinked
    report.mentions_added += len(came)
    report.mentions_removed += len(gone)
