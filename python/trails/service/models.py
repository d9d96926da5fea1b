"""The service's requests and responses as pydantic models: what ``/openapi.json`` states.

Only pydantic and trails' own term checks (base dependencies) are imported here, so the
shapes can be read and tested without the ``service`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.bindings import check_bindings
from trails.kg.terms import check_json_text
from trails.retrieval.request import SearchRequest
from trails.service.steps import STEP_OPTIONS

__all__ = ["DocumentIn", "ErrorBody", "FeedbackList", "FeedbackOut", "FeedbackRequest",
           "HealthBody", "HitOut", "IngestRequest", "RetrieveRequest", "RetrieveResponse",
           "StepSpec", "TermObject"]

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Body(_Strict):
    """A request body: besides its schema, no lone surrogate in any of its strings (JSON
    can spell one, UTF-8 cannot hold it), refused as a whole before any field is read."""

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        check_json_text(data, "body")
        return data


class TermObject(_Strict):
    """An RDF term as the SPARQL 1.1 JSON results format writes one."""

    type: Literal["uri", "literal"]
    value: str
    datatype: str | None = None
    xml_lang: str | None = Field(default=None, alias="xml:lang")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


BindingValue = TermObject | bool | int | float | str
# A body's now: ISO 8601 text, checked by the search (see RetrieveRequest).
_Now = Annotated[Any, WithJsonSchema({
    "anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Now",
    "description": "ISO 8601 date-time with an offset: the moment expiries are judged at"})]


def term_object(name: str, value: dict[str, Any]) -> TermObject:
    """The binding ``name``'s JSON object as a term, or its one mistake said as such (left to
    the union of binding types, it would be named after each type it is not).

    Raises:
        InvalidArgumentError: the object is no SPARQL JSON results term.
    """
    try:
        return TermObject.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidArgumentError(
            f"binding {name!r} is no SPARQL JSON term ({where + ': ' if where else ''}"
            f"{first['msg']}): a term is {{\"type\": \"uri\" or \"literal\", \"value\": "
            "\"...\"} with, for a literal, \"datatype\" or \"xml:lang\"") from None


class StepSpec(_Strict):
    """A post-ranking step by name, with its options (``STEP_OPTIONS`` lists them)."""

    # The names build_steps knows (one list: a step added there is offered here); it refuses
    # any other, naming them.
    name: str = Field(json_schema_extra={"enum": list(STEP_OPTIONS)})
    options: dict[str, Any] = Field(default_factory=dict)


class RetrieveRequest(SearchRequest):
    """``POST /retrieve``: a :class:`~trails.retrieval.request.SearchRequest` (the same
    fields, checks and limits as ``trails.retrieve``), its bindings and steps as JSON spells
    them, and how the answer is delivered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bindings: dict[str, BindingValue] | None = Field(
        default=None, description="values for the filter's variables: a JSON scalar (bound as "
        "the Python API binds it) or a SPARQL JSON results term {type, value, datatype?, "
        "xml:lang?}")
    steps: list[StepSpec] = Field(  # type: ignore[assignment]
        default_factory=list, max_length=10, description="post-ranking steps, each "
        "{name, options}, in order: " + "; ".join(
            f"{name} ({', '.join(options) or 'no options'})"
            for name, options in STEP_OPTIONS.items()))
    # Any JSON value reaches the search, whose SearchRequest refuses one that is no moment
    # in the words it uses in Python (a number too: not pydantic's "a valid string").
    if TYPE_CHECKING:
        now: str | None = None  # type: ignore[assignment]
    else:
        now: _Now = None
    inject_mode: Literal["prompt_append", "metadata_only", "none"] = Field(
        default="metadata_only", description="prompt_append: also answer 'context', the "
        "evidence block result.to_context() builds (max_tokens, template); metadata_only: the "
        "hits with their citations; none: no hits (a note says how many were found)")
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000, description="the "
                                   "evidence block's token budget (prompt_append only)")
    template: str | None = Field(default=None, max_length=100_000, description="the evidence "
                                 "block's template, holding {{ context }} (prompt_append only)")

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        check_json_text(data, "body")
        return data

    @field_validator("bindings", mode="before")
    @classmethod
    def _bindings(cls, bindings: object) -> object:
        if not isinstance(bindings, dict):
            check_bindings(bindings)  # None passes; anything else is refused as retrieve() does
            return bindings
        converted: dict[str, Any] = {}
        for name, value in bindings.items():  # else pydantic names each member of the union
            if isinstance(value, dict):
                converted[name] = term_object(name, value)
            elif isinstance(value, (TermObject, bool, int, float, str)):
                converted[name] = value
            else:
                sent = ("null" if value is None else "an array" if isinstance(value, list)
                        else type(value).__name__)
                several = (f"; to match any of several values, write VALUES ?{name} {{ ... }} "
                           "in the filter" if isinstance(value, list) else "")
                raise InvalidArgumentTypeError(
                    f"binding {name!r} is {sent}: a binding is a JSON string, number or "
                    f'boolean, or a SPARQL JSON term such as {{"type": "uri", "value": '
                    f'"https://..."}}{several}')
        return converted  # terms as JSON: each checked once converted (requests.term_bindings)

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, steps: object) -> object:
        # Names and options: checked as they are built (service/steps.py). The shape here,
        # else pydantic names the schema's class, or calls an option beside the name one "of
        # a search".
        example = '{"name": "mmr", "options": {"lambda_": 0.5}}'
        for number, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict):
                raise InvalidArgumentTypeError(
                    f"steps[{number}] is {step!r}: a step is an object naming it, with its "
                    f"options: {example}")
            extra = sorted(set(step) - {"name", "options"})
            if extra:
                raise InvalidArgumentError(
                    f"steps[{number}] takes name and options, not {', '.join(extra)}: a step's "
                    f"options go in its \"options\": {example}")
        return steps

    # Checked when the search runs (retrieve() builds the SearchRequest that refuses them),
    # so that a refusal of a parsed body is recorded in the audit trail, under its key.
    @field_validator("now", mode="before")
    @classmethod
    def _now(cls, now: object) -> object:
        return now

    @model_validator(mode="after")
    def _runs(self) -> RetrieveRequest:
        return self


