"""What each remote endpoint shares in a process: its circuit breaker and its throttle
(:mod:`trails.resilience` runs every call through them; docs/resilience.md, ADR 0020).

Both are small and thread-safe, with a replaceable clock, and kept here rather than taken from
a library (ADR 0049): the breaker's verdicts come from the retry loop (a call fails once its
retries are spent; a server's answer, even a refusal, is a success), its half-open state lets
exactly one probe through, and its error names the endpoint and when it will be probed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

from trails.errors import EndpointUnavailableError

__all__ = ["CircuitBreaker", "RateLimiter"]

State = Literal["closed", "open", "half-open"]


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
