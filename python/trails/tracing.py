"""OpenTelemetry spans around retrieval and ingestion, or nothing at all.

Tracing is optional and silent: with ``opentelemetry-api`` installed (``pip install
"trails[tracing]"``) :func:`span` opens a span on the global tracer provider, which the
application configures (an SDK and an exporter; docs/tracing.md); without it every call
here returns a shared do-nothing object. Whether it is installed is decided once, at the first
span, through :func:`trails._lazy.require`; ``import trails`` never imports it.

Spans carry counts, names and settings, never the text of a query, a filter or a document:
those are added only when ``TRAILS_LOG_TEXT`` is set, the switch the ``trails.retrieve`` log
records obey (:data:`LOG_TEXT`). A span that ends with an exception gets status ERROR, an
``error.type`` attribute and an ``exception`` event (its message too only under that switch,
since messages may quote the query).

>>> with span("trails.example", {"trails.count": 3}) as current:
...     current.set({"trails.more": True})
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from trails._lazy import require
from trails.errors import MissingExtraError
from trails.registry import GRAPHS, VECTOR_STORES

__all__ = ["LOG_TEXT", "Attributes", "LazyAttributes", "Span", "db_system", "enabled", "span",
           "start", "text_allowed", "traced"]

log = logging.getLogger("trails.tracing")

# Query and document text go to spans (and log records) only when this is set.
LOG_TEXT = "TRAILS_LOG_TEXT"
_SCOPE = "trails"  # the instrumentation scope's name, as exporters show it

P = ParamSpec("P")
R = TypeVar("R")
Attributes = Mapping[str, Any]
# Attributes, or a function computing them, called only when opentelemetry is installed.
LazyAttributes = Attributes | Callable[[], Attributes] | None

_UNDECIDED: Any = object()
_trace: Any = _UNDECIDED  # the opentelemetry.trace module, or None when it is not installed
_context: Any = None  # opentelemetry.context
_tracer: Any = None


def _api() -> Any:
    """``opentelemetry.trace``, imported at the first call, or None without the extra."""
    global _trace, _context, _tracer
    if _trace is _UNDECIDED:
        try:
            module = require("opentelemetry.trace", "Tracing")
            _context = require("opentelemetry.context", "Tracing")
        except MissingExtraError:
            module = None
        except ImportError:  # a broken install: tracing stays off rather than fail a search
            log.warning("opentelemetry is installed but does not import; tracing is off",
                        exc_info=True)
            module = None
        if module is not None:
            _tracer = module.get_tracer(_SCOPE)  # a proxy: follows a provider set later
        _trace = module
    return _trace


def enabled() -> bool:
    """Whether spans are made (opentelemetry is installed)."""
    return _api() is not None


def text_allowed() -> bool:
    """Whether query and document text may go into spans (``TRAILS_LOG_TEXT`` is set)."""
    return bool(os.environ.get(LOG_TEXT))


class Span:
    """A handle on one span: attributes added while it runs. The do-nothing handle (no
    opentelemetry) accepts the same calls."""

    __slots__ = ("_span",)

    def __init__(self, otel_span: Any = None) -> None:
        self._span = otel_span

    @property
    def recording(self) -> bool:
        """Whether anything records this span (skip computing costly attributes if not)."""
        return self._span is not None and bool(self._span.is_recording())

    def set(self, attributes: Attributes | None = None, **more: Any) -> None:
        """Add attributes; None values are left out (OpenTelemetry has no null)."""
        if self._span is None:
            return
        for key, value in {**(attributes or {}), **more}.items():
            if value is not None:
                self._span.set_attribute(key, value)

    def fail(self, error: BaseException) -> None:
        """Mark the span failed: status ERROR, ``error.type`` and an ``exception`` event."""
        if self._span is None:  # a real span exists only once _trace is the module
            return
        kind = type(error).__qualname__
        event = {"exception.type": f"{type(error).__module__}.{kind}"}
        if text_allowed():  # a message may quote the query or the filter
            event["exception.message"] = str(error)
        self._span.set_attribute("error.type", kind)
        self._span.add_event("exception", event)
        self._span.set_status(_trace.Status(_trace.StatusCode.ERROR, kind))

    def end(self, error: BaseException | None = None) -> None:
        """End a span from :func:`start` (marking it failed if ``error``)."""
        if self._span is None:
            return
        if error is not None:
            self.fail(error)
        self._span.end()


_NO_SPAN = Span()


class _Opened:
    """``with span(...)``: the span is current inside the block (children nest under it)."""

    __slots__ = ("_attributes", "_handle", "_name", "_parent", "_token")

    def __init__(self, name: str, attributes: LazyAttributes, parent: Span | None) -> None:
        self._name, self._attributes, self._parent = name, attributes, parent
        self._handle = _NO_SPAN
        self._token: Any = None

    def __enter__(self) -> Span:
        context = None
        if self._parent is not None and self._parent._span is not None:
            context = _trace.set_span_in_context(self._parent._span)
        otel_span = _tracer.start_span(self._name, context=context,
                                       attributes=_clean(self._attributes))
        self._handle = Span(otel_span)
        self._token = _context.attach(_trace.set_span_in_context(otel_span))
        return self._handle

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        _context.detach(self._token)
        self._handle.end(error)


class _Nothing:
    """``with span(...)`` without opentelemetry: one shared object, no work."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return _NO_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NOTHING = _Nothing()


