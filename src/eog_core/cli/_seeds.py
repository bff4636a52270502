"""``eog-core seeds unpack``: the seed archive checked and unpacked, and what it provides."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from eog_core.cli._common import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    add_common_options,
    emit_json,
)
from eog_core.fleet import (
    SEED_ARCHIVE_REVISION,
    SEED_ARCHIVE_SHA256,
    missing_seed_files,
    unpack_seeds,
)
from eog_core.tasks import load_tasks

__all__ = ["add_parser"]


def add_parser(commands: Any) -> None:
    seeds = add_command(
        commands,
        "seeds",
        help="the seed database archive (gym_dbs.zip)",
        description="Unpack upstream's gym_dbs.zip after checking its pinned sha256.\n"
        "gym_dbs.zip is at the root of upstream's repository, ServiceNow/EnterpriseOps-Gym\n"
        f"(revision {SEED_ARCHIVE_REVISION[:12]}; docs/real-benchmark.md section 3).",
        epilog="example: eog-core seeds unpack gym_dbs.zip --to seeds/",
    )
    sub = seeds.add_subparsers(dest="seeds_command", required=True, metavar="ACTION")
    unpack = add_command(
        sub,
        "unpack",
        help="check and unpack gym_dbs.zip (run/validate --seed-root DIR)",
        description="Check gym_dbs.zip's sha256, then unpack it as the folder --to, all or\n"
        "nothing: every member's path and size is checked first, and the folder appears\n"
        "only once every member was read whole. An existing non-empty --to is refused\n"
        "unless --force, which replaces it whole.",
        epilog="examples:\n"
        "  eog-core seeds unpack gym_dbs.zip --to seeds/\n"
        "  eog-core seeds unpack gym_dbs.zip --to seeds/ --force --for eog-dataset\n"
        "  eog-core run ... --seed-root seeds/",
    )
    add_common_options(unpack)
    unpack.add_argument("archive", type=Path, help="the seed archive (gym_dbs.zip)")
    unpack.add_argument(
        "--to", type=Path, required=True, metavar="DIR", help="the folder to unpack into"
    )
    unpack.add_argument(
        "--force",
        action="store_true",
        help="replace an existing non-empty --to whole (its old files are removed)",
    )
    check = unpack.add_mutually_exclusive_group()
    check.add_argument(
        "--sha256",
        metavar="HEX",
        help=f"expect this digest (default: upstream's {SEED_ARCHIVE_SHA256[:12]}...)",
    )
    check.add_argument(
        "--no-verify",
        action="store_true",
        help="do not check the digest (the size limits still apply)",
    )
    unpack.add_argument(
        "--for",
        dest="for_tasks",
        nargs="+",
        type=Path,
        metavar="TASK_PATH",
        help="then say which of these tasks' seed files are missing",
    )
    unpack.add_argument("--json", action="store_true", help="print the result as JSON")
    unpack.set_defaults(handler=_unpack)


def _unpack(args: argparse.Namespace) -> int:
    expected = None if args.no_verify else (args.sha256 or SEED_ARCHIVE_SHA256)
    if expected is not None and not (
        len(expected) == 64 and all(c in "0123456789abcdefABCDEF" for c in expected)
    ):
        print(
            f"eog-core seeds unpack: error: --sha256 takes 64 hex digits, got {expected!r}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    result = unpack_seeds(args.archive, args.to, sha256=expected, replace=args.force)
    missing = (
        missing_seed_files([t for path in args.for_tasks for t in load_tasks(path)], args.to)
        if args.for_tasks
        else []
    )
    check = (
        f"sha256 {result.sha256} verified"
        if result.verified
        else f"sha256 {result.sha256} NOT verified (--no-verify)"
    )
    if args.json:
        emit_json(
            {
                "to": str(args.to),
                "files": result.files,
                "sha256": result.sha256,
                "verified": result.verified,
                "seed_files": result.seed_files,
                "missing": missing,
            }
        )
    else:
        print(f"unpacked {result.files} file(s) into {args.to}; {check}")
        for domain, count in result.seed_files.items():
            print(f"  {domain}: {count} seed file(s)")
        if not result.seed_files:
            print(
                "  no seed files found (expected <DIR>/Domain Wise DBs and Task-DB Mappings/"
                "<domain>/dbs/*.sql)"
            )
        if args.for_tasks:
            print(f"tasks' seed files missing: {len(missing)}")
            for name in missing[:20]:
                print(f"  {name}")
        print(f"use with: eog-core run ... --seed-root {args.to}")
    return EXIT_INPUT if missing else EXIT_OK
