"""``eog-core report``: one self-contained HTML page of one or more runs (docs/report.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eog_core.cli._common import EXIT_OK, add_command, busy
from eog_core.cli._trust import add_certificates_option, read_certificates_option
from eog_core.errors import UsageError
from eog_core.metrics import Price
from eog_core.tasks import load_tasks

__all__ = ["add_parser"]


def _price(text: str) -> Price:
    try:
        return Price.parse(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(commands: Any) -> None:
    report = add_command(
        commands,
        "report",
        help="a self-contained HTML report of one or more runs",
        description="Read run folders (rollouts.jsonl from `eog-core run` or the gateway) or upstream "
        "result folders and write one HTML file that opens offline: overview with "
        "intervals, pass@k and pass^k, tasks, transcripts with verdict tables, paired "
        "tests between runs, RL task bands. The numbers are those of `eog-core score` "
        "and `compare`. Needs the report extra (pip install 'eog-core[report]'); "
        "exits 3 without it, or when a run cannot be read.",
        epilog="example: eog-core report runs/gpt-4.1 runs/o3 -o report.html --price gpt-4.1=2,8,0.5",
    )
    report.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="a run folder, a rollouts .jsonl file or an upstream result folder; the "
        "first is the baseline the others are compared with",
    )
    report.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="the HTML file to write"
    )
    report.add_argument(
        "--title", default="EOG evaluation report", help="the page's title and heading"
    )
    report.add_argument(
        "--price",
        action="append",
        type=_price,
        default=[],
        metavar="MODEL=IN,OUT[,CACHED]",
        help="price per million input, output and cached input tokens of a model "
        "(repeatable); cached tokens cost the input price when CACHED is left out",
    )
    report.add_argument(
        "--tasks", type=Path, help="the task files (or .jsonl rows), to show each rollout's prompts"
    )
    report.add_argument(
        "--replay",
        type=Path,
        metavar="DIR",
        help="an `eog-core replay` output folder (its replay.json): show the run's reproducibility",
    )
    report.add_argument(
        "--n-boot",
        type=int,
        default=10000,
        metavar="N",
        help="bootstrap resamples of the paired comparison, as `compare --n-boot` "
        "(default 10000; about 9 s per policy for two runs of 2,500 tasks)",
    )
    report.add_argument(
        "--seed", type=int, default=0, help="the bootstrap's seed, as `compare --seed`"
    )
    report.add_argument(
        "--bands-json",
        type=Path,
        metavar="FILE",
        help="also write the RL task bands (tasks by pass rate over repeats) as JSON",
    )
    add_certificates_option(
        report, "marks each task certified, clean, flagged or unchecked, with an overview panel"
    )
    report.set_defaults(handler=run_report)


def _output_folder_exists(path: Path, flag: str) -> None:
    """Refuse, before any work, a file to write that cannot be: a folder, or in none."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: that is a folder; give the file to write")
    if not path.parent.is_dir():
        raise UsageError(f"{flag} {path}: no folder {path.parent} to write it in (create it first)")


def _check_prices(prices: Sequence[Price], sources: Sequence[Any]) -> None:
    """Each ``--price`` names a model of the runs, once (a typo would leave the cost blank)."""
    models = sorted({m for s in sources for r in s.records if isinstance(m := r.get("model"), str)})
    seen: set[str] = set()
    for price in prices:
        if price.model in seen:
            raise UsageError(f"--price {price.model}: given twice")
        seen.add(price.model)
        if price.model not in models:
            known = ", ".join(models) if models else "none (upstream result folders name no model)"
            raise UsageError(
                f"--price {price.model}: no rollout of the run(s) is of that model; "
                f"the runs' models: {known}"
            )


def _replay(path: Path | None) -> dict[str, Any] | None:
    """``--replay DIR``: its ``replay.json``, checked to be one; a bad one is a UsageError."""
    if path is None:
        return None
    from eog_core.replay import REPLAY_FILE, REPLAY_FORMAT

    file = path / REPLAY_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--replay {path}: cannot read {file} ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != REPLAY_FORMAT:
        raise UsageError(f"--replay {path}: {file} is not an {REPLAY_FORMAT} result")
    return data


def _write(path: Path, write: Callable[[Path], object]) -> None:
    try:
        write(path)
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc}") from exc


def run_report(args: argparse.Namespace) -> int:
    from eog_core.metrics import task_digests
    from eog_core.report import (
        bands_json,
        build_content,
        load_run,
        paused_gc,
        require_extra,
        write_html,
    )

    require_extra()
    _output_folder_exists(args.output, "-o")
    if args.bands_json:
        _output_folder_exists(args.bands_json, "--bands-json")
    certificates = read_certificates_option(args.certificates)
    replay = _replay(args.replay)
    tasks = (
        {task.task_id: task for task in load_tasks(args.tasks) if task.task_id}
        if args.tasks
        else None
    )
    with paused_gc(), busy("reading runs"):
        sources = [load_run(path) for path in args.runs]
    _check_prices(args.price, sources)
    with paused_gc(), busy("building the report"):
        content = build_content(
            sources,
            title=args.title,
            prices=args.price,
            tasks=tasks,
            n_boot=args.n_boot,
            seed=args.seed,
            certificates=certificates,
            task_digests=task_digests(args.tasks)
            if certificates is not None and args.tasks
            else None,
            replay=replay,
        )
        _write(args.output, lambda path: write_html(content, path))
    if args.bands_json:
        data = bands_json(content)
        _write(args.bands_json, lambda path: path.write_bytes(data))
    print(
        f"report: {args.output} ({len(content.rows)} rollouts of {len(sources)} run(s))",
        file=sys.stderr,
    )
    return EXIT_OK
