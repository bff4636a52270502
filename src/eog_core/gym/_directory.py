"""Where gyms are: gym name -> replica URLs, with load balancing and health.

A replica is chosen by fewest active sessions among the healthy ones; a replica
that failed to connect is marked down and re-probed before it is used again
(``/health``, or the MCP endpoint for gyms without one). When every replica of
a gym is down, ``acquire`` re-probes them a few times with backoff (one probe
per replica shared by every waiting caller) before giving up: a gym restarting
is back within seconds. A gym that is not in the directory resolves to the URL
each task names, one replica per URL. At most ``max_concurrent_seeds`` seeds
run on a replica at once. An optional cap of task lifecycles per replica calls
back when reached (the EOG containers leak file descriptors and fail after
~200 lifecycles; see ``docs/performance.md``). Whoever restarts a replica
(``eog_core.fleet``) takes it out of service with :meth:`GymDirectory.drain`
and back with :meth:`GymDirectory.reset`; with ``return_timeout`` set, a session
asking for a gym whose every replica is out of service waits for one to return.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core._redact import redact_url
from eog_core.errors import GymUnreachableError, SchemaError, UsageError
from eog_core.gym._probes import joined_probes, probe_replica
from eog_core.gym._replica import Lease, Replica, read_table, table_from_env, urls_of
from eog_core.gym._seed_slot import SeedGate, SeedSlot
from eog_core.gym._transport import Pool, Transport, lease_pool, release_pool
from eog_core.tasks import DEFAULT_GYMS, AuthConfig

__all__ = ["GymDirectory", "default_directory"]

log = logging.getLogger("eog_core.gym.directory")


@attrs.define
class GymDirectory:
    """Gym name -> replicas: ``GymDirectory({"sn-csm-server": ["http://a:8001", "http://b:8001"]})``.

    Gyms not in the directory resolve to the URL the task names (``fallback``),
    with a warning in the log (that URL may point at an unrelated local server);
    ``allow_fallback=False`` refuses such gyms instead.
    ``reprobe_attempts`` and ``reprobe_delay`` bound how long ``acquire`` keeps
    probing when every replica of a gym is down (doubling delays, jittered).
    ``max_concurrent_seeds`` bounds the seeds in flight on each replica (a seed
    runs a whole SQL dump on the gym; the EOG containers need a bound, 4 by
    default as NeMo Gym found).
    """

    replicas: Mapping[str, str | Sequence[str]] = attrs.field(factory=dict)
    max_concurrent_seeds: int = attrs.field(default=4, kw_only=True)
    max_lifecycles: int | None = attrs.field(default=None, kw_only=True)
    on_exhausted: Callable[[Replica], None] | None = attrs.field(default=None, kw_only=True)
    probe_after: float = attrs.field(default=2.0, kw_only=True)
    probe_timeout: float = attrs.field(default=5.0, kw_only=True)
    reprobe_attempts: int = attrs.field(default=3, kw_only=True)
    reprobe_delay: float = attrs.field(default=0.25, kw_only=True)
    allow_fallback: bool = attrs.field(default=True, kw_only=True)
    return_timeout: float | None = attrs.field(default=None, kw_only=True)
    transport: Transport | None = attrs.field(default=None, kw_only=True)
    clock: Callable[[], float] = attrs.field(default=time.monotonic, kw_only=True, repr=False)
    _table: dict[str, list[Replica]] = attrs.field(factory=dict, init=False, repr=False)
    _held: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[weakref.ref[Pool]]] = (
        attrs.field(factory=weakref.WeakKeyDictionary, init=False, repr=False)
    )
    """Per event loop, the pools held by ``async with``."""
    _loop_holds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[Pool]] = (
        attrs.field(factory=weakref.WeakKeyDictionary, init=False, repr=False)
    )
    """Per event loop, the pool lease taken by the first ``acquire()`` there: held until the
    loop ends (its pool closes with the loop) or :meth:`aclose`. Pools are held by weak
    reference: a pool refers to its loop, and a value referring to its weak key would keep
    the loop alive for ever (the loop's own registry keeps an open pool alive)."""
    _listed: frozenset[str] = attrs.field(default=frozenset(), init=False, repr=False)
    _probes: weakref.WeakKeyDictionary[
        asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Future[bool]]
    ] = attrs.field(factory=weakref.WeakKeyDictionary, init=False, repr=False)
    """Per event loop (a future belongs to one), the probe in flight per replica."""
    _seed_gates: dict[tuple[str, str], SeedGate] = attrs.field(factory=dict, init=False, repr=False)
    """Per replica, its seed bound: one count for every event loop using the directory."""
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    """Guards the replicas' counters and the tables: a directory may serve several event
    loops in several threads at once (the NeMo Gym server does)."""
    _returns: dict[str, list[asyncio.Future[None]]] = attrs.field(
        factory=dict, init=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        if isinstance(self.max_concurrent_seeds, bool) or not (
            isinstance(self.max_concurrent_seeds, int) and self.max_concurrent_seeds >= 1
        ):
            raise UsageError(
                f"max_concurrent_seeds must be a positive integer, got {self.max_concurrent_seeds!r}"
            )
        for gym, value in self.replicas.items():
            self._table[gym] = [Replica(gym=gym, url=url) for url in urls_of(value, gym)]
        self._listed = frozenset(self._table)

    @classmethod
    def defaults(cls, host: str = "localhost", **options: Any) -> GymDirectory:
        """The seven standard gyms on their standard ports on ``host``."""
        return cls(
            {gym: f"http://{host}:{port}" for gym, (_, port) in DEFAULT_GYMS.items()}, **options
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **options: Any) -> GymDirectory:
        """Read ``{"gym": "url" | ["url", ...]}`` from a JSON or TOML file (TOML: a ``[gyms]`` table)."""
        source = Path(path)
        data = read_table(source)
        try:
            return cls(data, **options)
        except SchemaError as exc:
            raise SchemaError(exc.reason, path=exc.path, source=str(source)) from exc

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> GymDirectory:
        """Read ``EOG_GYM_<NAME>=url[,url...]`` variables (name upper-cased, ``-`` as ``_``)."""
        table = table_from_env(os.environ if environ is None else environ)
        return cls(table, **options)

    async def __aenter__(self) -> GymDirectory:
        """Hold the event loop's connection pool open, and with it the MCP sessions and
        tool lists shared by the task sessions on this directory's replicas, until exit."""
        pool = lease_pool()
        with self._lock:
            self._held.setdefault(asyncio.get_running_loop(), []).append(weakref.ref(pool))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Let go of the connection pool, held since the first ``acquire()`` on this event
        loop or by ``async with`` (its last holder ends the shared MCP sessions with
        ``DELETE``). Idempotent; a later ``acquire()`` holds it again."""
        loop = asyncio.get_running_loop()
        with self._lock:
            pools = self._held.pop(loop, [])
            held = self._loop_holds.pop(loop, None)
        if held is not None:
            pools.append(held)
        for ref in reversed(pools):
            pool = ref()
            if pool is not None:
                await release_pool(pool)

    def _hold_pool(self) -> None:
        """Keep this loop's pool, and the MCP sessions and tool lists shared over it, from
        the first session until the loop ends: a directory not held with ``async with``
        still pays one ``initialize`` and one ``tools/list`` per replica, not one per task."""
        loop = asyncio.get_running_loop()
        ref = self._loop_holds.get(loop)
        held = None if ref is None else ref()
        if held is not None and not held.closed:
            return
        with self._lock:
            ref = self._loop_holds.get(loop)
            held = None if ref is None else ref()
            if held is None or held.closed:
                self._loop_holds[loop] = weakref.ref(lease_pool())

    def gyms(self) -> dict[str, list[Replica]]:
        """A copy of the table, for reports."""
        with self._lock:  # another thread may be adding a fallback gym or counting
            return {gym: [attrs.evolve(r) for r in reps] for gym, reps in self._table.items()}

    def stats(self) -> dict[str, Any]:
        """A JSON-ready summary: the bounds, and per gym its replicas' counters."""
        table = self.gyms()
        return {
            "max_concurrent_seeds": self.max_concurrent_seeds,
            "max_lifecycles": self.max_lifecycles,
            "gyms": {
                gym: [
                    {
                        "url": redact_url(r.url),
                        "active": r.active,
                        "lifecycles": r.lifecycles,
                        "seeding": r.seeding,
                        "seeds_waiting": r.seeds_waiting,
                        "down": r.down_since is not None,
                        "retired": r.retired,
                    }
                    for r in replicas
                ]
                for gym, replicas in table.items()
            },
        }

    def seed_slot(self, lease: Lease) -> SeedSlot:
        """Hold one of the replica's ``max_concurrent_seeds`` seed slots for an
        ``async with`` block."""
        with self._lock:
            gate = self._seed_gates.get((lease.gym, lease.url))
            if gate is None:
                gate = self._seed_gates[(lease.gym, lease.url)] = SeedGate(
                    self.max_concurrent_seeds, self._lock
                )
        return SeedSlot(gate, self._find(lease), self._lock)

    async def acquire(
        self, gym: str, fallback: str | None = None, *, auth: AuthConfig | None = None
    ) -> Lease:
        """A replica for one task session: healthy, fewest active sessions, not retired.

        ``auth`` (the task's credentials for this gym) goes on the health probes.
        """
        self._hold_pool()
        replicas = self._replicas_for(gym, fallback)
        if self.return_timeout is not None:
            await self._await_return(gym, replicas)
        if len(replicas) == 1:  # the usual: one replica, in service
            only = replicas[0]
            if only.down_since is None:
                lease = self._lease(only)
                if lease is not None:
                    return lease
        candidates = [r for r in replicas if not r.retired and not self._at_cap(r)]
        if not candidates:
            raise GymUnreachableError(
                f"every replica of gym {gym!r} reached its lifecycle cap", gym=gym
            )
        now = self.clock()
        healthy = [r for r in candidates if r.down_since is None]
        due = [
            r
            for r in candidates
            if r.down_since is not None and now - r.down_since >= self.probe_after
        ]
        healthy += await self._alive(due, auth)
        for attempt in range(1, max(0, self.reprobe_attempts) + 1):
            if healthy:
                break
            # Every replica is down: a restarting gym is back within moments, so
            # look again (shared probes, growing delays) before failing the task.
            ceiling = self.reprobe_delay * 2 ** (attempt - 1)
            await asyncio.sleep(random.uniform(ceiling / 2, ceiling))
            down = [r for r in candidates if r.down_since is not None]
            healthy = [r for r in candidates if r.down_since is None]
            healthy += await self._alive(down, auth)
        if not healthy:
            raise GymUnreachableError(
                f"no healthy replica of gym {gym!r} "
                f"({', '.join(redact_url(r.url) for r in candidates)})",
                gym=gym,
            )
        # Probing awaited: another session may have taken a replica to its cap meanwhile.
        for replica in sorted(healthy, key=lambda r: (r.active, r.lifecycles)):
            lease = self._lease(replica)
            if lease is not None:
                return lease
        raise GymUnreachableError(
            f"no replica of gym {gym!r} is both healthy and under its lifecycle cap", gym=gym
        )

    async def _await_return(self, gym: str, replicas: Sequence[Replica]) -> None:
        """Wait (up to ``return_timeout``) while every replica is retired or at its cap:
        a replica being restarted comes back through :meth:`reset`."""
        assert self.return_timeout is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.return_timeout
        while True:
            with self._lock:  # checked and queued at once: reset() may run in another thread
                if not all(r.retired or self._at_cap(r) for r in replicas):
                    return
                remaining = deadline - loop.time()
                waiter: asyncio.Future[None] = loop.create_future()
                if remaining > 0:
                    self._returns.setdefault(gym, []).append(waiter)
            if remaining <= 0:
                raise GymUnreachableError(
                    f"no replica of gym {gym!r} returned to service within "
                    f"{self.return_timeout:g} s",
                    gym=gym,
                )
            try:  # not wait_for: on 3.11 it can drop a cancellation racing the wake-up
                async with asyncio.timeout(remaining):
                    await asyncio.shield(waiter)
            except TimeoutError:
                continue
            finally:
                with self._lock:
                    waiters = self._returns.get(gym, [])
                    if waiter in waiters:
                        waiters.remove(waiter)

    def _lease(self, replica: Replica) -> Lease | None:
        """Take the replica for a session unless it is retired or at its cap (checked and
        counted at once: another thread may be taking the last lifecycle)."""
        with self._lock:
            if replica.retired or self._at_cap(replica):
                return None
            replica.active += 1
            replica.lifecycles += 1
        return Lease(gym=replica.gym, url=replica.url)

    def _replicas_for(self, gym: str, fallback: str | None) -> list[Replica]:
        if gym in self._listed:
            return self._table[gym]
        if fallback is None:
            raise GymUnreachableError(f"gym {gym!r} is not in the directory", gym=gym)
        if not self.allow_fallback:
            raise GymUnreachableError(
                f"gym {gym!r} is not in the directory, and the directory forbids using the "
                f"task's URL ({redact_url(fallback)}): add the gym to the directory",
                gym=gym,
                url=fallback,
            )
        # An unlisted gym is wherever the task says: each task's URL is its own replica.
        url = fallback.rstrip("/")
        with self._lock:
            known = self._table.setdefault(gym, [])
            replica = next((r for r in known if r.url == url), None)
            if replica is None:
                replica = Replica(gym=gym, url=url)
                known.append(replica)
                new = True
            else:
                new = False
        if new:
            log.warning(
                "gym %r is not in the directory: using the URL the task names, %s "
                "(add the gym to the directory to choose; allow_fallback=False forbids this)",
                gym,
                redact_url(url),
            )
        return [replica]

    def _at_cap(self, replica: Replica) -> bool:
        return self.max_lifecycles is not None and replica.lifecycles >= self.max_lifecycles

    def release(self, lease: Lease) -> None:
        """The session is over; a drained replica at its lifecycle cap is retired and reported."""
        replica = self._find(lease)
        if replica is None:
            return
        with self._lock:
            replica.active = max(0, replica.active - 1)
            # At its cap a replica takes no new session (see acquire); once its last
            # session is over it is retired and reported, safe to restart.
            exhausted = self._at_cap(replica) and replica.active == 0 and not replica.retired
            if exhausted:
                replica.retired = True
                report = attrs.evolve(replica)
        if exhausted and self.on_exhausted is not None:
            self.on_exhausted(report)

    def mark_down(self, lease: Lease) -> None:
        """The replica could not be reached; it is probed before being used again."""
        replica = self._find(lease)
        if replica is not None:
            with self._lock:
                if replica.down_since is None:
                    replica.down_since = self.clock()

    def drain(self, gym: str, url: str) -> bool:
        """Take a replica out of service (its sessions in flight carry on; no new ones):
        for an unplanned restart. False when the replica is not in the directory."""
        replica = self._find(Lease(gym=gym, url=url.rstrip("/")))
        if replica is None:
            return False
        with self._lock:
            replica.retired = True
        return True

    def in_flight(self, gym: str, url: str) -> int:
        """Sessions holding the replica now."""
        replica = self._find(Lease(gym=gym, url=url.rstrip("/")))
        return 0 if replica is None else replica.active

    def reset(self, gym: str, url: str) -> None:
        """A restarted replica: lifecycle count to zero, in service again; sessions
        waiting for the gym (``return_timeout``) go on."""
        replica = self._find(Lease(gym=gym, url=url.rstrip("/")))
        if replica is not None:
            with self._lock:
                replica.lifecycles, replica.retired, replica.down_since = 0, False, None
                waiters = self._returns.pop(gym, [])
            for waiter in waiters:
                if not waiter.done():
                    with contextlib.suppress(RuntimeError):  # its loop is closed
                        waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    def _find(self, lease: Lease) -> Replica | None:
        return next((r for r in self._table.get(lease.gym, ()) if r.url == lease.url), None)

    async def _alive(self, replicas: Sequence[Replica], auth: AuthConfig | None) -> list[Replica]:
        """The replicas that answer a probe; joins a probe another caller already started."""
        if not replicas:
            return []
        with self._lock:
            probes = self._probes.setdefault(asyncio.get_running_loop(), {})
        return await joined_probes(probes, replicas, functools.partial(self._probe, auth=auth))

    async def _probe(self, replica: Replica, *, auth: AuthConfig | None) -> bool:
        alive = await probe_replica(replica, auth, self.transport, self.probe_timeout)
        with self._lock:
            replica.down_since = None if alive else self.clock()
        return alive


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_DEFAULT_DIRECTORIES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GymDirectory] = (
    weakref.WeakKeyDictionary()
)


def default_directory() -> GymDirectory:
    """The directory task sessions of the running event loop use when none is given (each
    task's gyms at the URLs the task names). One per loop, as :func:`default_janitor`: its
    pool, shared MCP sessions, tool lists and seed bound serve every task of the loop.
    ``await default_directory().aclose()`` ends them before the loop does."""
    loop = asyncio.get_running_loop()
    directory = _DEFAULT_DIRECTORIES.get(loop)
    if directory is None:
        directory = _DEFAULT_DIRECTORIES[loop] = GymDirectory()
    return directory
