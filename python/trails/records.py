"""The records a retrieval returns: :class:`RetrievalHit` and :class:`RetrievalResult`.

They sit at the bottom of the package so that ranking steps, integrations and the CLI can
name them without importing the retrieval machinery.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from trails.display import frames
from trails.display.context import ContextBlock, context_block
from trails.display.results import TEXT_HITS, hit_html, hit_text, hits_html, hits_text, label
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.keywords import named_keywords

if TYPE_CHECKING:  # optional packages (trails[pandas], trails[polars]), named for the checker
    import pandas
    import polars

__all__ = ["DEGRADED", "HitDict", "ResultDict", "RetrievalHit", "RetrievalResult"]

# The prefix of a note that says why an answer is degraded (RetrievalResult.degraded).
DEGRADED = "degraded: "


class HitDict(TypedDict):
    """:meth:`RetrievalHit.to_dict`: a hit as JSON-ready values (dates as ISO strings)."""

    iri: str
    score: float | None
    components: dict[str, float]
    document: str | None
    title: str | None
    date: str | None
    source: str | None
    snippet: str
    admitted_by: dict[str, str] | None
    metadata: dict[str, Any]


class ResultDict(TypedDict):
    """:meth:`RetrievalResult.to_dict`: the hits and how they were found, JSON-ready."""

    hits: list[HitDict]
    mode: str
    plan: str
    candidates: int | None
    exhaustive: bool
    rankings: list[str]
    fusion_weights: dict[str, float]
    notes: list[str]
    degraded: list[str]
    filter_path: str | None
    run_id: str | None


@dataclass(frozen=True)
class RetrievalHit:
    """One result: the chunk IRI, its score (None in graph mode), snippet, metadata, and the
    score components that produced the score (``vector``, ``vector_rank``, ``rrf``...)."""

    iri: str
    score: float | None
    snippet: str
    metadata: dict[str, Any] = field(default_factory=dict)
    components: dict[str, float] = field(default_factory=dict)
    # The filter's solution that admitted this chunk (variable -> N-Triples term), when asked
    # for (``retrieve(..., why=True)``) or recorded by the audit trail; None otherwise.
    admitted_by: dict[str, str] | None = None

    # Provenance: what the vector carries, and for a hit retrieve() returns, the document's
    # source, title and date from the graph when the context's payload allowlist keeps them
    # out of the store (trails.retrieval.provenance); None when neither has them (vectors
    # added by hand).

    @property
    def document(self) -> str | None:
        """The IRI of the document this chunk is part of."""
        return _text(self.metadata.get("doc_iri"))

    @property
    def source(self) -> str | None:
        """Where the document came from (a file path, a URL, a record id)."""
        return _text(self.metadata.get("source"))

    @property
    def title(self) -> str | None:
        """The document's title (its file name when it has none)."""
        return _text(self.metadata.get("title"))

    @property
    def date(self) -> dt.date | dt.datetime | None:
        """The document's ``schema:dateCreated`` (from ``date``/``created`` metadata).

        >>> RetrievalHit("c", 1.0, "", {"date": "2024-05-01"}).date
        datetime.date(2024, 5, 1)
        """
        value = self.metadata.get("date")
        if not isinstance(value, str):
            return value if isinstance(value, (dt.date, dt.datetime)) else None
        try:
            return dt.date.fromisoformat(value) if len(value) == 10 else dt.datetime.fromisoformat(value)
        except ValueError:
            return None

    def to_dict(self) -> HitDict:
        """The hit as JSON-ready values: its IRI, score and components, where it came from
        (document, title, date, source), the snippet, the filter's solution that admitted it
        (None unless asked for or recorded) and all its metadata. Dates are ISO strings.

        >>> RetrievalHit("c", 0.5, "text", {"title": "T", "date": "2024-05-01"}).to_dict()["date"]
        '2024-05-01'
        """
        date = self.date
        return {"iri": self.iri, "score": self.score, "components": dict(self.components),
                "document": self.document, "title": self.title,
                "date": None if date is None else date.isoformat(), "source": self.source,
                "snippet": self.snippet, "admitted_by": self.admitted_by,
                "metadata": _plain(self.metadata)}

    @property
    def span(self) -> tuple[int, int] | None:
        """The chunk's ``(start, end)`` character offsets in its document's text."""
        start, end = self.metadata.get("start"), self.metadata.get("end")
        if isinstance(start, int) and isinstance(end, int):
            return start, end
        return None

    def __hash__(self) -> int:
        # The generated hash would hash the metadata, a dict, and fail; equal hits have equal
        # IRIs, scores and snippets, so a set of hits or a dict keyed by them works.
        return hash((self.iri, self.score, self.snippet))

    def __repr__(self) -> str:
        score = "no score" if self.score is None else f"{self.score:.4f}"
        return f"<RetrievalHit {score} {label(self)!r} {self.iri}>"

    def __str__(self) -> str:
        return hit_text(self)

    def _repr_html_(self) -> str:
        """A notebook's view: title, date, source, score bar, passage, IRI, components."""
        return hit_html(self)


