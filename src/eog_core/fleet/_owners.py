"""Whose gym containers these are, and removing them: the orphans of a dead owner
(reaped by the next start), and ``gyms down``, which leaves a live owner's alone.

Each container carries its owner, ``HOST:PID`` of the process that removes it at its
exit (a foreground ``gyms up`` or a ``run --launch``), or ``detached`` (``gyms up``:
``gyms down`` removes it). A live owner replaces a container that dies, so removing
one under it would be undone within seconds: ``down`` leaves them unless ``force``,
and the owner, finding its container gone, gives that replica up instead.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

import attrs

from eog_core.fleet._engine import LABEL_MANAGED, Container, ContainerEngine, owner_alive

__all__ = ["Owner", "down", "owner_of", "reap_orphans", "split_held"]

COMMAND_WIDTH = 100


@attrs.frozen(kw_only=True)
class Owner:
    """A container's owner: ``label`` as written, ``state`` one of ``detached``,
    ``alive``, ``gone`` or ``elsewhere`` (another host's), its ``pid`` and, alive on this
    host, its ``command`` line."""

    label: str
    state: str
    pid: int | None = None
    command: str = ""

    def describe(self) -> str:
        """``detached``, ``pid 4242 (eog-core gyms up --foreground)``, ``pid 4242, gone``."""
        if self.state == "detached" or self.pid is None:
            return self.label or "?"
        if self.state == "gone":
            return f"pid {self.pid}, gone"
        if self.state == "elsewhere":
            return f"pid {self.pid} on {self.label.rpartition(':')[0]}"
        return f"pid {self.pid} ({self.command})" if self.command else f"pid {self.pid}"


def _command_of(pid: int) -> str:
    """The process's command line (Linux: ``/proc``), cut to ``COMMAND_WIDTH``; '' elsewhere."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    if words[1:3] == ["-m", "eog_core"]:  # python -m eog_core ...
        words = ["eog-core", *words[3:]]
    elif words[1:2] and Path(words[1]).name == "eog-core":  # python .../bin/eog-core ...
        words = ["eog-core", *words[2:]]
    elif words and Path(words[0]).name == "eog-core":
        words = ["eog-core", *words[1:]]
    text = " ".join(words)
    return text if len(text) <= COMMAND_WIDTH else text[: COMMAND_WIDTH - 3] + "..."


def owner_of(container: Container, *, hostname: str | None = None) -> Owner:
    """Who owns ``container`` and whether that process still runs."""
    label = container.owner
    host, _, pid_text = label.rpartition(":")
    if label == "detached" or not pid_text.isdigit():
        return Owner(label=label, state="detached")
    pid = int(pid_text)
    if host != (hostname or socket.gethostname()):
        return Owner(label=label, state="elsewhere", pid=pid)
    if not owner_alive(label, hostname=host):
        return Owner(label=label, state="gone", pid=pid)
    return Owner(label=label, state="alive", pid=pid, command=_command_of(pid))


def split_held(
    containers: Sequence[Container], *, hostname: str | None = None
) -> tuple[list[Container], list[Container]]:
    """(free, held): ``held`` are those of a live owner (here or on another host)."""
    free: list[Container] = []
    held: list[Container] = []
    for container in containers:
        state = owner_of(container, hostname=hostname).state
        (held if state in ("alive", "elsewhere") else free).append(container)
    return free, held


async def reap_orphans(engine: ContainerEngine) -> int:
    """Remove our containers whose owner process (on this host) is gone; how many."""
    orphans = [
        c.id for c in await engine.containers({LABEL_MANAGED: "1"}) if owner_of(c).state == "gone"
    ]
    if orphans:
        await engine.call(
            *engine.remove_args(orphans, podman=await engine.is_podman()),
            check=False,
            shielded=True,
        )
    return len(orphans)


async def down(engine: ContainerEngine, *, force: bool = False) -> int:
    """Remove our containers (``eog-core gyms down``): the detached ones and those whose
    owner is gone; a live owner's too with ``force``. How many were removed."""
    free, held = split_held(await engine.containers({LABEL_MANAGED: "1"}))
    found = [c.id for c in (free + held if force else free)]
    if found:
        await remove(engine, found)
    return len(found)


async def remove(engine: ContainerEngine, ids: Sequence[str]) -> None:
    """Force-remove containers at once (the engine's ``rm``, shielded)."""
    await engine.call(*engine.remove_args(ids, podman=await engine.is_podman()), shielded=True)
