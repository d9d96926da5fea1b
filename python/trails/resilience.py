"""One policy for every remote backend: retries with backoff and full jitter, and a circuit
breaker per endpoint (docs/resilience.md, ADR 0020).

A remote call runs through :meth:`Resilience.call`:

- **Retries** (run by tenacity, ADR 0049). A failure worth another try (connection refused or
  reset, a timeout, HTTP 5xx, 429) is retried up to ``attempts`` times in all, waiting between
  tries a random delay up to ``min(max_backoff, initial_backoff * multiplier**n)``, no less than
  ``1 - jitter`` of it (``jitter=1``, the default, is "full jitter", so clients that failed
  together do not come back together), or what the server asked for
  (``Retry-After``, at most ``max_retry_after``). No new try starts once ``deadline`` seconds
  have passed, so with each try bounded by the backend's ``timeout`` a call ends within
  ``deadline + timeout`` seconds, never hangs. What is worth retrying is the backend's to say
  (a ``classify`` function): an update the server may have received is not retried.
- **Circuit breaker** (:mod:`trails.circuit`). Each endpoint (backend and
  ``scheme://host:port``) has one :class:`CircuitBreaker`, shared by every client of it in
  the process: after ``failure_threshold`` consecutive failed calls (a call fails once its
  retries are spent) it *opens*, and every call fails at once with :class:`~trails.errors.EndpointUnavailableError`
  naming the backend, the URL and when it will be probed; after ``cool_down`` seconds one call
  goes through as a probe (*half-open*): its success closes the circuit, its failure opens it
  for another ``cool_down``.
- **Throttle.** With ``max_rps``, every try to an endpoint takes a slot of a token bucket shared
  by the endpoint's clients in the process (:class:`RateLimiter`): at most ``max_rps`` tries a
  second, each waiting for its own slot.

Nothing here imports a client library: backends translate their own failures.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import random
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, TypeVar

from trails import _state
from trails.circuit import CircuitBreaker, RateLimiter
from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError

if TYPE_CHECKING:  # tenacity itself loads with the first remote call (Resilience.call)
    from tenacity import Future, RetryCallState

__all__ = [
    "CircuitBreaker", "Failure", "RateLimiter", "Resilience", "backoff", "breaker_for",
    "breakers", "public_url", "rate_limiter_for", "retry_after"]

T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    """How a backend judges one failed try: whether it is worth another one, and how long the
    server asked to wait (``Retry-After``), if it did."""

    retryable: bool = True
    retry_after: float | None = None


@dataclass(frozen=True)
class Resilience:
    """Retry and circuit-breaker settings for one backend (the defaults suit a server on the
    same network; pass another to a backend's ``resilience=`` to change them).

    Args:
        attempts: tries in all for one call (1: no retry).
        initial_backoff, max_backoff, multiplier: the backoff ceiling of retry ``n`` is
            ``min(max_backoff, initial_backoff * multiplier**n)`` seconds.
        jitter: the random share of a backoff, from 0 (wait the ceiling) to 1 (anything from 0
            to the ceiling: "full jitter").
        deadline: no try starts after this many seconds since the call began.
        max_retry_after: a server asking to wait longer than this is not waited for.
        failure_threshold: consecutive failed calls that open the circuit.
        cool_down: seconds the circuit stays open before one probe call goes through.
        max_rps: at most this many tries a second to the endpoint (None: no throttle).
        require_tls: refuse a plain ``http://`` URL to a host other than this machine (a
            loopback address or ``localhost``): queries, documents and keys would cross the
            network in clear. False allows it (a private network you trust).

    Raises:
        InvalidArgumentError: a setting out of range.
    """

    attempts: int = 3
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    deadline: float = 30.0
    max_retry_after: float = 60.0
    failure_threshold: int = 5
    cool_down: float = 30.0
    multiplier: float = 2.0
    jitter: float = 1.0
    max_rps: float | None = None
    require_tls: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise InvalidArgumentError(f"attempts must be an integer of at least 1, got "
                                       f"{self.attempts!r}")
        if not isinstance(self.failure_threshold, int) or self.failure_threshold < 1:
            raise InvalidArgumentError(f"failure_threshold must be an integer of at least 1, "
                                       f"got {self.failure_threshold!r}")
        for name in ("initial_backoff", "max_backoff", "deadline", "max_retry_after",
                     "cool_down"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
                raise InvalidArgumentError(f"{name} must be a finite number of seconds >= 0, "
                                           f"got {value!r}")
        _check_number("multiplier", self.multiplier, 1.0, math.inf, "from 1 up")
        _check_number("jitter", self.jitter, 0.0, 1.0, "from 0 to 1")
        if not isinstance(self.require_tls, bool):
            raise InvalidArgumentError(f"require_tls must be true or false, got "
                                       f"{self.require_tls!r}")
        if self.max_rps is not None:
            _check_number("max_rps", self.max_rps, 0.0, math.inf, "above 0 (None: no throttle)")
            if self.max_rps == 0:
                raise InvalidArgumentError("max_rps must be above 0 requests a second (None: "
                                           "no throttle), got 0")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | Resilience | None) -> Resilience:
        """The defaults with ``settings`` (a mapping of the field names, as ``trails.json``
        holds them under ``"resilience"``) applied; a ``Resilience`` is returned as it is.

        Raises:
            InvalidArgumentError: an unknown name or a value out of range.
        """
        if isinstance(settings, Resilience):
            return settings
        if settings is not None and not isinstance(settings, Mapping):
            raise InvalidArgumentTypeError(
                f"resilience settings must be a mapping of names to values, got {settings!r}")
        unknown = sorted(set(settings or {}) - set(cls.__dataclass_fields__))
        if unknown:
            raise InvalidArgumentError(
                f"unknown resilience settings {unknown}; known: {sorted(cls.__dataclass_fields__)}")
        return replace(cls(), **dict(settings or {}))

    def check_url(self, what: str, *urls: str | None) -> None:
        """Refuse each of ``urls`` (``what`` it reaches) that is plain ``http://`` to a host
        other than this machine, when :attr:`require_tls` is on.

        Raises:
            ConfigurationError: naming the URL and the two ways on (https, or allowing it).
        """
        for url in urls:
            parts = urllib.parse.urlsplit(url or "")
            if parts.scheme.lower() == "http":
                self.check_clear(what, str(url), [parts.hostname or ""])

    def check_clear(self, what: str, where: str, hosts: Iterable[str], *,
                    reason: str = "is plain http:// to another machine",
                    fix: str = "Use https://") -> None:
        """Refuse a connection that may run in clear (``reason``) to ``where`` (``what`` it
        reaches) when one of ``hosts`` is another machine and :attr:`require_tls` is on.

        Raises:
            ConfigurationError: naming ``where``, ``fix`` and how to allow it.
        """
        if self.require_tls and not all(_is_this_machine(host) for host in hosts):
            raise ConfigurationError(
                f"{what} {where!r} {reason}: queries, documents and keys would cross the "
                f"network in clear. {fix}, or allow it for a network you trust with "
                "resilience={'require_tls': False} (trails.json: \"resilience\": "
                "{\"require_tls\": false})")

    def settings(self, default: Resilience | None = None) -> dict[str, Any]:
        """The fields that differ from ``default`` (the defaults when None): what
        ``trails.json`` records."""
        default = default or Resilience()
        return {name: getattr(self, name) for name in self.__dataclass_fields__
                if getattr(self, name) != getattr(default, name)}

    def call(
        self,
        operation: Callable[[], T],
        classify: Callable[[BaseException], Failure | None],
        breaker: CircuitBreaker,
        *,
        refused: Callable[[T], Failure | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> T:
        """Run ``operation`` under this policy and ``breaker``.

        ``classify`` judges an exception the operation raised: ``None`` when the endpoint
        answered (a bad request: re-raised at once, the endpoint counts as healthy), else a
        :class:`Failure`. ``refused`` judges a returned value the same way (an HTTP 503
        response, say); when retries run out, that last value is returned for the caller to
        report. Otherwise, the last exception is re-raised.

        Raises:
            EndpointUnavailableError: the circuit is open (nothing was sent).
            Exception: what ``operation`` raised last, once retries are spent.
        """
        import tenacity  # slow to import (asyncio): loaded by the first remote call only

        run = _Call(self, breaker, classify, refused, clock)
        throttle = rate_limiter_for(breaker, self)

        def attempt() -> T:
            if throttle is not None:
                throttle.acquire(sleep=sleep, clock=clock)
            return operation()

        tries = tenacity.stop_after_attempt(self.attempts)
        retrying = tenacity.Retrying(
            before=run.admit, retry=run.worth_another_try, wait=run.wait,
            stop=lambda state: tries(state) or run.out_of_time(state), sleep=sleep,
            retry_error_callback=run.give_up)
        try:
            return retrying(attempt)
        except BaseException as exc:
            if run.probing and not isinstance(exc, Exception):
                breaker.release()  # an interrupted probe must not leave the circuit waiting
            raise


class _Call:
    """One call's judgements, as tenacity's callbacks: whether a try's outcome is worth
    another try (each outcome judged once; the breaker told once, when the call ends), how long
    to wait, and when to stop."""

    def __init__(self, policy: Resilience, breaker: CircuitBreaker,
                 classify: Callable[[BaseException], Failure | None],
                 refused: Callable[[Any], Failure | None] | None,
                 clock: Callable[[], float]) -> None:
        self.policy, self.breaker, self.clock = policy, breaker, clock
        self.classify, self.refused = classify, refused
        self.started = clock()
        self.probing = False
        self.failure = Failure()
        self.backoff = _backoff_wait(policy)

    def admit(self, state: RetryCallState) -> None:
        """Before each try: an open circuit fails the call (other callers' failures may have
        opened it during a wait), and a half-open one makes this try its probe."""
        self.probing = self.breaker.admit()

    def worth_another_try(self, state: RetryCallState) -> bool:
        outcome = _outcome(state)
        if outcome.failed:
            exc = outcome.exception()
            if not isinstance(exc, Exception):
                return False  # an interrupt is no verdict on the endpoint
            try:
                failure = self.classify(exc)
            except Exception:
                self._settle(failed=False)  # the endpoint answered; the caller's error
                raise
        else:
            failure = self.refused(outcome.result()) if self.refused is not None else None
        if failure is None:
            self._settle(failed=False)
            return False
        asked = failure.retry_after
        if not failure.retryable or (asked is not None and asked > self.policy.max_retry_after):
            self._settle(failed=True)
            return False
        self.failure = failure
        return True

    def wait(self, state: RetryCallState) -> float:
        asked = self.failure.retry_after
        return asked if asked is not None and asked > 0 else self.backoff(state)

    def out_of_time(self, state: RetryCallState) -> bool:
        """A probe is one try; no try starts after the deadline."""
        return self.probing or (self.clock() - self.started + state.upcoming_sleep
                                > self.policy.deadline)

    def give_up(self, state: RetryCallState) -> Any:
        """Retries are spent: the call failed; its last error is raised (or its last refused
        value returned)."""
        self._settle(failed=True)
        return _outcome(state).result()

    def _settle(self, *, failed: bool) -> None:
        if failed:
            self.breaker.failed(self.probing)
        else:
            self.breaker.succeeded(self.probing)
        self.probing = False


@functools.lru_cache(maxsize=256)
def _backoff_wait(policy: Resilience) -> Callable[[RetryCallState], float]:
    """``policy``'s wait before retry ``n`` (tenacity's ``attempt_number`` is ``n + 1``) when
    the server does not say: uniform in ``[(1 - jitter) * c, c]``, ``c`` being
    ``min(max_backoff, initial_backoff * multiplier**n)``, as the sum of tenacity's fixed
    exponential wait (the floor) and its full-jitter one (the random share). Made once per
    policy: it holds no state."""
    import tenacity

    share = policy.jitter
    fixed = tenacity.wait_exponential(multiplier=policy.initial_backoff * (1 - share),
                                      max=policy.max_backoff * (1 - share),
                                      exp_base=policy.multiplier)
    drawn = tenacity.wait_random_exponential(multiplier=policy.initial_backoff * share,
                                             max=policy.max_backoff * share,
                                             exp_base=policy.multiplier)
    return fixed + drawn


def _outcome(state: RetryCallState) -> Future:
    """The outcome of the try tenacity asks about (it asks only once a try has ended)."""
    assert state.outcome is not None
    return state.outcome


def _check_number(name: str, value: object, low: float, high: float, meaning: str) -> None:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not low <= value <= high or math.isinf(value)):
        raise InvalidArgumentError(f"{name} must be a finite number {meaning}, got {value!r}")


def backoff(attempt: int, initial: float, cap: float,
            draw: Callable[[], float] = random.random, *, multiplier: float = 2.0,
            jitter: float = 1.0) -> float:
    """Jittered exponential backoff: uniform in ``[(1 - jitter) * c, c]`` where ``c`` is
    ``min(cap, initial * multiplier**attempt)`` (``jitter=1``: full jitter, from 0): one draw
    (from ``draw``) of what a policy's retry ``attempt`` waits when the server does not say,
    for a caller that waits on its own.

    >>> backoff(3, 0.5, 2.0, draw=lambda: 1.0)
    2.0
    >>> backoff(2, 1.0, 60.0, multiplier=3.0, jitter=0.0)
    9.0
    """
    ceiling = min(cap, initial * multiplier ** min(attempt, 60))
    return ceiling * (1.0 - jitter + jitter * draw())


def retry_after(headers: Any, clock: Callable[[], float] = time.time) -> float | None:
    """Seconds a server asked to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or
    an HTTP date); None when it did not say (or said nothing readable).

    >>> retry_after({"retry-after": "2"})
    2.0
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            try:
                return parsedate_to_datetime(value).timestamp() - clock()
            except (TypeError, ValueError):
                continue
        return None if math.isnan(seconds) else seconds  # inf: longer than any limit
    return None


