"""The seed archive ``gym_dbs.zip``: check its pinned sha256, unpack it safely, and
say which seed files the tasks name are then found.

Unpacking is all or nothing: every member's path and size is checked before
anything is written, the members are written into a fresh folder beside the
target (never through a file or link already there), and that folder takes the
target's place only once every member was read whole and passed its CRC check.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import attrs

from eog_core.errors import SeedArchiveError
from eog_core.tasks import Task

__all__ = [
    "MAX_UNPACKED_BYTES",
    "MAX_UNPACKED_RATIO",
    "SEED_ARCHIVE_REVISION",
    "SEED_ARCHIVE_SHA256",
    "SEED_ROOT_FOLDER",
    "UnpackedSeeds",
    "missing_seed_files",
    "sha256_of",
    "unpack_seeds",
]

SEED_ARCHIVE_REVISION = "271f2c357f763376997dfd16807fcde2474ae41b"
"""The upstream revision (of ServiceNow/EnterpriseOps-Gym) whose root holds ``gym_dbs.zip``."""
SEED_ARCHIVE_SHA256 = "d947543d4fba1aabc4aade73d3df955114187b7a94da7ac825c4c31169ddab47"
"""``gym_dbs.zip`` at upstream revision 271f2c357f763376997dfd16807fcde2474ae41b."""
SEED_ROOT_FOLDER = "Domain Wise DBs and Task-DB Mappings"
MAX_UNPACKED_BYTES = 16 << 30
"""The most an archive may unpack to (16 GiB), checked whatever the digest check."""
MAX_UNPACKED_RATIO = 250
"""The most a member larger than 1 MiB may expand over its compressed size (SQL dumps
compress some 5 to 20 times; a zip bomb, thousands)."""
MAX_MEMBERS = 200_000
_RATIO_FROM = 1 << 20
_MSDOS_DIRECTORY = 0x10


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


def _is_directory(info: zipfile.ZipInfo, name: str) -> bool:
    """A folder entry: a trailing slash (or backslash), or a folder's mode bits (Unix or
    MS-DOS: Windows tools write ``folder\\`` with the MS-DOS directory attribute)."""
    return (
        name.endswith("/")
        or stat.S_ISDIR(info.external_attr >> 16)
        or bool(info.external_attr & _MSDOS_DIRECTORY)
    )


def _outside(name: str) -> SeedArchiveError:
    return SeedArchiveError(
        f"archive member {name!r} would land outside the target folder; "
        "refused (nothing was unpacked)",
        path=name,
    )


def _member_path(info: zipfile.ZipInfo) -> tuple[PurePosixPath, bool]:
    """Where a member lands, relative to the target, and whether it is a folder; refuses
    absolute paths, ``..``, drive letters and symbolic links."""
    name = info.filename.replace("\\", "/")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise SeedArchiveError(f"archive member {name!r} is a symbolic link; refused", path=name)
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise _outside(name)
    return PurePosixPath(*(part for part in pure.parts if part != ".")), _is_directory(info, name)


def _check_sizes(
    infos: list[zipfile.ZipInfo], source: Path, *, max_bytes: int, max_ratio: float
) -> None:
    """Refuse an archive that would unpack to more than ``max_bytes``, a member that
    expands more than ``max_ratio`` times, or too many members (a zip bomb)."""
    if len(infos) > MAX_MEMBERS:
        raise SeedArchiveError(
            f"seed archive {source} has {len(infos):,} members, more than the "
            f"{MAX_MEMBERS:,} allowed; refused (nothing was unpacked)",
            path=str(source),
        )
    total = sum(info.file_size for info in infos)
    if total > max_bytes:
        raise SeedArchiveError(
            f"seed archive {source} would unpack to {total:,} bytes, more than the "
            f"{max_bytes:,} allowed; refused (nothing was unpacked)",
            path=str(source),
        )
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FROM and ratio > max_ratio:
            raise SeedArchiveError(
                f"archive member {info.filename!r} expands {ratio:,.0f} times "
                f"({info.compress_size:,} to {info.file_size:,} bytes), more than the "
                f"{max_ratio:g} allowed; refused (nothing was unpacked)",
                path=info.filename,
            )


def _extract(
    bundle: zipfile.ZipFile, infos: list[zipfile.ZipInfo], staging: Path, source: Path
) -> int:
    """Write every member under the fresh folder ``staging``; the number of files."""
    written = 0
    for info in infos:
        relative, is_folder = _member_path(info)
        destination = staging.joinpath(*relative.parts)
        if is_folder:
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        left = info.file_size
        try:
            with bundle.open(info) as member, destination.open("xb") as out:
                while block := member.read(1 << 20):
                    left -= len(block)
                    if left < 0:
                        raise zipfile.BadZipFile(f"more data than its {info.file_size} bytes")
                    out.write(block)
        except FileExistsError:
            raise SeedArchiveError(
                f"archive member {info.filename!r} is given twice; refused (nothing was unpacked)",
                path=info.filename,
            ) from None
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            why = "fails its CRC check" if "CRC" in str(exc) else f"cannot be read ({exc})"
            raise SeedArchiveError(
                f"seed archive {source} is damaged: member {info.filename!r} {why}; "
                "nothing was unpacked (download it again)",
                path=info.filename,
            ) from exc
        except (NotImplementedError, RuntimeError) as exc:  # a compression or encryption
            raise SeedArchiveError(
                f"archive member {info.filename!r} cannot be unpacked: {exc}",
                path=info.filename,
            ) from exc
        written += 1
    return written


def _refuse_existing(root: Path, replace: bool) -> None:
    """A target that is not a folder is refused; a non-empty one unless ``replace``."""
    if root.is_dir():
        if not replace and any(root.iterdir()):
            raise SeedArchiveError(
                f"{root} is not empty; nothing was unpacked (pass --force to replace the "
                "folder whole, or choose another --to)",
                path=str(root),
            )
    elif root.exists() or root.is_symlink():
        raise SeedArchiveError(
            f"{root} exists and is not a folder; nothing was unpacked", path=str(root)
        )


def _refuse_replacing_what_is_in_use(source: Path, root: Path) -> None:
    """``--force`` replaces ``root`` whole: never when the archive or the working folder is in it."""
    whole = root.resolve()
    if whole in source.resolve().parents:
        raise SeedArchiveError(
            f"the archive {source} is inside {root}, which --force would replace whole (the "
            "archive with it); nothing was unpacked: move the archive out or choose another --to",
            path=str(root),
        )
    here = Path.cwd().resolve()
    if here == whole or whole in here.parents:
        raise SeedArchiveError(
            f"{root} holds the working folder, which --force cannot replace; nothing was "
            "unpacked: choose another --to",
            path=str(root),
        )


def unpack_seeds(
    archive: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    sha256: str | None = SEED_ARCHIVE_SHA256,
    replace: bool = False,
    max_bytes: int = MAX_UNPACKED_BYTES,
    max_ratio: float = MAX_UNPACKED_RATIO,
) -> UnpackedSeeds:
    """Check ``archive`` against ``sha256`` (None: no check), then unpack it as the folder
    ``target``: all or nothing (see the module docstring).

    A ``target`` that exists and is not empty is refused unless ``replace``, which
    replaces it whole (no stale file stays). ``max_bytes`` and ``max_ratio`` bound what
    the archive may unpack to, whether or not its digest was checked.
    """
    source, root = Path(archive), Path(target)
    _refuse_existing(root, replace)
    if replace and root.is_dir():
        _refuse_replacing_what_is_in_use(source, root)
    try:
        actual = sha256_of(source)
    except OSError as exc:
        raise SeedArchiveError(
            f"cannot read seed archive {source}: {exc.strerror or exc}", path=str(source)
        ) from exc
    if sha256 is not None and actual != sha256.lower():
        raise SeedArchiveError(
            f"seed archive {source} has sha256 {actual}, expected {sha256} "
            "(another revision? pass --sha256 HEX or --no-verify)",
            path=str(source),
        )
    try:
        bundle = zipfile.ZipFile(source)
    except zipfile.BadZipFile as exc:
        raise SeedArchiveError(f"{source} is not a zip archive: {exc}", path=str(source)) from exc
    with bundle:
        infos = bundle.infolist()
        for info in infos:
            _member_path(info)  # every path checked before anything is written
        _check_sizes(infos, source, max_bytes=max_bytes, max_ratio=max_ratio)
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.unpacking-", dir=root.parent))
        try:
            written = _extract(bundle, infos, staging, source)
            _put_in_place(staging, root)
        except OSError as exc:  # a full disk, a file and a folder of one name
            raise SeedArchiveError(
                f"cannot unpack {source} into {root}: {exc}; nothing was unpacked",
                path=str(root),
            ) from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return UnpackedSeeds(
        target=root,
        files=written,
        sha256=actual,
        verified=sha256 is not None,
        seed_files=_seed_counts(root),
    )


def _put_in_place(staging: Path, root: Path) -> None:
    """The unpacked folder takes the target's place (the old one, if any, is removed)."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's 0700 would hide the seeds from the gyms
    if not (root.exists() or root.is_symlink()):
        staging.rename(root)
        return
    old = staging.with_name(staging.name + ".old")
    root.rename(old)
    try:
        staging.rename(root)
    except OSError:
        old.rename(root)
        raise
    if old.is_symlink() or not old.is_dir():
        old.unlink()
    else:
        shutil.rmtree(old, ignore_errors=True)


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
