"""GymClient against the raw aiohttp floor, interleaved on one event loop.

``python benchmarks/interleaved_raw_vs_gym.py [fastmcp-json|aiohttp-stub]``
starts the server in a subprocess, warms both clients up, then alternates
8 rounds of each at concurrency 1, 16 and 64, printing median calls per second,
their ratio and the client's CPU time per call. Alternating rounds cancels the
server's warm-up and the machine's drift, which separate benchmark runs do not.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_gym_client as bench


async def measure(url: str) -> None:
    async with AsyncExitStack() as stack:
        calls = {
            "raw": await bench.raw_pooled(stack, url),
            "gym": await bench.gym_client(stack, url),
        }
        for call in calls.values():
            await bench._batch(call, 16)
        for concurrency in (1, 16, 64):
            rates: dict[str, list[float]] = {"raw": [], "gym": []}
            cpu: dict[str, list[float]] = {"raw": [], "gym": []}
            for round_ in range(8):
                for name in ("raw", "gym") if round_ % 2 else ("gym", "raw"):
                    wall, used = time.perf_counter(), time.process_time()
                    await bench._batch(calls[name], concurrency)
                    rates[name].append(bench.CALLS / (time.perf_counter() - wall))
                    cpu[name].append((time.process_time() - used) / bench.CALLS * 1e6)
            raw, gym = statistics.median(rates["raw"]), statistics.median(rates["gym"])
            print(
                f"concurrency {concurrency:>2}: raw {raw:7.0f}/s  gym {gym:7.0f}/s  ratio {gym / raw:.2f}  "
                f"client CPU per call raw {statistics.median(cpu['raw']):.0f} us, "
                f"gym {statistics.median(cpu['gym']):.0f} us"
            )


def main() -> None:
    server, url = bench.spawn_server(sys.argv[1] if len(sys.argv) > 1 else "fastmcp-json")
    try:
        asyncio.run(measure(url))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
