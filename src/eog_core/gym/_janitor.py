"""Databases whose deletion failed, kept and retried until they are gone or reported.

A :class:`Janitor` never forgets a database it adopted: it retries deletion
with exponential backoff and jitter, and :meth:`Janitor.leaked` says what is
still on a gym. A database whose seed may still be loading on the gym (the
client gave up on it, a proxy answered 504, the connection dropped) is
watched: deletion answering 404 means "not there yet" until ``landing_window``
has passed, not "gone". Sessions registered with it are closed when idle for longer
than ``ttl`` (time from the last activity, not from creation), so a harness
that drops a session without closing it does not leak its databases.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs

from eog_core._backoff import backoff_delay
from eog_core._redact import redact_url, redacted_url_repr
from eog_core.errors import GymError, GymHTTPError
from eog_core.gym._client import GymClient
from eog_core.gym._records import DEFAULT_TIMEOUTS, Timeouts
from eog_core.gym._seed_fate import seed_fate
from eog_core.gym._transport import Transport
from eog_core.tasks import AuthConfig

__all__ = ["Janitor", "LeakedDatabase", "default_janitor"]

log = logging.getLogger("eog_core.janitor")


@attrs.define(kw_only=True)
class LeakedDatabase:
    """A database the janitor still has to delete, and how that has gone so far."""

    gym: str
    url: str = attrs.field(repr=redacted_url_repr)
    database_id: str
    attempts: int = 0
    last_error: str = ""
    next_attempt: float = 0.0
    auth: AuthConfig | None = None
    """The gym's credentials (redacted in reprs): a retry authenticates like the session did."""
    after: asyncio.Future[Any] | None = attrs.field(default=None, repr=False)
    """A seed still in flight: deletion waits until it has landed."""
    watch_until: float | None = None
    """The seed may still land: until then a 404 on deletion means "not there yet"."""

    def to_dict(self) -> dict[str, Any]:
        """The leak as plain data (no credentials, no future): log it, store it, send it."""
        return {
            "gym": self.gym,
            "url": redact_url(self.url),
            "database_id": self.database_id,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "seed_in_flight": self.after is not None and not self.after.done(),
        }


class _Closeable(Protocol):
    @property
    def last_activity(self) -> float: ...

    @property
    def closed(self) -> bool: ...

    @property
    def busy(self) -> bool: ...

    async def aclose(self) -> None: ...


