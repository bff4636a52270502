"""Gym requests per rollout through NeMo Gym's ``SimpleAgent`` and ``EogResourcesServer``
(32 demo rollouts at concurrency 4 after one warm-up, counted by LocalGym), for
docs/performance.md. Run in the ``nemo_gym`` nox virtualenv::

    .nox/nemo_gym/bin/python -m tests_integrations.nemo_gym.count_requests
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor

from tests_integrations.nemo_gym.stack import running_stack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with running_stack() as stack:
        stack.run("solve")  # warm
        before = sum(stack.gym.request_counts.values())
        handshakes = stack.gym.method_counts.get("initialize", 0)
        with ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(lambda _: stack.run("solve"), range(args.rollouts)))
        assert all(r["reward"] == 1.0 for r in results)
        total = sum(stack.gym.request_counts.values()) - before
        extra = stack.gym.method_counts.get("initialize", 0) - handshakes
    print(
        f"{args.rollouts} rollouts at concurrency {args.concurrency}: {total} gym requests "
        f"({total / args.rollouts:.2f} per rollout), {extra} handshake(s) after the warm-up"
    )


if __name__ == "__main__":
    main()
