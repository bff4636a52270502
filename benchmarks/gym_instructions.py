"""Client work to count instructions on: ``valgrind --tool=callgrind python
benchmarks/gym_instructions.py URL calls|lifecycles N`` against ``eog-core serve-local``.

``calls N``: one ``TaskSession`` of the demo task through a held ``GymDirectory``, N
``call_tool`` calls. ``lifecycles N``: N tasks, each started, called once, verified with
STRICT and closed. Two runs with different N, subtracted, give the count per call or per
lifecycle with start-up and imports cancelled out (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import sys

from eog_core import STRICT, load_task
from eog_core.gym import GymDirectory, TaskSession
from eog_core.local import demo_paths


async def run(url: str, what: str, count: int) -> None:
    paths = demo_paths()
    task = load_task(paths.task)
    async with GymDirectory({task.gym_servers[0].name: url}) as directory:
        if what == "calls":
            async with TaskSession.start(
                task, directory=directory, seed_root=paths.directory
            ) as session:
                for _ in range(count):
                    await session.call_tool("find_account", {"name": "Harbor Lane"})
            return
        for _ in range(count):
            async with TaskSession.start(
                task, directory=directory, seed_root=paths.directory
            ) as session:
                await session.call_tool("find_account", {"name": "Harbor Lane"})
                await session.verify(policy=STRICT)


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[2] not in ("calls", "lifecycles"):
        print("usage: gym_instructions.py URL calls|lifecycles N", file=sys.stderr)
        raise SystemExit(2)
    asyncio.run(run(sys.argv[1], sys.argv[2], int(sys.argv[3])))


if __name__ == "__main__":
    main()