def public_url(url: str) -> str:
    """``url`` without its ``user:password@``: what a message, a ``repr``, ``GET /health`` or
    ``trails.json`` may show of an endpoint (the credentials still reach the endpoint).

    >>> public_url("https://ann:s3cret@embed.example.org/v1")
    'https://embed.example.org/v1'
    """
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def breaker_for(backend: str, url: str, policy: Resilience) -> CircuitBreaker:
    """The process's breaker for ``backend`` at ``url``'s ``scheme://host:port`` (one per
    endpoint and settings, shared by every client of it). The breaker's URL holds no
    ``user:password@``: it is shown where the credentials must not be (``GET /health``
    answers anyone, an open circuit's error any caller)."""
    parts = urllib.parse.urlsplit(public_url(url))
    origin = f"{parts.scheme}://{parts.netloc}" if parts.netloc else url
    key = ("circuit-breaker", backend, origin, policy.failure_threshold, policy.cool_down)
    return _state.cached(key, lambda: CircuitBreaker(
        backend, origin, failure_threshold=policy.failure_threshold,
        cool_down=policy.cool_down))


def rate_limiter_for(breaker: CircuitBreaker, policy: Resilience) -> RateLimiter | None:
    """The process's throttle for the endpoint of ``breaker`` at ``policy.max_rps`` (shared
    by every client of the endpoint), or None without ``max_rps``."""
    if policy.max_rps is None:
        return None
    rate = float(policy.max_rps)
    key = ("rate-limit", breaker.backend, breaker.url, rate)
    return _state.cached(key, lambda: RateLimiter(rate))


def breakers() -> list[CircuitBreaker]:
    """Every endpoint's breaker this process has made (for health reports), oldest first."""
    return [value for key, value in list(_state.model_cache.items())
            if isinstance(key, tuple) and key[:1] == ("circuit-breaker",)
            and isinstance(value, CircuitBreaker)]


def _is_this_machine(host: str) -> bool:
    """``localhost`` (and its subdomains) or a loopback address: traffic that never leaves."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

