"""Host ports for published gym containers, outside the kernel's ephemeral range.

As root, Podman (netavark) and Docker forward a published port with a NAT rule that
catches every connection to it, local ones included, whether or not a socket holds the
port. When a container's keeper dies without the engine's teardown (a create killed
mid-way, a killed ``conmon``), the rule outlives it and the port is free again; an engine
that picks the port itself picks it from the ephemeral range, the range every
``bind(("127.0.0.1", 0))`` on the machine draws from. A program (a test's own server)
later given that port by the kernel then has its connections sent to the dead container:
``ConnectionRefusedError`` to a server that is listening. Ports chosen here lie outside
that range, so a leftover rule can only ever catch a port no one is handed by chance.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from eog_core.errors import FleetError

__all__ = ["EPHEMERAL_RANGE_FILE", "ephemeral_range", "spare_port"]

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LINUX_DEFAULT = (32768, 60999)
_LOWEST = 10_000  # below: the well-known services and upstream's fixed ports (8001-8107...)
_TRIES = 64


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        low, high = (int(word) for word in path.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return _LINUX_DEFAULT
    return (low, high) if 0 < low <= high <= 65535 else _LINUX_DEFAULT


def _candidates(low: int, high: int) -> range:
    below, above = range(_LOWEST, low), range(high + 1, 65536)
    return below if len(below) >= len(above) else above


def spare_port(bind_host: str, *, ephemeral: tuple[int, int] | None = None) -> int:
    """A port outside the ephemeral range that ``bind_host`` can bind now."""
    low, high = ephemeral or ephemeral_range()
    candidates = _candidates(low, high)
    if not candidates:
        raise FleetError(f"no host port outside the ephemeral range {low}-{high} to publish on")
    for port in random.sample(candidates, min(_TRIES, len(candidates))):
        with socket.socket(socket.AF_INET6 if ":" in bind_host else socket.AF_INET) as probe:
            try:
                probe.bind((bind_host, port))
            except OSError:
                continue
        return port
    raise FleetError(
        f"no free host port on {bind_host} outside the ephemeral range {low}-{high} "
        f"after {_TRIES} tries"
    )
