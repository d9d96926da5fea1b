"""What one running service holds: its context, its keys, its warm-up, its writer's turn.

No HTTP here: the application (:mod:`trails.service.app`) asks this object who a request is,
whether the models are warm, and for the context.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from trails.context import Context
from trails.errors import AuthenticationError, ReadOnlyServiceError
from trails.rank import Step
from trails.records import RetrievalHit
from trails.retrieval.retrieve import retrieve
from trails.service.keys import ApiKey, KeyRing, digest

__all__ = ["ANONYMOUS", "WARM_UP_CALLER", "ServiceState", "Warmup", "local_key"]

log = logging.getLogger("trails.service")

# Who the audit trail names for the search the service makes to warm itself up.
WARM_UP_CALLER = "trails serve (warm-up)"
# How long a service that stops waits for its warm-up (a model loading) before closing.
WARM_UP_WAIT = 120.0

# The key of every request when the service has no keys (loopback only): it may do anything.
ANONYMOUS = ApiKey("anonymous", "", None, frozenset({"read", "write"}))
# How often the writer folds the audit log into the audit graph.
FOLD_SECONDS = 30.0

T = TypeVar("T")


def local_key(secret: str) -> ApiKey:
    """The key ``service.json`` hands to local clients for this run: every scope, read and
    write, labelled with the login name so the audit trail says who."""
    try:
        login = getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        login = "unknown"
    return ApiKey(f"local:{login}", digest(secret), None, frozenset({"read", "write"}))


@dataclass
class Warmup:
    """Where the warm-up stands: ``starting`` until a query has been embedded (and reranked,
    with a reranker) and searched, then ``ready``; ``failed`` with the reason otherwise."""

    status: str = "starting"
    seconds: float | None = None
    detail: str | None = None


class ServiceState:
    """The context and keys of one service, and what it does in the background.

    Args:
        ctx: the context served (opened by the caller, who closes it).
        keys: the configured keys; None serves every request as :data:`ANONYMOUS`.
        reranker: the cross-encoder the ``rerank`` step uses, if any.
        extra_keys: keys added for this run (the ``service.json`` token).
    """

    def __init__(self, ctx: Context, keys: KeyRing | None, *, reranker: Step | None = None,
                 extra_keys: tuple[ApiKey, ...] = ()) -> None:
        self.ctx = ctx
        self.configured = keys
        ring = keys if keys is not None else KeyRing(())
        for key in extra_keys:
            ring = ring.with_key(key)
        self.keys = ring
        self.reranker = reranker
        self.warmup = Warmup()
        self.write_lock = asyncio.Lock()  # one ingest or delete at a time: one writer
        self._stop = threading.Event()
        self._warming: threading.Thread | None = None

    @property
    def read_only(self) -> bool:
        return self.ctx.read_only

    # -- who is asking -------------------------------------------------------------------------

    def authenticate(self, headers: Mapping[str, str]) -> ApiKey:
        """The key a request presents (``Authorization: Bearer`` or ``X-API-Key``).

        Raises:
            AuthenticationError: keys are configured and none, or an unknown one, was sent.
        """
        secret = _presented(headers)
        if self.configured is None:
            # No keys: anyone on loopback is anonymous, but the local token still names its
            # holder in the audit trail.
            if secret and len(self.keys):
                with contextlib.suppress(Exception):
                    return self.keys.authenticate(secret)
            return ANONYMOUS
        return self.keys.authenticate(secret)

    def require_writable(self) -> None:
        """Raises ReadOnlyServiceError when the context is served read-only."""
        if self.ctx.read_only:
            raise ReadOnlyServiceError(
                "this service serves its context read-only (trails serve --read-only): it "
                "cannot ingest or delete. Restart it without --read-only, or write with "
                "'trails ingest' while no service holds the context for writing")

    # -- the writer's turn --------------------------------------------------------------------

    async def start_write(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """Wait for the writer's turn, then run ``work`` (blocking) in a worker thread.

        The turn passes on when ``work`` itself returns, not when the request that asked
        for it stops waiting: a client that goes away cancels its request, but no thread can
        be cancelled, and the next write must not run beside it.
        """
        await self.write_lock.acquire()
        try:
            task = asyncio.ensure_future(asyncio.to_thread(work))
        except BaseException:
            self.write_lock.release()
            raise
        task.add_done_callback(self._end_turn)
        return task

    async def write(self, work: Callable[[], T]) -> T:
        """``work()`` in the writer's turn (:meth:`start_write`), awaited."""
        return await asyncio.shield(await self.start_write(work))

    def _end_turn(self, task: asyncio.Future[Any]) -> None:
        self.write_lock.release()
        if not task.cancelled() and task.exception() is not None:
            log.debug("a write failed", exc_info=task.exception())  # raised to its caller

    # -- warm-up -------------------------------------------------------------------------------

    def start_warmup(self) -> threading.Thread:
        """Load the models in a background thread: one hybrid search (and one pair reranked),
        so the first real query pays no loading."""
        thread = threading.Thread(target=self._warm, name="trails-warmup", daemon=True)
        thread.start()
        self._warming = thread
        return thread

    def wait_warmup(self, seconds: float = WARM_UP_WAIT) -> None:
        """Let a warm-up still running finish (at most ``seconds``) before the context closes:
        closed under it, its search held the graph's files until it failed, so the next
        writer of the directory found it locked though the service had ended."""
        if self._warming is not None:
            self._warming.join(seconds)
            if self._warming.is_alive():
                log.warning("the warm-up did not end within %.0f s; closing anyway", seconds)

    def _warm(self) -> None:
        started = time.perf_counter()
        try:
            # One whole hybrid search, as a request makes it: it loads the model and every
            # lazily built piece behind it (keyword segments, plans, caches), so the first
            # real query answers in the warm time. It is recorded like any other search,
            # under its own caller: the trail has no way to leave a search out.
            retrieve("warm-up query", self.ctx, mode="hybrid", k=1, caller=WARM_UP_CALLER)
            if self.reranker is not None:  # one pair scored loads the cross-encoder
                passage = RetrievalHit("urn:trails:warm-up", 1.0, "warm-up passage",
                                       {"text": "warm-up passage"})
                self.reranker("warm-up query", [passage], None)
        except Exception as exc:
            log.exception("warm-up failed")
            self.warmup = Warmup("failed", time.perf_counter() - started,
                                 f"{type(exc).__name__}: {exc}")
            return
        self.warmup = Warmup("ready", time.perf_counter() - started)
        log.info("models warm after %.2f s", self.warmup.seconds)

    # -- audit folding -------------------------------------------------------------------------

    async def fold_periodically(self, every: float = FOLD_SECONDS) -> None:
        """Fold the audit log into the audit graph every ``every`` seconds (the writer only);
        a failed fold is logged, and its records stay pending for the next."""
        while True:
            await asyncio.sleep(every)
            await asyncio.to_thread(self.fold)

    def fold(self) -> int:
        if self.ctx.read_only:
            return 0
        try:
            return self.ctx.audit.fold()
        except Exception:
            log.exception("folding the audit log failed; its records stay pending")
            return 0


def _presented(headers: Mapping[str, str]) -> str | None:
    """The one API key the request presents, in any of its headers (the same key in several
    is one key).

    Raises:
        AuthenticationError: it presents two different keys: which of them it is made by,
            and recorded under, would depend on the order of its headers.
    """
    every = getattr(headers, "getlist", lambda name: [headers.get(name, "")])
    secrets = []
    for authorization in every("authorization"):
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            secrets.append(token.strip())
    secrets += [key.strip() for key in every("x-api-key") if key.strip()]
    if len(set(secrets)) > 1:
        raise AuthenticationError(
            f"the request presents {len(set(secrets))} different API keys (Authorization: "
            "Bearer and X-API-Key headers); send the one key the request is made with")
    return secrets[0] if secrets else None

