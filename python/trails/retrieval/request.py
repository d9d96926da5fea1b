"""One search as one value: :class:`SearchRequest`, what ``retrieve()`` is asked.

``retrieve(query, ctx, **options)`` builds one; the service's ``POST /retrieve`` body, the
MCP tool and the CLI take the same fields, so a request gets the same answer, or the same
refusal, wherever it comes from (ADR 0043). Its checks are those of
:mod:`trails.retrieval.arguments`, so a mistake is an
:class:`~trails.errors.InvalidArgumentError` (an :class:`~trails.errors.InvalidArgumentTypeError`
for a value of the wrong type) with the message Python callers have always seen::

    >>> SearchRequest(query="rails", k=0)
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: k must be an int from 1 to 1000000, got 0
    >>> SearchRequest(query="rails", mode="graph", filter="SELECT ?iri WHERE {}").k
    10
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.expiry import utc_now
from trails.kg.bindings import check_bindings
from trails.kg.terms import check_text
from trails.retrieval.arguments import (
    KEYWORDS_MEANT,
    MAX_K,
    check_fusion,
    check_k,
    check_min_score,
    check_mode,
    check_query,
    check_scope_argument,
    check_steps,
    check_why,
)
from trails.retrieval.degraded import FALLBACKS, Fallback, check_fallback
from trails.scopes import NAME_PATTERN

if TYPE_CHECKING:
    from trails.rank._steps import Step
    from trails.rank.fusion import FusionFn

__all__ = ["FUSIONS", "MODES", "Fusion", "Mode", "SearchRequest", "no_object", "refusal",
           "spelt_none"]


@contextlib.contextmanager
def _refused(model: type[BaseModel]) -> Iterator[None]:
    """pydantic's ValidationError raised inside, as the refusal of ``model``'s fields."""
    try:
        yield
    except ValidationError as error:
        raise refusal(error.errors(), model) from None

Mode = Literal["vector", "graph", "hybrid"]
MODES: tuple[str, ...] = get_args(Mode)
# fusion="...": "rrf" (constant 60, equal weights), "weighted" (min-max scores, equal weights),
# "auto" (the default: quality-guarded score fusion, tuned on training qrels; ADR 0010).
Fusion = Literal["rrf", "weighted", "auto"]
FUSIONS: tuple[str, ...] = get_args(Fusion)
# How JSON (HTTP, MCP, the CLI) spells None for fusion and fallback.
_NONE = "none"
# retrieve()'s names for the fields it names otherwise.
_PYTHON_NAMES = {"filter": "sparql_filter", "scopes": "scope"}

_Fusion = Annotated[Any, WithJsonSchema({
    "anyOf": [{"enum": [*FUSIONS, _NONE]}, {"type": "null"}], "default": "auto",
    "description": "how hybrid mode fuses the vector and keyword rankings; none (or null): "
                   "by vector score alone."})]
_Steps = Annotated[tuple[Any, ...], WithJsonSchema({
    "type": "array", "description": "post-ranking steps (Python: callables step(query, hits, "
    "ctx); over HTTP: {name, options} objects, see GET /steps)"})]
# A scope's name, or a non-empty list of them (what check_scope_argument takes).
_SCOPE = {"type": "string", "pattern": NAME_PATTERN}
_Scopes = Annotated[tuple[str, ...] | None, WithJsonSchema({
    "anyOf": [{"type": "array", "items": _SCOPE, "minItems": 1}, _SCOPE, {"type": "null"}],
    "default": None, "title": "Scopes",
    "description": "The scopes to search (default: the default scope, or over the service "
                   "every scope the key grants)."})]
_Fallback = Annotated[str | None, WithJsonSchema({
    "anyOf": [{"enum": [f for f in FALLBACKS if f is not None] + [_NONE]},
              {"type": "null"}], "default": "auto",
    "description": "when the embedder or vector store fails: auto answers a hybrid query with "
                   "the keyword ranking of the same candidates (and says so in 'degraded'); "
                   "keyword does so for vector queries too; skip answers no hits with a note; "
                   "none (or null) refuses."})]


class SearchRequest(BaseModel):
    """What one search asks: the options of ``retrieve()`` that say *what* to find (which
    context, store, embedder, rewriter and caller answer it are not part of it).

    Frozen, and refusing any field it does not know. Built from JSON as from Python: ``fusion``
    and ``fallback`` take ``"none"`` for None, ``now`` an ISO 8601 string with an offset.

    Raises:
        InvalidArgumentError: a value out of range or not among the choices, an unknown
            field, or a combination that cannot run (``mode="graph"`` without a filter).
        InvalidArgumentTypeError: a value of the wrong type.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(description="The question, in natural language.")
    mode: Mode = Field(default="hybrid", description=(
        "hybrid: rank the filter's candidates (every chunk without a filter) by vector and "
        "keyword evidence; vector: nearest chunks; graph: the filter's IRIs in its order."))
    k: int = Field(default=10, ge=1, le=MAX_K, description="At most this many hits.")
    filter: str | None = Field(default=None, description=(
        "A SPARQL SELECT projecting one variable: the chunk or document IRIs to rank."))
    bindings: Mapping[str, Any] | None = Field(default=None, description=(
        "Values for the filter's variables, bound as RDF terms (never pasted into the text)."))
    scopes: _Scopes = None
    # pydantic reads the JSON forms (the else branch); a type checker, the values held.
    if TYPE_CHECKING:
        fusion: Fusion | FusionFn | None = "auto"
        steps: tuple[Step, ...] = ()
    else:
        fusion: _Fusion = "auto"
        steps: _Steps = ()
    min_score: float | None = Field(default=None, description=(
        "Drop hits whose final score is below this; its scale is the fusion's: cosine in "
        "[-1, 1] for mode vector or fusion none, 0 to 1 for auto, tiny rank sums for rrf "
        "(docs/retrieval.md). Not with mode graph (no scores)."))
    if TYPE_CHECKING:
        fallback: Fallback | None = "auto"
    else:
        fallback: _Fallback = "auto"
    why: bool | None = Field(default=None, description=(
        "Give each hit of a filtered search the filter's solution that admitted it (default: "
        "when the audit trail keeps it)."))
    now: dt.datetime | None = Field(default=None, description=(
        "The moment documents' expiries are judged at (ISO 8601 with an offset; default: now)."))

    if TYPE_CHECKING:  # the keywords taken, for a type checker ("none": JSON's None)
        def __init__(self, *, query: str, mode: Mode = "hybrid", k: int = 10,
                     filter: str | None = None, bindings: Mapping[str, Any] | None = None,
                     scopes: str | Sequence[str] | None = None,
                     fusion: Fusion | Literal["none"] | FusionFn | None = "auto",
                     steps: Sequence[Step] = (), min_score: float | None = None,
                     fallback: Fallback | Literal["none"] | None = "auto",
                     why: bool | None = None, now: dt.datetime | str | None = None) -> None: ...

    def __init__(self, **fields: Any) -> None:  # type: ignore[no-redef]
        with _refused(type(self)):
            super().__init__(**fields)

    # pydantic's own readers build a request too (a request kept as JSON, read back): the
    # same refusal as the constructor's, never pydantic's ValidationError.
    @classmethod
    def model_validate(cls, *args: Any, **kwargs: Any) -> Self:
        with _refused(cls):
            return super().model_validate(*args, **kwargs)

    @classmethod
    def model_validate_json(cls, *args: Any, **kwargs: Any) -> Self:
        with _refused(cls):
            return super().model_validate_json(*args, **kwargs)

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, query: object) -> str:
        return check_query(query)

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, mode: object) -> object:
        return check_mode(mode, MODES)

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, k: object) -> int:
        return check_k(k)

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, text: object) -> str | None:
        if text is not None and not isinstance(text, str):
            raise InvalidArgumentTypeError(f"sparql_filter must be a SPARQL SELECT (str) or "
                                           f"None, got {type(text).__name__}")
        return None if text is None else check_text(text, "sparql_filter")

    @field_validator("bindings", mode="before")
    @classmethod
    def _bindings(cls, bindings: object) -> object:
        check_bindings(bindings)
        return bindings

    @field_validator("scopes", mode="before")
    @classmethod
    def _scopes(cls, scopes: object) -> tuple[str, ...] | None:
        return None if scopes is None else tuple(check_scope_argument(scopes))

    @field_validator("fusion", mode="before")
    @classmethod
    def _fusion(cls, fusion: object) -> object:
        fusion = spelt_none(fusion)
        check_fusion(fusion, FUSIONS)
        return fusion

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, steps: object) -> object:
        return check_steps(steps)

    @field_validator("min_score", mode="before")
    @classmethod
    def _min_score(cls, min_score: object, info: ValidationInfo) -> float | None:
        return check_min_score(min_score, info.data.get("mode", "hybrid"))

    @field_validator("fallback", mode="before")
    @classmethod
    def _fallback(cls, fallback: object) -> str | None:
        return check_fallback(spelt_none(fallback))

    @field_validator("why", mode="before")
    @classmethod
    def _why(cls, why: object) -> bool | None:
        return check_why(why)

    @field_validator("now", mode="before")
    @classmethod
    def _now(cls, now: object) -> object:
        if isinstance(now, str):
            try:
                now = dt.datetime.fromisoformat(now)
            except ValueError:
                raise InvalidArgumentError(f"now={now!r:.80} is no ISO 8601 date-time; write "
                                           f"e.g. 2026-01-01T00:00:00+00:00") from None
        if now is None:
            return None
        if not isinstance(now, dt.datetime):  # JSON's number, bool or array too
            raise InvalidArgumentTypeError(
                f"now must be a datetime with an offset, or its ISO 8601 text such as "
                f"2026-01-01T00:00:00+00:00; got {type(now).__name__} {now!r:.80}")
        utc_now(now)  # an offset, or refused
        return now

    def options(self) -> dict[str, Any]:
        """The request as ``retrieve()``'s keyword arguments besides the query (its
        ``filter`` and ``scopes`` are ``sparql_filter`` and ``scope`` there)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return {_PYTHON_NAMES.get(name, name): value for name, value in fields.items()
                if name in SearchRequest.model_fields and name != "query"}

    @model_validator(mode="after")
    def _runs(self) -> SearchRequest:
        """The combinations no mode can run: refused rather than silently ignored."""
        if self.bindings and self.filter is None:
            raise InvalidArgumentError("bindings were given without a sparql_filter to bind "
                                       "them in")
        if self.mode == "vector" and self.filter is not None:
            raise InvalidArgumentError("mode='vector' ranks every vector and takes no "
                                       "sparql_filter; use mode='hybrid' to rank only the "
                                       "filter's candidates")
        if self.mode == "graph" and self.filter is None:
            raise InvalidArgumentError("mode='graph' needs a sparql_filter selecting the IRIs "
                                       "to return")
        return self


def spelt_none(value: object) -> object:
    """None for ``"none"``, how JSON (HTTP, MCP, the command line) spells None for
    ``fusion`` and ``fallback``; any other value as it is."""
    return None if isinstance(value, str) and value == _NONE else value


def refusal(errors: Sequence[ErrorDetails],
            model: type[BaseModel] | None = None) -> InvalidArgumentError:
    """The first mistake of a refused request (``ValidationError.errors()``) as the error
    ``retrieve()`` raises for it: the check's own error when one of :class:`SearchRequest`'s
    checks refused it, else one naming the field (an unknown field, a value of the wrong type
    for a field a JSON body adds)."""
    first = errors[0]
    raised = first.get("ctx", {}).get("error")
    if isinstance(raised, InvalidArgumentError):
        return raised
    return _named(first, model or SearchRequest)


# Names a search's fields have elsewhere: retrieve()'s (sparql_filter, scope) and other
# libraries' (top_k, where, threshold).
_RENAMED = {"sparql_filter": "filter", "scope": "scopes"}  # retrieve()'s name: the field's
_FIELDS_MEANT = {**{alias: _RENAMED.get(to, to) for alias, to in KEYWORDS_MEANT.items()},
                 **_RENAMED}


def _meant(name: str, model: type[BaseModel]) -> str:
    """`` (did you mean k?)`` for a field ``name`` that stands for one of ``model``'s."""
    fields = list(model.model_fields)
    meant = _FIELDS_MEANT.get(name)
    close = [meant] if meant in fields else difflib.get_close_matches(name, fields, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _named(details: ErrorDetails, model: type[BaseModel]) -> InvalidArgumentError:
    if not details["loc"]:  # the whole request: a body that is no JSON object, or none
        return _no_object(details)
    where = ".".join(str(part) for part in details["loc"])
    if details["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return InvalidArgumentError(f"{where} is no option of a search{_meant(where, model)}; "
                                    f"a search takes {known}")
    kind = (InvalidArgumentTypeError if details["type"].endswith("_type")
            else InvalidArgumentError)
    return kind(f"{where}: {details['msg']}")


def _no_object(details: ErrorDetails) -> InvalidArgumentError:
    """A request that is no object at all (a JSON body of an array, a string, null...)."""
    return no_object('a search is one JSON object such as {"query": "how do we deploy?", '
                     '"k": 5}', details)


def no_object(what: str, details: ErrorDetails) -> InvalidArgumentError:
    """The error of a request body that is no object at all (the validation error of the
    whole body, ``details``): ``what`` (what the body is, by example), and what it holds."""
    sent = details.get("input")
    held = ("nothing" if details["type"] == "missing" else "null" if sent is None
            else "an array" if isinstance(sent, list) else "a string" if isinstance(sent, str)
            else "a boolean" if isinstance(sent, bool)
            else "a number" if isinstance(sent, (int, float)) else type(sent).__name__)
    kind = InvalidArgumentError if details["type"] == "missing" else InvalidArgumentTypeError
    return kind(f"{what}; the request body holds {held}")
