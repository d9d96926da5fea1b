"""What the audit trail keeps of one activity: a search (:class:`SearchRecord`) or a deletion
(:class:`DeletionRecord`), as plain values that go to a JSON line and come back unchanged."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from trails.errors import InvalidArgumentError
from trails.records import DEGRADED

__all__ = ["RATINGS", "ActivityRecord", "DeletionRecord", "FeedbackRecord", "HitRecord",
           "SearchRecord", "SparqlQueryRecord", "from_json", "new_run_id", "query_digest", "run_id_of", "run_iri",
           "run_prefix_of"]

RUN_BASE = "urn:trails:run:"
_RUN_ID = re.compile(r"[0-9a-f]{32}")  # what new_run_id makes
# A short prefix, as git takes one: enough digits that a typo rarely lands on another run.
MIN_PREFIX = 4
_RUN_PREFIX = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},31}}")


def new_run_id() -> str:
    return uuid.uuid4().hex


def run_iri(run_id: str) -> str:
    return RUN_BASE + run_id


def run_id_of(run: object) -> str:
    """The run id ``run`` names: the id itself (32 hexadecimal digits, as ``trails audit``
    lists them) or its IRI ``urn:trails:run:<id>``.

    Raises:
        InvalidArgumentError: anything else (it could only name no run, or another one).
    """
    found = _stripped(run)
    if not _RUN_ID.fullmatch(found):
        raise InvalidArgumentError(
            f"{str(run)[:80]!r} is no run id: a run id is 32 hexadecimal digits (as `trails "
            f"audit` lists them) or a unique prefix of at least {MIN_PREFIX} of them, or its "
            f"IRI {RUN_BASE}<id>")
    return found


def run_prefix_of(run: object) -> str | None:
    """The prefix ``run`` is when it is a short run id (4 to 31 hexadecimal digits, like a
    git commit's), else None: a whole id, or no run id at all (:func:`run_id_of` says which).

    >>> run_prefix_of("9F3a"), run_prefix_of("9f3"), run_prefix_of("urn:trails:run:9f3a")
    ('9f3a', None, '9f3a')
    """
    found = _stripped(run)
    return found if _RUN_PREFIX.fullmatch(found) else None


def _stripped(run: object) -> str:
    text = run.strip() if isinstance(run, str) else ""
    return text.removeprefix(RUN_BASE).lower()


def query_digest(query: str) -> str:
    """The SHA-256 of a query's text (UTF-8), hex: what is kept when the text may not be."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(kind: type) -> tuple[str, ...]:
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


@dataclass(frozen=True)
class HitRecord:
    """One returned chunk: its rank (1 first), score, score components, document, and the
    filter's solution that admitted it (variable -> N-Triples term)."""

    rank: int
    iri: str
    score: float | None
    document: str | None = None
    components: dict[str, float] = field(default_factory=dict)
    admitted_by: dict[str, str] | None = None


@dataclass(frozen=True)
class ActivityRecord:
    """What every activity has: its id, when it started and ended, and who asked."""

    kind: ClassVar[str] = ""
    run_id: str
    caller: str
    started: str  # ISO 8601, UTC
    ended: str

    @property
    def iri(self) -> str:
        return run_iri(self.run_id)

    def to_json(self) -> dict[str, Any]:
        # By hand, not dataclasses.asdict: its deep copies cost more than the search's own
        # Python work (the record is built on every search).
        data: dict[str, Any] = {"kind": self.kind}
        for name in _names(type(self)):
            value = getattr(self, name)
            data[name] = [dict(vars(h)) for h in value] if name == "hits" else value
        return data


@dataclass(frozen=True)
class SearchRecord(ActivityRecord):
    """One ``retrieve()``: what was asked, how, against which state, and what came back."""

    kind: ClassVar[str] = "search"
    query_sha256: str = ""
    query: str | None = None  # None when the context keeps digests only
    # The standalone query a rewriter made of ``query`` and the conversation, which the
    # search ranked by (None: not rewritten); its text is kept when ``query``'s is.
    rewritten_sha256: str | None = None
    rewritten: str | None = None
    mode: str = "hybrid"
    k: int = 10
    filter: str | None = None
    bindings: dict[str, str] = field(default_factory=dict)  # variable -> N-Triples term
    scopes: list[str] = field(default_factory=list)
    # Scope -> its security level, for the scopes read that have one (AuditConfig.levels).
    levels: dict[str, str] = field(default_factory=dict)
    fusion: str | None = None
    steps: list[str] = field(default_factory=list)
    min_score: float | None = None
    # What a failed embedder or vector store was to be answered with (retrieve(fallback=...)):
    # "auto", "keyword", "skip" or "none"; None in a record from before it was kept.
    fallback: str | None = None
    # The moment documents' expiries were judged at, when the search was given one
    # (retrieve(now=...)): an answer "as of" then, which a replay asks again.
    as_of: str | None = None
    plan: str = ""
    candidates: int | None = None
    exhaustive: bool = True
    # How the filter was answered (RetrievalResult.filter_path); None without a filter.
    filter_path: str | None = None
    fusion_weights: dict[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    embedder: str | None = None
    graph_revision: str | None = None
    store_revision: str | None = None
    replay_of: str | None = None
    hits: list[HitRecord] = field(default_factory=list)
    # The user's entities the filter named (written out or bound; ADR 0037).
    entities: list[str] = field(default_factory=list)

    @property
    def degraded(self) -> list[str]:
        """Why the answer was degraded (a backend failed; ``RetrievalResult.degraded``), read
        from its notes; empty for a whole answer."""
        return [note[len(DEGRADED):] for note in self.notes if note.startswith(DEGRADED)]


@dataclass(frozen=True)
class DeletionRecord(ActivityRecord):
    """Documents removed from every store, and why (e.g. ``expired``)."""

    kind: ClassVar[str] = "deletion"
    reason: str = ""
    documents: list[str] = field(default_factory=list)
    expired_at: dict[str, str] = field(default_factory=dict)  # document -> its expiry


@dataclass(frozen=True)
class SparqlQueryRecord(ActivityRecord):
    """One SPARQL query answered for a caller (the service's ``/sparql``): its text (or only
    its digest), its form, the scopes it was confined to (empty: every graph; its levels are
    then every level set) and how many answers it gave (rows, triples, or 1 for an ASK)."""

    kind: ClassVar[str] = "sparql"
    query_sha256: str = ""
    query: str | None = None  # None when the context keeps digests only
    form: str = "SELECT"
    scopes: list[str] = field(default_factory=list)
    levels: dict[str, str] = field(default_factory=dict)  # as SearchRecord.levels
    answers: int = 0


RATINGS = ("up", "down")


@dataclass(frozen=True)
class FeedbackRecord(ActivityRecord):
    """What a person said of a recorded run (its id in ``run``): ``up`` or ``down``, and a note
    (None: no note). Its own activity, so the run's record stays exactly what was recorded."""

    kind: ClassVar[str] = "feedback"
    run: str = ""
    rating: str = "up"
    note: str | None = None


def from_json(data: Mapping[str, Any]) -> ActivityRecord:
    """The record a :meth:`ActivityRecord.to_json` line holds.

    Raises:
        ValueError: not such a line (a torn or foreign line: the log's reader skips it).
    """
    values = dict(data)
    kind = values.pop("kind", None)
    if kind == SearchRecord.kind:
        hits = [HitRecord(**hit) for hit in values.pop("hits", [])]
        return SearchRecord(**values, hits=hits)
    if kind == DeletionRecord.kind:
        return DeletionRecord(**values)
    if kind == SparqlQueryRecord.kind:
        return SparqlQueryRecord(**values)
    if kind == FeedbackRecord.kind:
        return FeedbackRecord(**values)
    raise ValueError(f"no audit record kind {kind!r}")


def started_now() -> str:
    """The current time, as records keep it."""
    return dt.datetime.now(dt.UTC).isoformat()
