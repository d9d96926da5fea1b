"""One policy for every remote backend: retries with backoff and full jitter, and a circuit
breaker per endpoint (docs/resilience.md, ADR 0020).

A remote call runs through :meth:`Resilience.call`:

- **Retries.** A failure worth another try (connection refused or reset, a timeout, HTTP 5xx,
  429) is retried up to ``attempts`` times in all, waiting ``backoff(n)`` between tries: a
  random delay up to ``min(max_backoff, initial_backoff * multiplier**n)``, no less than
  ``1 - jitter`` of it (``jitter=1``, the default, is "full jitter", so clients that failed
  together do not come back together), or what the server asked for
  (``Retry-After``, at most ``max_retry_after``). No new try starts once ``deadline`` seconds
  have passed, so with each try bounded by the backend's ``timeout`` a call ends within
  ``deadline + timeout`` seconds, never hangs. What is worth retrying is the backend's to say
  (a ``classify`` function): an update the server may have received is not retried.
- **Circuit breaker.** Each endpoint (backend and ``scheme://host:port``) has one
  :class:`CircuitBreaker`, shared by every client of it in the process: after
  ``failure_threshold`` consecutive failed calls (a call fails once its retries are spent) it
  *opens*, and every call fails at once with :class:`~trails.errors.EndpointUnavailableError`
  naming the backend, the URL and when it will be probed; after ``cool_down`` seconds one call
  goes through as a probe (*half-open*): its success closes the circuit, its failure opens it
  for another ``cool_down``.

- **Throttle.** With ``max_rps``, every try to an endpoint takes a slot of a token bucket shared
  by the endpoint's clients in the process (:class:`RateLimiter`): at most ``max_rps`` tries a
  second, each waiting for its own slot.

Nothing here imports a client library: backends translate their own failures.
"""

from __future__ import annotations

import ipaddress
import math
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

from trails import _state
from trails.errors import ConfigurationError, EndpointUnavailableError, InvalidArgumentError

__all__ = [
    "CircuitBreaker", "Failure", "RateLimiter", "Resilience", "backoff", "breaker_for",
    "breakers", "rate_limiter_for", "retry_after"]

T = TypeVar("T")
State = Literal["closed", "open", "half-open"]


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
        started = clock()
        probing = breaker.admit()
        throttle = rate_limiter_for(breaker, self)
        attempt = 0
        try:
            while True:
                outcome: Failure | None
                try:
                    if throttle is not None:
                        throttle.acquire(sleep=sleep, clock=clock)
                    value = operation()
                except Exception as exc:  # an interrupt is no verdict on the endpoint
                    try:
                        outcome = classify(exc)
                    except Exception:
                        breaker.succeeded(probing)  # the endpoint answered; the caller's error
                        raise
                    if outcome is None:
                        breaker.succeeded(probing)
                        raise
                    last: tuple[Exception | None, Any] = (exc, None)
                else:
                    outcome = refused(value) if refused is not None else None
                    if outcome is None:
                        breaker.succeeded(probing)
                        return value
                    last = (None, value)
                attempt += 1
                wait = self._wait(outcome, attempt)
                if wait is None or probing or clock() - started + wait > self.deadline:
                    breaker.failed(probing)
                    if last[0] is not None:
                        raise last[0]
                    return last[1]  # type: ignore[no-any-return]
                sleep(wait)
                # Other threads' failures may have opened the circuit meanwhile (this call
                # then fails at once), or its cool-down may be over (this try is its probe).
                probing = breaker.admit()
        except Exception:
            raise
        except BaseException:
            if probing:  # an interrupted probe must not leave the circuit waiting for it
                breaker.release()
            raise

    def _wait(self, outcome: Failure, attempt: int) -> float | None:
        """Seconds before the next try, or None when there is none."""
        if not outcome.retryable or attempt >= self.attempts:
            return None
        asked = outcome.retry_after
        if asked is not None and asked > 0:
            return asked if asked <= self.max_retry_after else None
        return backoff(attempt - 1, self.initial_backoff, self.max_backoff,
                       multiplier=self.multiplier, jitter=self.jitter)


