"""Run upstream's compute_score.py on result folders and write tests/golden/score_parity.json.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_score_parity.py

Needs ``tabulate`` and ``tqdm`` (upstream's own dependencies) in the running
Python. Each case is a results folder: row folders (``run_1``, mode names,
names that look like numbers or booleans, empty ones), result files named as
upstream names them (``results_<mode>__<domain>__<task>.json``, and
``results_task_<id>.json`` from a local folder of tasks) or otherwise, nested
folders, files directly in the folder, and contents upstream scores (errored
runs, ``runs: {}``, boolean, integer and NaN rates, non-numeric ``pass_rate``,
a non-object run after an errored one) or fails on (bad JSON, a missing or
non-numeric statistic, ``runs`` it cannot iterate, a ``10**400`` rate, bytes
that are not UTF-8). Upstream's ``compute_score.main`` runs on it unmodified;
recorded are its stdout and, when it fails, the exception. Random cases whose
printed numbers would depend on the order files are summed in are re-drawn, so
the fixture does not depend on a file system's directory order; the nested
cases use one file per folder, where ``os.walk`` order is fixed.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

SEED = 5
CASES = 560
HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "score_parity.json"
RATES: list[Any] = [0.0, 1.0, 0.5, 1 / 3, 2 / 3, 0.25, 0.125, 0.75, 0.6, 0.1, 0, 1, True, False]
ODD_RATES: list[Any] = [float("nan"), 10**20, 1e20, -0.5, 2.5, float("inf"), 7, 0.005, 0.015]
MODES = [
    "run_1",
    "run_2",
    "run_3",
    "oracle",
    "+5_tools",
    "007",
    "1e3",
    "True",
    "nan",
    "ünï",
    "-",
    "1,000",
    "a b",
    "run_10",
    "x" * 30,
]


def compute_score() -> Any:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder or not (Path(folder) / "compute_score.py").is_file():
        sys.exit(
            "set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym "
            "(the folder holding compute_score.py)"
        )
    sys.path.insert(0, folder)
    import compute_score as module

    return module


def result_file(rng: random.Random, odd: bool) -> dict[str, Any]:
    runs: list[Any] = []
    for number in range(rng.randint(0, 3)):
        if rng.random() < 0.2:
            runs.append(
                {
                    "run_number": number + 1,
                    "error": rng.choice(["LLM timeout", "division by zero", ""]),
                    "overall_success": False,
                }
            )
        else:
            total = rng.randint(0, 4)
            passed = rng.randint(0, total)
            rate: Any = passed / total if total else 0.0
            if rng.random() < 0.1:
                rate = rng.choice(["n/a", None, "0.5"])  # upstream never reads pass_rate
            runs.append(
                {
                    "run_number": number + 1,
                    "verification_summary": {
                        "total": total,
                        "passed": passed,
                        "failed": total - passed,
                        "pass_rate": rate,
                    },
                    "overall_success": total > 0 and passed == total,
                }
            )
    if rng.random() < 0.05:
        runs = {}  # type: ignore[assignment]
    pool = RATES + (ODD_RATES if odd else [])
    return {
        "runs": runs,
        "statistics": {
            "overall_success_rate": rng.choice(pool),
            "verifier_level_pass_rate": rng.choice(pool),
        },
    }


BROKEN: list[Any] = [
    "{not json",
    "[]",
    '{"runs": null, "statistics": {}}',
    '{"runs": {"a": 1}, "statistics": {}}',
    '{"runs": [5], "statistics": {"overall_success_rate": 1, "verifier_level_pass_rate": 1}}',
    '{"runs": []}',
    '{"runs": [], "statistics": []}',
    '{"runs": [], "statistics": {"overall_success_rate": "abc", "verifier_level_pass_rate": 1}}',
    '{"runs": [], "statistics": {"overall_success_rate": null, "verifier_level_pass_rate": 1}}',
    '{"runs": [], "statistics": {"verifier_level_pass_rate": 1}}',
    '{"runs": [], "statistics": {"overall_success_rate": 1'
    + "0" * 400
    + ', "verifier_level_pass_rate": 1}}',
    "\ufeff{}",
    b'{"runs": [], "statistics": {"x": "\xff"}}',
    "",
]
SCORED_ODDLY: list[str] = [
    '{"runs": [{"error": "x"}, 5], "statistics": {"overall_success_rate": 0, "verifier_level_pass_rate": 0}}',
    '{"runs": {}, "statistics": {"overall_success_rate": 1, "verifier_level_pass_rate": 0.5}}',
    '{"runs": "", "statistics": {"overall_success_rate": true, "verifier_level_pass_rate": false}}',
    '{"statistics": {"overall_success_rate": NaN, "verifier_level_pass_rate": 0.5}}',
    '{"runs": [{"error": {"code": 1}}], "statistics": {"overall_success_rate": 0, "verifier_level_pass_rate": 0}}',
    '{"runs": [{"error": 0}], "statistics": {"overall_success_rate": 0.5, "verifier_level_pass_rate": 1}}',
]


def file_name(rng: random.Random, mode: str, index: int) -> str:
    return rng.choice(
        [
            f"results_oracle__csm__task_{index}.json",
            f"results_{mode}__itsm__t{index}.json",
            f"results_task_2025{index:04d}_x.json",
            f"other_{index}.json",
            f"results_hybrid__hr__t{index}.JSON",
            f"notes_{index}.txt",
        ]
    )


def random_case(rng: random.Random) -> dict[str, Any]:
    files: dict[str, Any] = {}
    dirs: list[str] = []
    broken = rng.random() < 0.12
    odd = rng.random() < 0.3
    for mode in rng.sample(MODES, rng.choice([0, 1, 1, 2, 2, 3, 4])):
        if rng.random() < 0.12:
            dirs.append(mode)
            continue
        for index in range(rng.randint(0, 7)):
            folder = mode if rng.random() < 0.85 else f"{mode}/nested"
            path = f"{folder}/{file_name(rng, mode, index)}"
            roll = rng.random()
            if broken and roll < 0.2:
                files[path] = rng.choice(BROKEN)
            elif roll < 0.1:
                files[path] = rng.choice(SCORED_ODDLY)
            else:
                files[path] = json.dumps(result_file(rng, odd))
        if not any(p.startswith(mode + "/") for p in files):
            dirs.append(mode)
    if rng.random() < 0.1:
        files["results_oracle__csm__top.json"] = json.dumps(result_file(rng, False))
    return {"files": files, "dirs": dirs}


def chain_case(rng: random.Random) -> dict[str, Any]:
    """One file per folder down a chain: os.walk order (top first) differs from sorted path order."""
    files: dict[str, Any] = {}
    folder = "run_1"
    for index in range(rng.randint(2, 6)):
        files[f"{folder}/results_oracle__csm__t{index}.json"] = json.dumps(result_file(rng, True))
        folder += f"/{chr(ord('a') + index)}"
    return {"files": files, "dirs": []}


def special_cases(rng: random.Random) -> list[dict[str, Any]]:
    """Every broken and oddly scored content once, beside a normal file, in a row of its own."""
    return [
        {
            "files": {
                "run_1/results_oracle__csm__t0.json": json.dumps(result_file(rng, False)),
                "run_1/results_oracle__csm__t1.json": content,
                "run_2/results_task_20251205_x.json": json.dumps(result_file(rng, False)),
            },
            "dirs": ["run_3"],
        }
        for content in BROKEN + SCORED_ODDLY
    ]


def materialise(case: dict[str, Any], root: Path) -> None:
    for folder in case["dirs"]:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, content in case["files"].items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def run_upstream(module: Any, root: Path) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["compute_score.py", "--results_folder", str(root)]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            module.main()
    except Exception as exc:
        return {"stdout": out.getvalue(), "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        sys.argv = argv
    return {"stdout": out.getvalue(), "error": None}


def order_sensitive(root: Path) -> bool:
    """Would another summing order print other digits? (re-draw such random cases)"""
    for mode in sorted(os.listdir(root)):
        values: list[list[Any]] = [[], []]
        for folder, _, names in os.walk(root / mode):
            for name in names:
                if not name.endswith(".json"):
                    continue
                try:
                    stats = json.loads((Path(folder) / name).read_text(encoding="utf-8"))[
                        "statistics"
                    ]
                    pair = [stats["overall_success_rate"], stats["verifier_level_pass_rate"]]
                except Exception:
                    return False
                for which in (0, 1):
                    values[which].append(pair[which])
        for series in values:
            try:
                printed = {
                    f"{sum(order) / len(order) * 100.0:.2f}"
                    for order in (series, sorted(series, key=repr), series[::-1])
                    if order
                }
            except (TypeError, OverflowError):
                return False
            if len(printed) > 1:
                return True
    return False


def stored(case: dict[str, Any]) -> dict[str, Any]:
    files = [
        [
            name,
            {"base64": base64.b64encode(content).decode()}
            if isinstance(content, bytes)
            else content,
        ]
        for name, content in case["files"].items()
    ]
    return {"files": files, "dirs": case["dirs"]}


def main() -> None:
    module = compute_score()
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    specials = special_cases(rng)
    with tempfile.TemporaryDirectory() as scratch:
        while len(cases) < CASES:
            case = (
                specials.pop(0)
                if specials
                else chain_case(rng)
                if len(cases) % 12 == 0
                else random_case(rng)
            )
            root = Path(tempfile.mkdtemp(dir=scratch)) / "results"
            root.mkdir(parents=True)
            materialise(case, root)
            if "run_3" not in case["dirs"] and len(cases) % 12 != 0 and order_sensitive(root):
                continue
            cases.append(stored(case) | {"upstream": run_upstream(module, root)})
    OUT.write_text(
        json.dumps(
            {
                "generator_seed": SEED,
                "upstream": "ServiceNow/EnterpriseOps-Gym@271f2c3",
                "cases": cases,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
