"""The seed archive ``gym_dbs.zip``: check its pinned sha256, unpack it safely, and
say which seed files the tasks name are then found."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import attrs

from eog_core.errors import SeedArchiveError
from eog_core.tasks import Task

__all__ = [
    "SEED_ARCHIVE_SHA256",
    "SEED_ROOT_FOLDER",
    "UnpackedSeeds",
    "missing_seed_files",
    "sha256_of",
    "unpack_seeds",
]

SEED_ARCHIVE_SHA256 = "d947543d4fba1aabc4aade73d3df955114187b7a94da7ac825c4c31169ddab47"
"""``gym_dbs.zip`` at upstream revision 271f2c357f763376997dfd16807fcde2474ae41b."""
SEED_ROOT_FOLDER = "Domain Wise DBs and Task-DB Mappings"


@attrs.frozen(kw_only=True)
class UnpackedSeeds:
    """What ``unpack_seeds`` did: files written, the digest and whether it was checked."""

    target: Path
    files: int
    sha256: str
    verified: bool
    seed_files: dict[str, int]
    """Domain -> number of ``.sql`` seed files under ``<root>/<domain>/dbs/``."""


def sha256_of(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _member_target(target: Path, info: zipfile.ZipInfo) -> Path:
    """Where a member lands; refuses absolute paths, ``..``, drive letters and symlinks."""
    name = info.filename.replace("\\", "/")
    pure = PurePosixPath(name)
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise SeedArchiveError(f"archive member {name!r} is a symbolic link; refused", path=name)
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise SeedArchiveError(
            f"archive member {name!r} would land outside the target folder; "
            "refused (nothing was unpacked)",
            path=name,
        )
    destination = (target / pure).resolve()
    if not destination.is_relative_to(target.resolve()):
        raise SeedArchiveError(
            f"archive member {name!r} would land outside the target folder; "
            "refused (nothing was unpacked)",
            path=name,
        )
    return destination


def unpack_seeds(
    archive: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    sha256: str | None = SEED_ARCHIVE_SHA256,
) -> UnpackedSeeds:
    """Check ``archive`` against ``sha256`` (None: no check), then unpack into ``target``.

    Every member's path is checked before anything is written.
    """
    source, root = Path(archive), Path(target)
    try:
        actual = sha256_of(source)
    except OSError as exc:
        raise SeedArchiveError(
            f"cannot read seed archive: {exc.strerror or exc}", path=str(source)
        ) from exc
    if sha256 is not None and actual != sha256.lower():
        raise SeedArchiveError(
            f"seed archive {source} has sha256 {actual}, expected {sha256} "
            "(another revision? pass --sha256 HEX or --no-verify)",
            path=str(source),
        )
    try:
        with zipfile.ZipFile(source) as bundle:
            plan = [(info, _member_target(root, info)) for info in bundle.infolist()]
            written = 0
            for info, destination in plan:
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(info) as member, destination.open("wb") as out:
                    shutil.copyfileobj(member, out)
                written += 1
    except zipfile.BadZipFile as exc:
        raise SeedArchiveError(f"{source} is not a zip archive: {exc}", path=str(source)) from exc
    return UnpackedSeeds(
        target=root,
        files=written,
        sha256=actual,
        verified=sha256 is not None,
        seed_files=_seed_counts(root),
    )


def _seed_counts(root: Path) -> dict[str, int]:
    base = root / SEED_ROOT_FOLDER
    if not base.is_dir():
        return {}
    return {
        folder.name: sum(1 for _ in (folder / "dbs").glob("*.sql"))
        for folder in sorted(base.iterdir())
        if (folder / "dbs").is_dir()
    }


def missing_seed_files(tasks: Iterable[Task], seed_root: str | os.PathLike[str]) -> list[str]:
    """The seed files the tasks name that are not under ``seed_root`` (sorted, once each)."""
    root = Path(seed_root)
    missing = {
        server.seed_database_file
        for task in tasks
        for server in task.gym_servers
        if server.seed_database_file and not (root / server.seed_database_file).is_file()
    }
    return sorted(missing)