def _check_number(name: str, value: object, low: float, high: float, meaning: str) -> None:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not low <= value <= high or math.isinf(value)):
        raise InvalidArgumentError(f"{name} must be a finite number {meaning}, got {value!r}")


def backoff(attempt: int, initial: float, cap: float,
            draw: Callable[[], float] = random.random, *, multiplier: float = 2.0,
            jitter: float = 1.0) -> float:
    """Jittered exponential backoff: uniform in ``[(1 - jitter) * c, c]`` where ``c`` is
    ``min(cap, initial * multiplier**attempt)`` (``jitter=1``: full jitter, from 0).

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


class CircuitBreaker:
    """The state of one endpoint: closed, open (calls fail at once) or half-open (one probe).

    Thread-safe. ``clock`` (``time.monotonic``) is replaceable in tests.
    """

    def __init__(self, backend: str, url: str, *, failure_threshold: int = 5,
                 cool_down: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.backend = backend
        self.url = url
        self.failure_threshold = failure_threshold
        self.cool_down = cool_down
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> State:
        """``closed``, ``open`` or ``half-open`` (the cool-down is over, or a probe runs)."""
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if self._probing or self._clock() - self._opened_at >= self.cool_down:
                return "half-open"
            return "open"

    @property
    def failures(self) -> int:
        """Consecutive failed calls so far."""
        return self._failures

    def admit(self) -> bool:
        """Let a call through: False for an ordinary call, True for the one probe of a
        half-open circuit.

        Raises:
            EndpointUnavailableError: the circuit is open, or a probe is already running.
        """
        with self._lock:
            if self._opened_at is None:
                return False
            now = self._clock()
            due = self._opened_at + self.cool_down
            if now >= due and not self._probing:
                self._probing = True
                return True
            when = ("a probe is running now" if self._probing
                    else f"it will be probed in {due - now:.1f} s")
            raise EndpointUnavailableError(
                f"{self.backend} at {self.url} is unavailable: its circuit is open after "
                f"{self._failures} consecutive failed calls, so nothing was sent; {when}. "
                "Check that the server is running and reachable; calls resume once a probe "
                "succeeds")

    def succeeded(self, probe: bool = False) -> None:
        """A call got an answer: the circuit closes."""
        with self._lock:
            if probe or not self._probing:
                self._failures, self._opened_at, self._probing = 0, None, False

    def release(self) -> None:
        """The probe ended without a verdict (interrupted): the next call may probe."""
        with self._lock:
            self._probing = False

    def failed(self, probe: bool = False) -> None:
        """A call failed: count it, and open the circuit at the threshold (a failed probe
        opens it again for a whole cool-down)."""
        with self._lock:
            self._failures += 1
            if probe:
                self._probing = False
                self._opened_at = self._clock()
            elif self._opened_at is None and self._failures >= self.failure_threshold:
                self._opened_at = self._clock()

    def __repr__(self) -> str:
        return f"<CircuitBreaker {self.backend} {self.url} {self.state}>"


def breaker_for(backend: str, url: str, policy: Resilience) -> CircuitBreaker:
    """The process's breaker for ``backend`` at ``url``'s ``scheme://host:port`` (one per
    endpoint and settings, shared by every client of it)."""
    parts = urllib.parse.urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}" if parts.netloc else url
    key = ("circuit-breaker", backend, origin, policy.failure_threshold, policy.cool_down)
    return _state.cached(key, lambda: CircuitBreaker(
        backend, origin, failure_threshold=policy.failure_threshold,
        cool_down=policy.cool_down))


class RateLimiter:
    """A token bucket of one token refilled ``rate`` times a second: each :meth:`acquire`
    takes the next free slot, ``1 / rate`` seconds after the one before, and sleeps until it.

    Thread-safe: a slot is reserved under the lock and slept for outside it, so no two callers
    share a slot and none holds the others up beyond its own wait.
    """

    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._lock = threading.Lock()
        self._next: float | None = None  # when the next slot is free

    def acquire(self, *, sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] | None = None) -> None:
        """Wait for a slot of one's own (``clock``: the caller's, when it has one)."""
        now = (clock or self._clock)()
        with self._lock:
            slot = now if self._next is None else max(now, self._next)
            self._next = slot + 1.0 / self.rate
        if slot > now:
            sleep(slot - now)


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