def span(name: str, attributes: LazyAttributes = None, *,
         parent: Span | None = None) -> _Opened | _Nothing:
    """A context manager running its block in a span called ``name``; it yields a
    :class:`Span` for attributes known later. ``attributes`` may be a function, called only
    when opentelemetry is installed. ``parent`` nests it under a span from :func:`start`
    (which is never current); by default it nests under the current span."""
    if _api() is None:
        return _NOTHING
    return _Opened(name, attributes, parent)


def start(name: str, attributes: LazyAttributes = None) -> Span:
    """A span that is not made current: for work that yields (a generator), whose children
    name it as ``parent``. End it with :meth:`Span.end`."""
    if _api() is None:
        return _NO_SPAN
    return Span(_tracer.start_span(name, attributes=_clean(attributes)))


def traced(name: str, *, arguments: Callable[[Mapping[str, Any]], Attributes] | None = None,
           result: Callable[[Any], Attributes] | None = None,
           ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run each call of the decorated function in a span called ``name``.

    ``arguments`` turns the call's arguments (by name, defaults filled in) into attributes,
    ``result`` the value returned; neither runs when opentelemetry is absent or the span is
    not recorded.
    """
    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        signature: list[inspect.Signature] = []

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _api() is None:
                return function(*args, **kwargs)
            with span(name) as current:
                if arguments is not None and current.recording:
                    if not signature:
                        signature.append(inspect.signature(function))
                    current.set(_safely(lambda: arguments(_bound(signature[0], args, kwargs))))
                value = function(*args, **kwargs)
                if result is not None and current.recording:
                    current.set(_safely(lambda: result(value)))
                return value

        return wrapper

    return decorate


def _bound(signature: inspect.Signature, args: Any, kwargs: Any) -> Mapping[str, Any]:
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _safely(compute: Callable[[], Attributes]) -> Attributes | None:
    """What ``compute`` returns, or None (logged) if it raises: describing a call must never
    fail it (a call the function itself refuses, with its own error, included)."""
    try:
        return compute()
    except Exception:
        log.debug("span attributes could not be computed", exc_info=True)
        return None


def _clean(attributes: LazyAttributes) -> dict[str, Any] | None:
    if callable(attributes):
        attributes = _safely(attributes)
    if not attributes:
        return None
    return {key: value for key, value in attributes.items() if value is not None}


# db.system.name: the convention's well-known value where there is one (sqlite), else the
# backend's registered name.
_SYSTEMS = {"sqlite-vec": "sqlite"}


def db_system(part: object) -> str:
    """``db.system.name`` for a graph or a vector store (or a wrapper around a store)."""
    inner = getattr(part, "_store", None)  # the store of a wrapper hiding expired chunks
    for candidate in (part, inner):
        for table in (VECTOR_STORES, GRAPHS):
            name = table.name_of(type(candidate)) if candidate is not None else None
            if name is not None:
                return _SYSTEMS.get(name, name)
    return type(part).__name__.lower()
