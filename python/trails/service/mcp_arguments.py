"""The MCP tools' arguments: ``retrieve``'s (a search request, :class:`ToolArguments`) and
``sparql``'s (:class:`SparqlArguments`), each checked whole by its model, whose JSON schema
is the tool's input schema; and their bindings, typed as ``trails query --bind`` types them.

A mistake is an :class:`~trails.errors.InvalidArgumentError` naming the argument and what it
may be: an argument the tool does not know is refused, never ignored (a misspelt
``bindings`` would leave the query's variables unbound and its answer silently empty).
"""

from __future__ import annotations

import datetime as _datetime
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.bindings import check_bindings, ill_typed
from trails.kg.terms import IRI, check_json_text
from trails.service.models import RetrieveRequest, TermObject, term_object
from trails.service.requests import term_bindings

__all__ = ["SparqlArguments", "ToolArguments", "bound_values", "typed"]

# How a binding is written, for both tools' schemas. A string is typed by its look, as
# `trails query --bind` types it; a term object (as POST /retrieve takes) says the type
# outright, so a string that looks like a date can still be bound as a string.
_BINDINGS = (
    "numbers and booleans as typed; a string \"<http://...>\" is an IRI, \"2024-01-01\" a "
    "date, an ISO datetime a dateTime, anything else a string. For any other term, or a "
    "string that looks like a date or an IRI, give the term as SPARQL JSON results write it: "
    "{\"type\": \"literal\", \"value\": \"2024-01-01\"} (a string), with \"datatype\" or "
    "\"xml:lang\", or {\"type\": \"uri\", \"value\": \"http://...\"}.")
Bindings = Annotated[dict[str, Any] | None, Field(description=(
    "Values for the query's variables, bound as RDF terms (never pasted into the text): "
    + _BINDINGS))]
Scopes = Annotated[list[str] | None, Field(description=(
    "The scopes to search (default: every scope this server's key grants; for a key with "
    "every scope, the default scope)."))]
SparqlText = Annotated[str, Field(description=(
    "A read-only SPARQL query (SELECT, ASK, CONSTRUCT or DESCRIBE); updates and SERVICE are "
    "refused. Prefixes trails:, schema:, rdf:, rdfs:, xsd: are predefined."))]


class ToolArguments(RetrieveRequest):
    """The ``retrieve`` tool's arguments: the body of ``POST /retrieve`` (a
    :class:`~trails.retrieval.request.SearchRequest`, its fields, checks, limits and
    descriptions, and the delivery fields), its bindings' strings typed as ``trails query
    --bind`` types them. Its JSON schema is the tool's input schema."""

    bindings: dict[str, TermObject | bool | int | float | str] | None = Field(
        default=None, description=(
            "Values for the filter's variables, bound as RDF terms (never pasted into the "
            "text): " + _BINDINGS))


class SparqlArguments(BaseModel):
    """The ``sparql`` tool's arguments. Its JSON schema is the tool's input schema.

    Raises:
        InvalidArgumentError: an argument missing, of the wrong type (an
            InvalidArgumentTypeError) or one the tool does not take.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: SparqlText
    bindings: Bindings = None
    scopes: Scopes = None

    def __init__(self, **fields: Any) -> None:
        check_json_text(fields, "arguments")
        try:
            super().__init__(**fields)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "arguments"
            if first["type"] == "extra_forbidden":
                raise InvalidArgumentError(
                    f"{where} is no argument of the sparql tool; it takes "
                    f"{', '.join(type(self).model_fields)}") from None
            kind = (InvalidArgumentTypeError if first["type"].endswith("_type")
                    else InvalidArgumentError)
            raise kind(f"{where}: {first['msg']}") from None


def bound_values(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """JSON values as retrieve()'s bindings; strings read as ``trails query --bind`` does.

    Raises:
        InvalidArgumentError: a value that no SPARQL term can hold.
    """
    if not values:
        return None
    if not isinstance(values, Mapping):
        raise InvalidArgumentError("bindings must be an object of variable names to values")
    bound: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, dict):  # the sparql tool's bindings arrive as JSON objects
            value = term_object(name, value)
        if isinstance(value, TermObject):
            bound.update(term_bindings({name: value}) or {})
        elif isinstance(value, str):
            bound[name] = typed(name, value)
        elif value is None or isinstance(value, (bool, int, float)):
            if value is None:
                raise InvalidArgumentError(f"binding {name!r} is null; give it a value or "
                                           "leave it out")
            bound[name] = value
        else:
            raise InvalidArgumentError(f"binding {name!r} must be a string, number, boolean or "
                                       f"term object, not {type(value).__name__}")
    check_bindings(bound)  # a name or a value no query could take: said as retrieve() says it
    return bound


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*")


def typed(name: str, value: str) -> Any:
    """A string binding as ``trails query --bind`` reads one: ``<...>`` an IRI, an ISO date
    or datetime as such, anything else the string itself.

    Raises:
        InvalidArgumentError: it looks like a date or an IRI but is not a valid one.
    """
    kind = "date" if _DATE.fullmatch(value) else "dateTime" if _DATETIME.fullmatch(value) else ""
    try:
        if value.startswith("<") and value.endswith(">"):
            return IRI(value[1:-1])
        if kind == "date":
            return _datetime.date.fromisoformat(value)
        if kind == "dateTime":
            return _datetime.datetime.fromisoformat(value)
    except ValueError as exc:
        said = ill_typed(value, kind) if kind else str(exc)
        raise InvalidArgumentError(f"binding {name!r} = {value!r}: {said}") from None
    return value
