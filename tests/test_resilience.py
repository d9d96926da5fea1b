"""The resilience policy on its own (trails/resilience.py): the circuit breaker's states under a
fake clock, the retry loop's promises (what is retried, how often, how long it waits, when it
stops), full-jitter backoff bounds, and the breaker under threads. Real faults against real
servers are in tests/test_resilience_faults.py."""

from __future__ import annotations

import threading

import pytest

httpx = pytest.importorskip("httpx")
from hypothesis import given
from hypothesis import strategies as st

from trails.errors import EndpointUnavailableError, InvalidArgumentError, TrailsError
from trails.resilience import (
    CircuitBreaker,
    Failure,
    RateLimiter,
    Resilience,
    backoff,
    breaker_for,
    rate_limiter_for,
    retry_after,
)

URL = "http://127.0.0.1:7878"


class Clock:
    """A clock that moves only when told (or when the retry loop sleeps on it)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Down(Exception):
    """What a backend's client raises when its server is down."""


def breaker(clock: Clock, threshold: int = 3, cool_down: float = 10.0) -> CircuitBreaker:
    return CircuitBreaker("the SPARQL endpoint", URL, failure_threshold=threshold,
                          cool_down=cool_down, clock=clock)


# -- the breaker's states ------------------------------------------------------------------


def test_the_circuit_opens_after_the_threshold_of_consecutive_failures():
    clock = Clock()
    circuit = breaker(clock, threshold=3)
    for _ in range(2):
        assert circuit.admit() is False
        circuit.failed()
    assert circuit.state == "closed"
    circuit.admit()
    circuit.failed()
    assert circuit.state == "open"
    with pytest.raises(EndpointUnavailableError) as raised:
        circuit.admit()
    message = str(raised.value)
    assert "the SPARQL endpoint" in message and URL in message
    assert "circuit is open" in message and "probed in 10.0 s" in message
    assert "nothing was sent" in message


def test_a_success_between_failures_keeps_the_circuit_closed():
    circuit = breaker(Clock(), threshold=3)
    for _ in range(10):
        circuit.failed()
        circuit.failed()
        circuit.succeeded()
    assert circuit.state == "closed" and circuit.failures == 0


def test_after_the_cool_down_one_probe_goes_through_and_its_success_closes_the_circuit():
    clock = Clock()
    circuit = breaker(clock, threshold=1, cool_down=10.0)
    circuit.failed()
    clock.now += 9.9
    with pytest.raises(EndpointUnavailableError, match=r"probed in 0\.1 s"):
        circuit.admit()
    clock.now += 0.1
    assert circuit.state == "half-open"
    assert circuit.admit() is True  # the probe
    with pytest.raises(EndpointUnavailableError, match="a probe is running"):
        circuit.admit()  # everyone else still fails at once
    circuit.succeeded(probe=True)
    assert circuit.state == "closed" and circuit.admit() is False


def test_a_failed_probe_opens_the_circuit_for_a_whole_new_cool_down():
    clock = Clock()
    circuit = breaker(clock, threshold=2, cool_down=10.0)
    circuit.failed()
    circuit.failed()
    clock.now += 10.0
    assert circuit.admit() is True
    clock.now += 4.0  # the probe took a while
    circuit.failed(probe=True)
    assert circuit.state == "open"
    clock.now += 9.9
    with pytest.raises(EndpointUnavailableError):
        circuit.admit()
    clock.now += 0.1
    assert circuit.admit() is True


def test_a_late_success_of_an_ordinary_call_does_not_end_a_running_probe():
    clock = Clock()
    circuit = breaker(clock, threshold=1, cool_down=1.0)
    circuit.failed()
    clock.now += 1.0
    assert circuit.admit() is True
    circuit.succeeded()  # a call admitted before the circuit opened answers late
    with pytest.raises(EndpointUnavailableError, match="a probe is running"):
        circuit.admit()
    circuit.succeeded(probe=True)
    assert circuit.state == "closed"