@attrs.define
class Janitor:
    """Retries the deletion of leaked databases and reaps idle sessions.

    A background loop starts by itself when a database is adopted or a session
    registered (inside a running event loop) and stops when nothing is left to
    do; :meth:`sweep` does one pass by hand. :meth:`aclose` (or leaving
    ``async with``) makes a last attempt and returns what is still leaked, also
    logged as a warning.
    """

    ttl: float = attrs.field(default=3600.0, kw_only=True)
    base_delay: float = attrs.field(default=0.5, kw_only=True)
    max_delay: float = attrs.field(default=60.0, kw_only=True)
    landing_window: float = attrs.field(default=600.0, kw_only=True)
    interval: float = attrs.field(default=1.0, kw_only=True)
    transport: Transport | None = attrs.field(default=None, kw_only=True)
    timeouts: Timeouts | None = attrs.field(default=None, kw_only=True)
    """Limits of each cleanup request (the caller's, e.g. ``eog-core run --timeout``); None:
    the client's defaults."""
    clock: Callable[[], float] = attrs.field(default=time.monotonic, kw_only=True, repr=False)
    _pending: dict[tuple[str, str], LeakedDatabase] = attrs.field(factory=dict, init=False)
    _sessions: dict[int, _Closeable] = attrs.field(factory=dict, init=False, repr=False)
    """Watched sessions by identity (registering and forgetting one is O(1))."""
    _loop_task: asyncio.Task[None] | None = attrs.field(default=None, init=False, repr=False)
    _wake: asyncio.Event | None = attrs.field(default=None, init=False, repr=False)
    _closing: bool = attrs.field(default=False, init=False, repr=False)

    def adopt(
        self,
        *,
        gym: str,
        url: str,
        database_id: str,
        error: str = "",
        auth: AuthConfig | None = None,
        after: asyncio.Future[Any] | None = None,
        may_still_land: bool = False,
    ) -> None:
        """Take over a database whose deletion failed; it is retried from now on.

        ``auth`` is the gym's credentials; ``after`` a seed request still in
        flight, which must end before the database can be deleted (if it
        failed in a way that may have reached the gym, the database is
        watched); ``may_still_land`` says its seed may still be loading on the
        gym, so a 404 is not taken as gone until ``landing_window`` passed.
        """
        key = (url, database_id)
        if key not in self._pending:
            self._pending[key] = LeakedDatabase(
                gym=gym,
                url=url,
                database_id=database_id,
                last_error=error,
                next_attempt=self.clock(),
                auth=auth,
                after=after,
                watch_until=self.clock() + self.landing_window if may_still_land else None,
            )
            log.warning(
                "janitor: adopted database %s on %s (%s): %s",
                database_id,
                gym,
                redact_url(url),
                error,
            )
        self._ensure_running()

    def register(self, session: _Closeable) -> None:
        """Watch a session: close it when idle for longer than ``ttl``."""
        self._sessions[id(session)] = session
        if self._loop_task is None:  # a running loop sees it within ``interval``: no wake-up
            self._ensure_running()

    def forget(self, session: _Closeable) -> None:
        """Stop watching a session (it closed): the janitor keeps no reference to it."""
        if self._sessions.get(id(session)) is session:
            del self._sessions[id(session)]

    def _ensure_running(self) -> None:
        """Start (or wake) the background loop; it stops by itself when nothing is left to do."""
        if self._closing:
            return  # aclose makes the last attempt itself
        if self._loop_task is not None and self._wake is not None:
            self._wake.set()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: the next sweep or aclose does the work
            return
        self._wake = asyncio.Event()
        self._loop_task = loop.create_task(self._run(), name="eog-core-janitor")

    def leaked(self) -> list[LeakedDatabase]:
        """The databases still waiting for deletion."""
        return [attrs.evolve(entry) for entry in self._pending.values()]

    async def sweep(self, *, force: bool = False) -> list[LeakedDatabase]:
        """Reap idle sessions and retry every deletion that is due (all with ``force``)."""
        now = self.clock()
        idle = [
            s
            for s in self._sessions.values()
            if not s.closed and not s.busy and now - s.last_activity > self.ttl
        ]
        reaped = {id(s) for s in idle}
        self._sessions = {
            key: s for key, s in self._sessions.items() if not s.closed and key not in reaped
        }
        for session in idle:
            log.warning("janitor: closing a session idle for more than %.0f s", self.ttl)
            await _log_failure(session.aclose(), "closing an idle session")
        for entry in list(self._pending.values()):
            if entry.after is not None and entry.after.done():
                self._seed_ended(entry, now)
        due = [
            e
            for e in self._pending.values()
            if (e.after is None or e.after.done()) and (force or e.next_attempt <= now)
        ]
        if due:
            await asyncio.gather(*(self._retry(entry) for entry in due))
        return self.leaked()

    def _seed_ended(self, entry: LeakedDatabase, now: float) -> None:
        fate = seed_fate(entry.after) if entry.after is not None else "landed"
        entry.after = None
        if fate == "never":
            self._pending.pop((entry.url, entry.database_id), None)
            log.info(
                "janitor: the seed of %s on %s never reached the gym; nothing to delete",
                entry.database_id,
                entry.gym,
            )
        elif fate == "unknown" and entry.watch_until is None:
            entry.watch_until = now + self.landing_window

    async def _retry(self, entry: LeakedDatabase) -> None:
        entry.attempts += 1
        watching = entry.watch_until is not None
        try:
            async with GymClient(
                entry.url,
                name=entry.gym,
                auth=entry.auth,
                transport=self.transport,
                timeouts=self.timeouts or DEFAULT_TIMEOUTS,
            ) as client:
                deleted = await client.delete_database(entry.database_id, missing_ok=not watching)
        except GymHTTPError as exc:
            if not (watching and exc.status == 404):
                self._failed(entry, str(exc))
                return
            assert entry.watch_until is not None
            if self.clock() < entry.watch_until:
                self._failed(entry, f"not there yet (HTTP 404), its seed may still land: {exc}")
                return
            self._pending.pop((entry.url, entry.database_id), None)
            log.warning(
                "janitor: %s on %s (%s) never appeared within %.0f s of its uncertain "
                "seed; taking it as never created",
                entry.database_id,
                entry.gym,
                redact_url(entry.url),
                self.landing_window,
            )
            return
        except GymError as exc:
            self._failed(entry, str(exc))
            return
        self._pending.pop((entry.url, entry.database_id), None)
        if deleted:
            log.info(
                "janitor: deleted %s on %s after %d attempt(s)",
                entry.database_id,
                entry.gym,
                entry.attempts,
            )
        else:
            log.warning(
                "janitor: gym %s (%s) does not support deleting databases; %s stays",
                entry.gym,
                redact_url(entry.url),
                entry.database_id,
            )

    def _failed(self, entry: LeakedDatabase, error: str) -> None:
        entry.last_error = error
        delay = backoff_delay(entry.attempts, initial=self.base_delay, maximum=self.max_delay)
        entry.next_attempt = self.clock() + delay
        log.info(
            "janitor: deleting %s on %s failed (attempt %d): %s",
            entry.database_id,
            entry.gym,
            entry.attempts,
            error,
        )

    async def _run(self) -> None:
        try:
            while not self._closing and (
                self._pending or any(not session.closed for session in self._sessions.values())
            ):
                wake = self._wake
                assert wake is not None
                wake.clear()
                await self.sweep()
                # Not asyncio.wait_for: on Python 3.11 it drops a cancellation that arrives
                # as the event is set (an adopt just before aclose), and aclose waited forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):
                        await wake.wait()
        finally:  # drop every reference to this event loop once idle
            self._loop_task = None
            self._wake = None

    async def __aenter__(self) -> Janitor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> list[LeakedDatabase]:
        """Stop the loop, try every pending deletion once more, report what is left."""
        self._closing = True
        try:
            task = self._loop_task
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for session in [s for s in self._sessions.values() if not s.closed]:
                await _log_failure(session.aclose(), "closing a session")
            self._sessions.clear()
            left = await self.sweep(force=True)
        finally:
            self._closing = False
        for entry in left:
            log.warning(
                "janitor: database %s on %s (%s) is still leaked after %d attempt(s): %s",
                entry.database_id,
                entry.gym,
                redact_url(entry.url),
                entry.attempts,
                entry.last_error,
            )
        return left


async def _log_failure(step: Awaitable[None], what: str) -> None:
    try:
        await step
    except Exception as exc:  # one failing session must not stop the janitor
        log.warning("janitor: %s failed: %s", what, exc)


_DEFAULT_JANITORS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Janitor] = (
    weakref.WeakKeyDictionary()
)


def default_janitor() -> Janitor:
    """The janitor that sessions of the running event loop use when none is given.

    Call ``await default_janitor().aclose()`` before the loop ends to get the
    final leak report.
    """
    loop = asyncio.get_running_loop()
    janitor = _DEFAULT_JANITORS.get(loop)
    if janitor is None:
        janitor = _DEFAULT_JANITORS[loop] = Janitor()
    return janitor
