"""Client CPU of ``verify_task`` (5 database_state verifiers): this checkout against a git revision.

``python benchmarks/verify_engine_vs_ref.py [--ref main] [--rounds 9] [--calls 2000]``

The revision's ``src/eog_core`` is extracted with ``git archive`` and imported
under another name (``eog_core_ref``), so both engines run in one process and
one event loop, interleaved round by round (order alternating), on the same
workloads (benchmarks/verify_engine_workloads.py: an in-process runner answering
canned gym bodies, immediately or after yielding to the loop once as I/O
would). It prints the median CPU microseconds per ``verify_task`` call of each
and the median of the paired ratios. A gather of 5 trivial coroutines is shown
as the floor any concurrent engine pays.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import eog_core  # noqa: E402
from verify_engine_workloads import WORKLOADS, CannedRunner, build_task, verify_many  # noqa: E402


def import_revision(ref: str, into: Path) -> ModuleType:
    """``src/eog_core`` at ``ref``, importable as ``eog_core_ref``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src/eog_core"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "eog_core_ref"
    (into / "src" / "eog_core").rename(package)
    for path in package.rglob("*.py"):
        path.write_text(re.sub(r"\beog_core\b", "eog_core_ref", path.read_text()))
    sys.path.insert(0, str(into))
    return importlib.import_module("eog_core_ref")


async def _trivial(value: int) -> int:
    return value


async def gather_floor(count: int) -> None:
    for _ in range(count):
        await asyncio.gather(*(_trivial(i) for i in range(5)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as folder:
        modules = {"ref": import_revision(args.ref, Path(folder)), "this": eog_core}
        print(f"verify_task CPU, us per call (5 database_state verifiers); ref = {args.ref}")
        print(f"{'workload':34s} {'ref':>8s} {'this':>8s} {'this/ref':>9s}")
        for name, checks in WORKLOADS.items():
            for policy_name in ("STRICT", "PARITY"):
                for suspend in (False, True):
                    setups = {}
                    for label, module in modules.items():
                        task, policy = build_task(module, checks), getattr(module, policy_name)
                        runner = CannedRunner(module, checks, suspend=suspend)
                        verdict = loop.run_until_complete(
                            verify_many(module, task, runner, policy, 200)
                        )
                        setups[label] = (
                            module,
                            task,
                            runner,
                            policy,
                            verdict.to_dict(detailed=True),
                        )
                    if setups["ref"][4] != setups["this"][4]:
                        sys.exit(f"{name} {policy_name}: the verdicts differ")
                    cpu: dict[str, list[float]] = {label: [] for label in setups}
                    for round_ in range(args.rounds):
                        for label in list(setups) if round_ % 2 == 0 else list(setups)[::-1]:
                            module, task, runner, policy, _ = setups[label]
                            used = time.process_time()
                            loop.run_until_complete(
                                verify_many(module, task, runner, policy, args.calls)
                            )
                            cpu[label].append((time.process_time() - used) / args.calls * 1e6)
                    ratio = statistics.median(
                        t / r for t, r in zip(cpu["this"], cpu["ref"], strict=True)
                    )
                    label = f"{name} {policy_name} {'suspending' if suspend else 'immediate'}"
                    print(
                        f"{label:34s} {statistics.median(cpu['ref']):8.1f} "
                        f"{statistics.median(cpu['this']):8.1f} {ratio:9.2f}"
                    )
        floor = []
        for _ in range(args.rounds):
            used = time.process_time()
            loop.run_until_complete(gather_floor(args.calls))
            floor.append((time.process_time() - used) / args.calls * 1e6)
        print(f"{'floor: gather of 5 trivial coroutines':34s} {statistics.median(floor):8.1f}")
    loop.close()


if __name__ == "__main__":
    main()