def _hit(hit: Any, place: int) -> RetrievalHit:
    """A hit of a result :meth:`RetrievalResult.to_dict` gave, rebuilt."""
    try:
        return RetrievalHit(
            str(hit["iri"]), None if hit.get("score") is None else float(hit["score"]),
            str(hit.get("snippet") or ""), dict(hit.get("metadata") or {}),
            {str(k): v if type(v) is int else float(v)  # a rank stays an int
             for k, v in (hit.get("components") or {}).items()},
            hit.get("admitted_by"))
    except KeyError as missing:
        raise _not_a_result(f"hit {place} has no {missing}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise _not_a_result(f"hit {place}: {exc}") from None


def _not_a_result(why: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"RetrievalResult.from_dict(): the data is no result "
                                f"RetrievalResult.to_dict() gave ({why}); pass a saved "
                                f"to_dict(), `trails query --json` output or a /retrieve answer")


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _plain(value: Any) -> Any:
    """``value`` with dates and times as ISO strings, mappings and sequences copied: what
    ``json.dumps`` takes (anything else stays as it is)."""
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class RetrievalResult(list[RetrievalHit]):
    """The hits, plus how they were found, so a short list is never ambiguous.

    Attributes:
        mode: the retrieval mode that ran.
        plan: the ranking plan (``full-scan``, ``gather``, ``masked-scan``, ``graph-order``...).
        candidates: how many vectors the filter admitted (None when there was no filter).
        exhaustive: True when every admitted vector was scored exactly.
        rankings: the rankings that were fused (``("vector", "keyword")``), empty when the
            hits are one ranking's order.
        notes: why a ranking the call asked for is missing (e.g. a store without keywords).
        fusion_weights: the weight ``fusion="auto"`` gave each ranking for this query (empty
            for other fusions); :meth:`trails.rank.fusion.GuardedFusion.explain` says why.
        run_id: the id of this search in the context's audit trail (``trails audit show``),
            None when it was not recorded.
        query: the query the hits answer (``retrieve()`` sets it; the display marks its
            terms in each passage), None when unknown.
        degraded: why the answer is not what the call asked for, when a backend failed
            (``"embedder unreachable: ..."``, ``"vector store unreachable: ..."``): the hits
            are then the keyword ranking of the same candidates (docs/resilience.md). Empty
            for a whole answer. Each reason is also a note (``"degraded: <reason>"``), so
            every copy of the result keeps it.
    """

    def __init__(
        self,
        hits: Sequence[RetrievalHit],
        *,
        mode: str,
        plan: str,
        candidates: int | None,
        exhaustive: bool,
        rankings: Sequence[str] = (),
        notes: Sequence[str] = (),
        fusion_weights: Mapping[str, float] | None = None,
        run_id: str | None = None,
        query: str | None = None,
        degraded: Sequence[str] = (),
    ) -> None:
        super().__init__(hits)
        self.run_id = run_id
        self.query = query
        # The embedder that embedded the query (retrieve() sets it): to_context counts tokens
        # with its tokenizer when it has one.
        self.embedder: Any = None
        # How the SPARQL filter was answered (retrieve() sets it; None: no filter).
        self.filter_path: str | None = None
        self.mode = mode
        self.plan = plan
        self.candidates = candidates
        self.exhaustive = exhaustive
        self.rankings = tuple(rankings)
        marked = [DEGRADED + reason for reason in degraded if DEGRADED + reason not in notes]
        self.notes = (*marked, *notes)
        self.fusion_weights = dict(fusion_weights or {})

    @named_keywords({"budget": "max_tokens", "token_budget": "max_tokens"})
    def to_context(self, max_tokens: int | None = None, template: str | None = None, *,
                   tokenizer: Any = None) -> ContextBlock[RetrievalHit]:
        """The hits as a prompt's evidence block: in rank order, each a numbered passage with
        its citation (``[1] title | date | source | <iri>``, then the chunk's text), as many as
        fit in ``max_tokens`` (the template included; the best hit alone over budget is cut to
        fit). ``template`` holds ``{{ context }}`` where the passages go and may hold
        ``{{ query }}``; any other ``{{ ... }}`` is refused (it would reach the prompt as
        written). Tokens are counted with ``tokenizer`` (``"cl100k_base"``, a tiktoken
        Encoding, a Hugging Face tokenizer or a callable), else the tokenizer of the embedder that embedded the
        query when it has one, else tiktoken's ``cl100k_base``. The answer is a ``str`` that
        also says which hits it holds (``.hits``, ``.omitted``, ``.truncated``, ``.tokens``).

        >>> hits = [RetrievalHit("https://ex.org/c1", 0.9, "Rails is a web framework.",
        ...                      {"title": "Rails", "date": "2024-05-01", "source": "a.md"})]
        >>> result = RetrievalResult(hits, mode="vector", plan="full-scan", candidates=None,
        ...                          exhaustive=True)
        >>> print(result.to_context(template="Retrieved evidence: {{ context }}"))
        Retrieved evidence: [1] Rails | 2024-05-01 | a.md | <https://ex.org/c1>
        Rails is a web framework.
        """
        if tokenizer is None and self.embedder is not None:
            tokenizer = getattr(self.embedder, "tokenizer", None)
        return context_block(self, query=self.query, max_tokens=max_tokens, template=template,
                             tokenizer=tokenizer)

    @property
    def degraded(self) -> tuple[str, ...]:
        """Why the answer is degraded (a backend failed), from the notes; empty when whole.

        >>> RetrievalResult([], mode="hybrid", plan="keyword-fallback", candidates=None,
        ...                 exhaustive=True, degraded=["embedder unreachable: refused"]).degraded
        ('embedder unreachable: refused',)
        """
        return tuple(note[len(DEGRADED):] for note in self.notes if note.startswith(DEGRADED))

    def explain(self) -> str:
        """One line: how many hits, the mode and plan, what the filter admitted and how it was
        answered, whether the scan was exhaustive, what was fused (with auto fusion's weights)
        and the notes."""
        admitted = "all vectors" if self.candidates is None else f"{self.candidates} candidates"
        if self.filter_path:
            admitted = f"filter={self.filter_path}, {admitted}"
        scan = "exhaustive" if self.exhaustive else "not exhaustive"
        fused = f", fused {'+'.join(self.rankings)}" if self.rankings else ""
        if self.fusion_weights:
            fused += " (weights " + ", ".join(
                f"{name} {weight:.3f}" for name, weight in self.fusion_weights.items()) + ")"
        notes = "".join(f"; {note}" for note in self.notes)
        return f"{len(self)} hits, mode={self.mode}, plan={self.plan}, {admitted}, {scan}{fused}{notes}"

    def to_dict(self) -> ResultDict:
        """The whole result as JSON-ready values: the hits (:meth:`RetrievalHit.to_dict`) and
        how they were found (mode, plan, candidates, exhaustive, rankings, fusion weights,
        notes, why it is degraded if it is, the audit trail's run id). ``trails query --json``
        prints it.

        >>> RetrievalResult([], mode="vector", plan="full-scan", candidates=None,
        ...                 exhaustive=True).to_dict()["hits"]
        []
        """
        return {"hits": [hit.to_dict() for hit in self], "mode": self.mode, "plan": self.plan,
                "candidates": self.candidates, "exhaustive": self.exhaustive,
                "rankings": list(self.rankings), "fusion_weights": dict(self.fusion_weights),
                "notes": list(self.notes), "degraded": list(self.degraded),
                "filter_path": self.filter_path, "run_id": self.run_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, query: str | None = None) -> RetrievalResult:
        """The result :meth:`to_dict` gave (a service's answer, a saved result), rebuilt.

        >>> result = RetrievalResult([RetrievalHit("c", 0.5, "text", {"title": "T"})],
        ...                          mode="vector", plan="full-scan", candidates=None,
        ...                          exhaustive=True)
        >>> RetrievalResult.from_dict(result.to_dict())[0].title
        'T'
        """
        if not isinstance(data, Mapping):
            raise InvalidArgumentTypeError(f"RetrievalResult.from_dict() takes the dict "
                                           f"RetrievalResult.to_dict() gave, got "
                                           f"{type(data).__name__}")
        given = data.get("hits", [])
        if not isinstance(given, Sequence) or isinstance(given, str):
            raise _not_a_result(f"hits must be a list, got {type(given).__name__}")
        hits = [_hit(hit, place) for place, hit in enumerate(given)]
        try:
            result = cls(hits, mode=str(data["mode"]), plan=str(data["plan"]),
                         candidates=data.get("candidates"), exhaustive=bool(data["exhaustive"]),
                         rankings=data.get("rankings") or (), notes=data.get("notes") or (),
                         fusion_weights=data.get("fusion_weights") or None,
                         run_id=data.get("run_id"), query=query if query is not None
                         else data.get("query"))
        except KeyError as missing:
            raise _not_a_result(f"it has no {missing}") from None
        except (TypeError, ValueError) as exc:
            raise _not_a_result(str(exc)) from None
        path = data.get("filter_path")
        result.filter_path = None if path is None else str(path)
        return result

    def __repr__(self) -> str:
        """The explanation and the hits' reprs, the first :data:`TEXT_HITS` of them and how
        many more (a REPL echoing a result of thousands of hits stays readable)."""
        shown = list.__repr__(self[:TEXT_HITS])
        if len(self) > TEXT_HITS:
            shown = f"{shown[:-1]}, … {len(self) - TEXT_HITS} more]"
        return f"<RetrievalResult {self.explain()}: {shown}>"

    def __str__(self) -> str:
        return hits_text(self, self.explain(), self.query, self.run_id)

    def _repr_html_(self) -> str:
        """A notebook's view: the explanation line, then each hit's title, date, source,
        score bar (components on hover and in a detail row), passage with the query's terms
        marked, and IRI."""
        return hits_html(self, self.explain(), self.query, self.run_id)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per hit: rank, iri, score, components, title, date, source, snippet,
        document.

        Raises:
            MissingExtraError: pandas is not installed (``pip install "trails[pandas]"``).
        """
        return frames.to_pandas(self)

    def to_polars(self) -> polars.DataFrame:
        """:meth:`to_pandas`'s rows as a ``polars.DataFrame``.

        Raises:
            MissingExtraError: polars is not installed (``pip install "trails[polars]"``).
        """
        return frames.to_polars(self)
