"""``python -m tests.chaos``: the full chaos run (``nox -s chaos``), figures printed.

Runs the sessions once without faults (the baseline) and once with faults and
restarts; exits 1, naming each broken guarantee, if any guarantee failed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from pathlib import Path

from eog_core.local import Fault
from tests.chaos.harness import ChaosConfig, ChaosReport, run_chaos


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--fault-rate", type=float, default=0.15)
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--expiries", type=int, default=4)
    parser.add_argument("--cancel-rate", type=float, default=0.05)
    parser.add_argument(
        "--own-mcp",
        action="store_true",
        help="each task session opens its own MCP sessions (default: shared)",
    )
    parser.add_argument("--sse", action="store_true", help="the gym process answers in SSE")
    parser.add_argument(
        "--replicas",
        choices=["both", "proxy", "direct"],
        default="both",
        help="each gym's replicas: its fault proxy and itself (default), or one",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--faults",
        default=",".join(f.value for f in Fault),
        help="comma-separated fault kinds (default: all)",
    )
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--workdir", type=Path, help="keep gym logs and journals here")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="eog-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=workdir / "chaos.log",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    print(f"chaos workdir: {workdir}", flush=True)
    faulted = ChaosConfig(
        sessions=args.sessions,
        concurrency=args.concurrency,
        fault_rate=args.fault_rate,
        restarts=args.restarts,
        expiries=args.expiries,
        cancel_rate=args.cancel_rate,
        seed=args.seed,
        replicas=args.replicas,
        sse=args.sse,
        own_mcp=args.own_mcp,
        faults=tuple(Fault(name) for name in args.faults.split(",")),
    )
    runs: list[tuple[str, ChaosConfig]] = []
    if not args.skip_baseline:
        baseline = ChaosConfig(
            sessions=args.sessions,
            concurrency=args.concurrency,
            fault_rate=0.0,
            restarts=0,
            expiries=0,
            cancel_rate=0.0,
            seed=args.seed,
            replicas=args.replicas,
            sse=args.sse,
            own_mcp=args.own_mcp,
        )
        runs.append(("baseline (no faults)", baseline))
    runs.append(("chaos (faults + restarts)", faulted))
    broken: list[str] = []
    for title, config in runs:
        run_dir = workdir / title.split()[0]
        run_dir.mkdir(exist_ok=True)
        report: ChaosReport = asyncio.run(run_chaos(config, run_dir))
        print(f"== {title}\n{report.summary()}", flush=True)
        for failure in report.broken():
            broken.append(f"{title}: {failure}")
    if broken:
        print("\nBROKEN GUARANTEES:", *broken, sep="\n  ", file=sys.stderr)
        return 1
    print(
        "\nall guarantees held: 0 databases left, 0 tool calls executed twice, "
        "0 non-EogError exceptions, 0 hangs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