class HitOut(BaseModel):
    """One hit, as ``RetrievalHit.to_dict()`` writes it."""

    iri: str
    score: float | None
    components: dict[str, int | float]  # a rank an int, as retrieve() gives it
    document: str | None
    title: str | None
    date: str | None
    source: str | None
    snippet: str
    admitted_by: dict[str, str] | None
    metadata: dict[str, Any]


class ContextOut(BaseModel):
    """The evidence block of ``inject_mode="prompt_append"`` (``RetrievalResult.to_context``)."""

    text: str
    tokens: int
    hits: list[str]
    omitted: int
    repeated: int
    truncated: bool


class RetrieveResponse(BaseModel):
    """``RetrievalResult.to_dict()``, with the query and what the answer did without."""

    query: str
    hits: list[HitOut]
    mode: str
    plan: str
    candidates: int | None
    exhaustive: bool
    rankings: list[str]
    fusion_weights: dict[str, float]
    notes: list[str]
    run_id: str | None
    degraded: list[str]
    filter_path: str | None = None
    context: ContextOut | None = None
    context_empty: bool | None = Field(
        default=None, description="true when the answer has no hits and the context holds no "
        "documents at all (said only to a key that reads every scope); null otherwise")
    scopes_elsewhere: list[str] | None = Field(
        default=None, description="when the answer has no hits, the search named no scope and "
        "the default scope it read holds no documents: the scopes that do (said only to a key "
        "that reads every scope); null otherwise")


class DocumentIn(_Strict):
    """A document to ingest: its text, and an ``id`` or a ``source`` (or both) naming it."""

    text: str = Field(max_length=10_000_000)
    id: str | None = Field(default=None, min_length=1, max_length=2_000)
    source: str | None = Field(default=None, min_length=1, max_length=2_000)
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _named(self) -> DocumentIn:
        if self.id is None and self.source is None:
            raise ValueError("a document needs an 'id' or a 'source' naming it")
        return self


class IngestRequest(_Body):
    """``POST /ingest``: documents, and the scope they go to (default scope if none)."""

    documents: list[DocumentIn] = Field(min_length=1, max_length=10_000)
    scope: str | None = None


class FeedbackRequest(_Body):
    """``POST /runs/{run}/feedback``: what the caller thinks of a recorded run."""

    rating: Literal["up", "down"]
    note: str | None = Field(default=None, max_length=10_000)


class FeedbackOut(BaseModel):
    """One feedback record, as the audit trail keeps it."""

    kind: str
    run_id: str
    caller: str
    started: str
    ended: str
    run: str
    rating: str
    note: str | None


class FeedbackList(BaseModel):
    """``GET /runs/{run}/feedback``: the run and its feedback, newest first."""

    run: str
    feedback: list[FeedbackOut]


class ErrorBody(BaseModel):
    """Every error: the class of the failure and a message saying what to do."""

    error: str
    message: str


class BackendHealth(BaseModel):
    """One remote endpoint, as its circuit breaker sees it (docs/resilience.md)."""

    backend: str
    url: str
    circuit: Literal["closed", "open", "half-open"]
    failures: int


class HealthBody(BaseModel):
    """``GET /health``: ``ready`` once the models are warm."""

    status: Literal["starting", "ready", "failed"]
    read_only: bool
    warmup_seconds: float | None = None
    detail: str | None = None
    backends: list[BackendHealth] = Field(
        default_factory=list, description="each remote backend's circuit breaker: closed "
        "(answering), open (failing: calls are not sent) or half-open (being probed)")