def test_threads_opening_the_circuit_together_let_exactly_one_probe_through():
    clock = Clock()
    circuit = breaker(clock, threshold=5, cool_down=1.0)
    start = threading.Barrier(16)

    def fail() -> None:
        start.wait()
        for _ in range(50):
            circuit.failed()

    threads = [threading.Thread(target=fail) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert circuit.failures == 16 * 50 and circuit.state == "open"
    clock.now += 1.0
    admitted: list[bool] = []
    refused: list[EndpointUnavailableError] = []
    lock = threading.Lock()
    probe_start = threading.Barrier(16)

    def try_admit() -> None:
        probe_start.wait()
        try:
            outcome = circuit.admit()
        except EndpointUnavailableError as exc:
            with lock:
                refused.append(exc)
        else:
            with lock:
                admitted.append(outcome)

    threads = [threading.Thread(target=try_admit) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert admitted == [True] and len(refused) == 15


def test_one_breaker_per_endpoint_shared_by_its_clients():
    policy = Resilience()
    query = breaker_for("the SPARQL endpoint", URL + "/query", policy)
    assert breaker_for("the SPARQL endpoint", URL + "/update", policy) is query
    assert breaker_for("the SPARQL endpoint", "http://127.0.0.1:7879/query", policy) is not query
    assert breaker_for("Qdrant", URL, policy) is not query
    assert query.url == URL


def test_an_isolated_kernel_starts_with_fresh_breakers():
    from trails.testing import isolated_kernel

    outside = breaker_for("Qdrant", URL, Resilience())
    outside.failed()
    with isolated_kernel():
        inside = breaker_for("Qdrant", URL, Resilience())
        assert inside is not outside and inside.failures == 0
    assert breaker_for("Qdrant", URL, Resilience()) is outside


def test_qdrant_failures_retry_reads_and_only_never_sent_writes():
    pytest.importorskip("qdrant_client")
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    from trails.vector.stores.qdrant.faults import failure

    refused = ResponseHandlingException(httpx.ConnectError("[Errno 111] Connection refused"))
    timed_out = ResponseHandlingException(httpx.ReadTimeout("timed out"))
    busy = UnexpectedResponse(429, "Too Many Requests", b"", httpx.Headers({"retry-after": "2"}))
    denied = UnexpectedResponse(403, "Forbidden", b"", httpx.Headers())
    assert failure(refused, "upsert") == Failure(retryable=True)
    assert failure(timed_out, "upsert") == Failure(retryable=False)
    assert failure(timed_out, "query_points") == Failure(retryable=True)
    assert failure(busy, "scroll") == Failure(retryable=True, retry_after=2.0)
    assert failure(denied, "query_points") is None  # the server answered: not an outage
    assert failure(ValueError("a request built wrong"), "count") is None


# -- the retry loop ------------------------------------------------------------------------


def failing(times: int, value: str = "answer"):
    """An operation that raises Down ``times`` times, then returns ``value``."""
    calls: list[int] = []

    def operation() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise Down(f"try {len(calls)}")
        return value

    return operation, calls


def down_is_retryable(exc: BaseException) -> Failure | None:
    return Failure() if isinstance(exc, Down) else None


def test_retryable_failures_are_retried_with_full_jitter_backoff():
    clock = Clock()
    policy = Resilience(attempts=4, initial_backoff=0.5, max_backoff=1.5)
    operation, calls = failing(3)
    circuit = breaker(clock)
    assert policy.call(operation, down_is_retryable, circuit, sleep=clock.sleep,
                       clock=clock) == "answer"
    assert len(calls) == 4 and len(clock.slept) == 3
    for attempt, waited in enumerate(clock.slept):
        assert 0.0 <= waited <= min(1.5, 0.5 * 2 ** attempt)
    assert circuit.failures == 0  # the call succeeded in the end


def test_attempts_bound_the_tries_and_the_last_error_is_raised():
    clock = Clock()
    operation, calls = failing(100)
    circuit = breaker(clock, threshold=10)
    with pytest.raises(Down, match="try 3"):
        Resilience(attempts=3).call(operation, down_is_retryable, circuit, sleep=clock.sleep,
                                    clock=clock)
    assert len(calls) == 3 and circuit.failures == 1  # one failed call, whatever its tries


def test_the_deadline_stops_retrying():
    clock = Clock()
    operation, calls = failing(100)

    def slow_operation() -> str:
        clock.now += 4.0  # each try takes 4 s to time out
        return operation()

    with pytest.raises(Down):
        Resilience(attempts=100, initial_backoff=0.0, deadline=10.0).call(
            slow_operation, down_is_retryable, breaker(clock), sleep=clock.sleep, clock=clock)
    assert len(calls) == 3  # tries start at 0, 4 and 8 s; none after 10 s


def test_an_answer_from_the_endpoint_is_not_retried_and_counts_as_healthy():
    clock = Clock()
    circuit = breaker(clock, threshold=2)
    circuit.failed()
    operation, calls = failing(100)
    with pytest.raises(Down):
        Resilience().call(operation, lambda exc: None, circuit, sleep=clock.sleep, clock=clock)
    assert len(calls) == 1 and clock.slept == [] and circuit.failures == 0


def test_a_failure_not_worth_retrying_is_raised_at_once_and_counted():
    clock = Clock()
    circuit = breaker(clock, threshold=1)
    operation, calls = failing(100)
    with pytest.raises(Down):
        Resilience().call(operation, lambda exc: Failure(retryable=False), circuit,
                          sleep=clock.sleep, clock=clock)
    assert len(calls) == 1 and circuit.state == "open"


def test_retry_after_is_waited_for_up_to_its_limit():
    clock = Clock()
    operation, calls = failing(1)
    policy = Resilience(max_retry_after=5.0)
    assert policy.call(operation, lambda exc: Failure(retry_after=3.0), breaker(clock),
                       sleep=clock.sleep, clock=clock) == "answer"
    assert clock.slept == [3.0]
    operation, calls = failing(1)
    with pytest.raises(Down):
        policy.call(operation, lambda exc: Failure(retry_after=6.0), breaker(clock),
                    sleep=clock.sleep, clock=clock)
    assert len(calls) == 1


def test_a_refused_answer_is_retried_then_returned_for_the_caller_to_report():
    clock = Clock()
    answers = iter([503, 503, 503])
    circuit = breaker(clock)
    status = Resilience(attempts=3).call(
        lambda: next(answers), down_is_retryable, circuit, sleep=clock.sleep, clock=clock,
        refused=lambda code: Failure() if code >= 500 else None)
    assert status == 503 and len(clock.slept) == 2 and circuit.failures == 1


def test_an_open_circuit_fails_the_call_before_the_operation_runs():
    clock = Clock()
    circuit = breaker(clock, threshold=1)
    circuit.failed()
    operation, calls = failing(0)
    with pytest.raises(EndpointUnavailableError, match="circuit is open"):
        Resilience().call(operation, down_is_retryable, circuit, sleep=clock.sleep, clock=clock)
    assert calls == []


def test_a_probe_is_one_try_and_its_failure_reopens_the_circuit():
    clock = Clock()
    circuit = breaker(clock, threshold=1, cool_down=5.0)
    circuit.failed()
    clock.now += 5.0
    operation, calls = failing(100)
    with pytest.raises(Down):
        Resilience(attempts=5).call(operation, down_is_retryable, circuit, sleep=clock.sleep,
                                    clock=clock)
    assert len(calls) == 1 and circuit.state == "open"
    clock.now += 5.0
    operation, calls = failing(0)
    assert Resilience().call(operation, down_is_retryable, circuit, sleep=clock.sleep,
                             clock=clock) == "answer"
    assert calls == [1] and circuit.state == "closed"


def test_retries_stop_when_other_callers_open_the_circuit_meanwhile():
    clock = Clock()
    circuit = breaker(clock, threshold=1)
    operation, calls = failing(100)

    def sleep(seconds: float) -> None:
        circuit.failed()  # another thread's call failed while this one waited
        clock.sleep(seconds)

    with pytest.raises(EndpointUnavailableError, match="circuit is open"):
        Resilience(attempts=5).call(operation, down_is_retryable, circuit, sleep=sleep,
                                    clock=clock)
    assert len(calls) == 1


# -- backoff, Retry-After and settings -----------------------------------------------------


@given(attempt=st.integers(0, 200), initial=st.floats(0, 10), cap=st.floats(0, 100),
       draw=st.floats(0, 1))
def test_full_jitter_backoff_stays_within_its_exponential_envelope(attempt, initial, cap, draw):
    waited = backoff(attempt, initial, cap, draw=lambda: draw)
    assert 0.0 <= waited <= min(cap, initial * 2.0 ** min(attempt, 60)) + 1e-9


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert retry_after({"retry-after": "2.5"}) == 2.5
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"},
                       clock=lambda: 1445412480.0) == pytest.approx(10.0)
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


@pytest.mark.parametrize("settings", [{"attempts": 0}, {"attempts": 1.5},
                                      {"failure_threshold": 0}, {"cool_down": -1},
                                      {"deadline": float("nan")}, {"max_backoff": float("inf")}])
def test_settings_out_of_range_are_refused_by_name(settings):
    (name,) = settings
    with pytest.raises(InvalidArgumentError, match=name):
        Resilience.from_settings(settings)


def test_settings_override_the_defaults_and_unknown_names_are_refused():
    policy = Resilience.from_settings({"attempts": 5, "cool_down": 2.0})
    assert policy.attempts == 5 and policy.cool_down == 2.0
    assert policy.deadline == Resilience().deadline
    assert policy.settings() == {"attempts": 5, "cool_down": 2.0}
    with pytest.raises(InvalidArgumentError, match="retries") as raised:
        Resilience.from_settings({"retries": 3})
    assert isinstance(raised.value, TrailsError) and "attempts" in str(raised.value)


def test_an_interrupted_probe_lets_the_next_call_probe():
    clock = Clock()
    circuit = breaker(clock, threshold=1, cool_down=1.0)
    circuit.failed()
    clock.now += 1.0

    def interrupted() -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Resilience().call(interrupted, down_is_retryable, circuit, sleep=clock.sleep, clock=clock)
    operation, calls = failing(0)
    assert Resilience().call(operation, down_is_retryable, circuit, sleep=clock.sleep,
                             clock=clock) == "answer"
    assert calls == [1] and circuit.state == "closed"


# -- a configurable backoff and a requests-per-second throttle -------------------------------


def test_the_backoff_multiplier_and_jitter_are_settings():
    clock = Clock()
    policy = Resilience(attempts=4, initial_backoff=0.5, max_backoff=100.0, multiplier=3.0,
                        jitter=0.0)
    operation, _ = failing(3)
    policy.call(operation, down_is_retryable, breaker(clock), sleep=clock.sleep, clock=clock)
    assert clock.slept == [0.5, 1.5, 4.5]  # no jitter: exactly initial * multiplier**n
    capped = Resilience(attempts=4, initial_backoff=0.5, max_backoff=1.0, multiplier=3.0,
                        jitter=0.0)
    clock = Clock()
    operation, _ = failing(3)
    capped.call(operation, down_is_retryable, breaker(clock), sleep=clock.sleep, clock=clock)
    assert clock.slept == [0.5, 1.0, 1.0]
    assert Resilience.from_settings({"multiplier": 1.5, "jitter": 0.25}).settings() == {
        "multiplier": 1.5, "jitter": 0.25}


@given(attempt=st.integers(0, 200), initial=st.floats(0, 10), cap=st.floats(0, 100),
       multiplier=st.floats(1, 10), jitter=st.floats(0, 1), draw=st.floats(0, 1))
def test_jittered_backoff_stays_between_its_floor_and_its_ceiling(attempt, initial, cap,
                                                                    multiplier, jitter, draw):
    ceiling = min(cap, initial * multiplier ** min(attempt, 60))
    waited = backoff(attempt, initial, cap, draw=lambda: draw, multiplier=multiplier,
                     jitter=jitter)
    assert ceiling * (1 - jitter) - 1e-9 <= waited <= ceiling + 1e-9


@pytest.mark.parametrize("settings", [{"multiplier": 0.5}, {"multiplier": float("inf")},
                                      {"jitter": -0.1}, {"jitter": 1.5}, {"max_rps": 0},
                                      {"max_rps": -2}, {"max_rps": float("nan")},
                                      {"max_rps": "10"}])
def test_backoff_and_throttle_settings_out_of_range_are_refused_by_name(settings):
    (name,) = settings
    with pytest.raises(InvalidArgumentError, match=name):
        Resilience.from_settings(settings)


def test_max_rps_spaces_the_calls_to_one_endpoint():
    clock = Clock()
    policy = Resilience(max_rps=4.0)
    circuit = breaker(clock)
    for _ in range(5):
        policy.call(lambda: "ok", down_is_retryable, circuit, sleep=clock.sleep, clock=clock)
    assert clock.now - 1000.0 == pytest.approx(1.0)  # 5 calls at 4 per second: 4 gaps of 1/4 s
    unthrottled = Clock()
    for _ in range(5):
        Resilience().call(lambda: "ok", down_is_retryable, breaker(unthrottled),
                          sleep=unthrottled.sleep, clock=unthrottled)
    assert unthrottled.slept == []


def test_every_retry_is_throttled_too():
    clock = Clock()
    policy = Resilience(attempts=3, initial_backoff=0.0, max_rps=2.0)
    operation, calls = failing(2)
    policy.call(operation, down_is_retryable, breaker(clock), sleep=clock.sleep, clock=clock)
    assert len(calls) == 3 and clock.now - 1000.0 == pytest.approx(1.0)


def test_threads_sharing_a_throttle_never_share_a_slot():
    frozen = 50.0
    waits: list[float] = []
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            waits.append(seconds)

    bucket = RateLimiter(10.0, clock=lambda: frozen)
    barrier = threading.Barrier(8)

    def take() -> None:
        barrier.wait()
        for _ in range(5):
            bucket.acquire(sleep=sleep)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 40 calls at 10 per second on a clock that stands still: the first goes at once, each
    # other one is given a slot of its own, 1/10 s after the one before.
    assert sorted(waits) == pytest.approx([n / 10 for n in range(1, 40)])


def test_one_throttle_per_endpoint_and_rate():
    policy = Resilience(max_rps=3.0)
    first = breaker_for("the SPARQL endpoint", URL + "/query", policy)
    again = breaker_for("the SPARQL endpoint", URL + "/update", policy)
    assert rate_limiter_for(first, policy) is rate_limiter_for(again, policy)
    assert rate_limiter_for(first, Resilience()) is None


# -- the retry loop's promises, whatever runs it (tenacity since ADR 0049) -------------------


def always_down(exc: BaseException) -> Failure | None:
    return Failure()


@given(attempts=st.integers(1, 8), initial=st.floats(0, 10), cap=st.floats(0, 100),
       multiplier=st.floats(1, 10), jitter=st.floats(0, 1))
def test_each_retry_waits_between_its_floor_and_its_ceiling(attempts, initial, cap, multiplier,
                                                           jitter):
    clock = Clock()
    policy = Resilience(attempts=attempts, initial_backoff=initial, max_backoff=cap,
                        multiplier=multiplier, jitter=jitter, deadline=1e9)
    operation, calls = failing(attempts - 1)
    assert policy.call(operation, always_down, breaker(clock), sleep=clock.sleep,
                       clock=clock) == "answer"
    assert len(calls) == attempts and len(clock.slept) == attempts - 1
    for n, waited in enumerate(clock.slept):
        ceiling = min(cap, initial * multiplier ** n)
        assert ceiling * (1 - jitter) - 1e-9 <= waited <= ceiling + 1e-9


def test_full_jitter_spreads_the_waits_of_clients_that_failed_together():
    clock = Clock()
    policy = Resilience(attempts=2, initial_backoff=1.0, max_backoff=1.0)
    for _ in range(20):
        operation, _ = failing(1)
        policy.call(operation, always_down, breaker(clock), sleep=clock.sleep, clock=clock)
    assert len(clock.slept) == 20 and len(set(clock.slept)) > 10
    assert all(0.0 <= waited <= 1.0 for waited in clock.slept)


@given(attempts=st.integers(1, 12))
def test_a_call_that_keeps_failing_makes_exactly_attempts_tries(attempts):
    clock = Clock()
    operation, calls = failing(100)
    circuit = breaker(clock, threshold=100)
    with pytest.raises(Down, match=f"try {attempts}$"):
        Resilience(attempts=attempts, initial_backoff=0.01).call(
            operation, always_down, circuit, sleep=clock.sleep, clock=clock)
    assert len(calls) == attempts and len(clock.slept) == attempts - 1
    assert circuit.failures == 1


def test_a_wait_that_would_end_after_the_deadline_is_not_started():
    clock = Clock()
    operation, _ = failing(100)
    policy = Resilience(attempts=10, deadline=4.0, max_retry_after=60.0)
    with pytest.raises(Down, match="try 1$"):
        policy.call(operation, lambda exc: Failure(retry_after=6.0), breaker(clock),
                    sleep=clock.sleep, clock=clock)
    assert clock.slept == []
    operation, _ = failing(100)
    # Waits end at 2 and 4 s (a try may start at the deadline, not after); a third, at 6 s.
    with pytest.raises(Down, match="try 3$"):
        policy.call(operation, lambda exc: Failure(retry_after=2.0), breaker(clock),
                    sleep=clock.sleep, clock=clock)
    assert clock.slept == [2.0, 2.0]


@pytest.mark.parametrize("asked", [0.0, -3.0])
def test_a_retry_after_in_the_past_falls_back_to_the_backoff(asked):
    clock = Clock()
    operation, _ = failing(1)
    Resilience(initial_backoff=0.5, jitter=0.0).call(
        operation, lambda exc: Failure(retry_after=asked), breaker(clock), sleep=clock.sleep,
        clock=clock)
    assert clock.slept == [0.5]


def test_a_retry_after_at_its_limit_is_waited_for():
    clock = Clock()
    operation, _ = failing(1)
    assert Resilience(max_retry_after=4.0).call(
        operation, lambda exc: Failure(retry_after=4.0), breaker(clock), sleep=clock.sleep,
        clock=clock) == "answer"
    assert clock.slept == [4.0]


def test_an_error_while_judging_a_failure_is_raised_as_it_is_and_not_retried():
    clock = Clock()
    circuit = breaker(clock, threshold=2)
    circuit.failed()
    operation, calls = failing(100)

    def judge(exc: BaseException) -> Failure | None:
        raise InvalidArgumentError("the server refused the key")

    with pytest.raises(InvalidArgumentError, match="refused the key"):
        Resilience().call(operation, judge, circuit, sleep=clock.sleep, clock=clock)
    assert len(calls) == 1 and clock.slept == [] and circuit.failures == 0


def test_an_interrupt_while_waiting_is_raised_and_is_no_verdict_on_the_endpoint():
    clock = Clock()
    circuit = breaker(clock, threshold=1)
    operation, calls = failing(100)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Resilience().call(operation, always_down, circuit, sleep=interrupted, clock=clock)
    assert len(calls) == 1 and circuit.failures == 0 and circuit.state == "closed"


def test_a_refused_answer_not_worth_retrying_is_returned_at_once_and_counted():
    clock = Clock()
    circuit = breaker(clock, threshold=1)
    answers = iter([400, 200])
    assert Resilience().call(lambda: next(answers), always_down, circuit, sleep=clock.sleep,
                             clock=clock, refused=lambda code: Failure(retryable=False)) == 400
    assert clock.slept == [] and circuit.state == "open"
