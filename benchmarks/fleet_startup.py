"""Time from ``gyms up`` to healthy for N replicas, on a real Podman (docs/performance.md).

Builds the registry-free test image of ``tests_integrations/containers`` (an empty
root file system running ``eog-core serve-local`` from this virtualenv), then for
each N starts N csm replicas with ``GymFleet`` (the code ``eog-core gyms up``
runs), measures until every one answered MCP ``tools/list``, and removes them.
Needs Podman (``apt-get install podman runc``); not part of ``nox -s bench``.

    python benchmarks/fleet_startup.py                # N = 1 2 4 8, 3 rounds each
    python benchmarks/fleet_startup.py --replicas 1 4 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests_integrations.containers.conftest import (
    ENGINE_ARGS,
    IMAGE,
    _build_image,
    _mounts,
    our_containers,
)

from eog_core.fleet import ContainerEngine, FleetOptions, GymFleet


async def one_round(replicas: int) -> tuple[float, list[float]]:
    engine = ContainerEngine(
        executable="podman", global_args=tuple(ENGINE_ARGS), extra_run_args=tuple(_mounts())
    )
    options = FleetOptions(
        engine=engine, domains=["csm"], replicas=replicas, images={"*": IMAGE}, max_lifecycles=None
    )
    started = time.perf_counter()
    async with GymFleet(options) as fleet:
        healthy = time.perf_counter() - started
        each = sorted(fleet.startup_seconds.values())
    return healthy, each


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        _build_image(Path(work))
    print(
        "| replicas | up to all healthy, median (min-max) | one container run to MCP answer, median |"
    )
    print("|---|---|---|")
    for replicas in args.replicas:
        totals, singles = [], []
        for _ in range(args.rounds):
            total, each = asyncio.run(one_round(replicas))
            totals.append(total)
            singles.extend(each)
        print(
            f"| {replicas} | {statistics.median(totals):.2f} s ({min(totals):.2f}-"
            f"{max(totals):.2f}) | {statistics.median(singles):.2f} s |",
            flush=True,
        )
    assert our_containers() == [], "containers left behind"


if __name__ == "__main__":
    main()
