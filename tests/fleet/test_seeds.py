"""The seed archive: sha256 pinned or given, members that would escape refused, the
seed files found; and ``eog-core seeds unpack`` around it."""

from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from pathlib import Path

import pytest

from eog_core import load_task
from eog_core.cli import main
from eog_core.errors import SeedArchiveError
from eog_core.fleet import SEED_ROOT_FOLDER, missing_seed_files, sha256_of, unpack_seeds
from tests.datasets import EXAMPLES

CSM_SEED = f"{SEED_ROOT_FOLDER}/csm/dbs/db_demo.sql"


def archive(path: Path, members: dict[str, str], *, symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as bundle:
        for name, text in members.items():
            bundle.writestr(name, text)
        if symlink is not None:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            bundle.writestr(info, "/etc/passwd")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_matching_sha256_unpacks_and_counts_seed_files_per_domain(tmp_path: Path) -> None:
    zipped = archive(
        tmp_path / "gym_dbs.zip",
        {
            CSM_SEED: "CREATE TABLE t (x);",
            f"{SEED_ROOT_FOLDER}/itsm/dbs/db_a.sql": "",
            f"{SEED_ROOT_FOLDER}/itsm/dbs/db_b.sql": "",
            f"{SEED_ROOT_FOLDER}/itsm/mapping.csv": "",
        },
    )
    result = unpack_seeds(zipped, tmp_path / "out", sha256=digest(zipped))
    assert (result.files, result.verified, result.seed_files) == (4, True, {"csm": 1, "itsm": 2})
    assert result.sha256 == sha256_of(zipped)
    assert (tmp_path / "out" / CSM_SEED).read_text() == "CREATE TABLE t (x);"


def test_another_sha256_refuses_before_writing_anything(tmp_path: Path) -> None:
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: ""})
    with pytest.raises(SeedArchiveError, match=f"has sha256 {digest(zipped)}, expected d947543d"):
        unpack_seeds(zipped, tmp_path / "out")  # the pinned upstream digest
    assert not (tmp_path / "out").exists()
    assert unpack_seeds(zipped, tmp_path / "out", sha256=None).verified is False


@pytest.mark.parametrize(
    "name",
    [
        "../escape.sql",
        "/abs/escape.sql",
        "a/../../escape.sql",
        "C:/escape.sql",
        "a\\..\\..\\escape.sql",
    ],
)
def test_members_that_would_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    zipped = archive(tmp_path / "bad.zip", {CSM_SEED: "", name: "x"})
    with pytest.raises(SeedArchiveError, match="outside the target folder") as caught:
        unpack_seeds(zipped, tmp_path / "out" / "in", sha256=None)
    assert caught.value.path == name.replace("\\", "/")
    assert not (tmp_path / "out").exists()  # every member is checked before any is written
    assert not (tmp_path / "escape.sql").exists()


def test_a_symbolic_link_member_is_refused(tmp_path: Path) -> None:
    zipped = archive(tmp_path / "link.zip", {}, symlink="seeds/link")
    with pytest.raises(SeedArchiveError, match="symbolic link"):
        unpack_seeds(zipped, tmp_path / "out", sha256=None)


def test_missing_seed_files_names_each_once(tmp_path: Path) -> None:
    tasks = [load_task(p) for p in sorted((EXAMPLES / "tasks").rglob("*.json"))]
    names = [
        "example/csm/seed_cases.sql",
        "example/csm/seed_entitlement.sql",
        "example/itsm/seed_incidents.sql",
    ]
    assert missing_seed_files(tasks * 2, tmp_path) == names
    (tmp_path / "example" / "csm").mkdir(parents=True)
    (tmp_path / names[1]).write_text("")
    assert missing_seed_files(tasks, tmp_path) == [names[0], names[2]]


def test_cli_unpack_says_what_it_checked_and_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: ""})
    assert (
        main(
            [
                "seeds",
                "unpack",
                str(zipped),
                "--to",
                str(tmp_path / "a"),
                "--sha256",
                digest(zipped),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"sha256 {digest(zipped)} verified" in out and "csm: 1 seed file(s)" in out
    assert (
        main(["seeds", "unpack", str(zipped), "--to", str(tmp_path / "b"), "--no-verify", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["verified"] is False
    assert main(["seeds", "unpack", str(zipped), "--to", str(tmp_path / "c")]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("eog-core seeds: SeedArchiveError:") and "expected d947543d" in err
    assert len(err.splitlines()) == 1
    assert (
        main(["seeds", "unpack", str(zipped), "--to", str(tmp_path / "d"), "--sha256", "xyz"]) == 2
    )
    assert "--sha256 takes 64 hex digits" in capsys.readouterr().err


def test_cli_unpack_for_tasks_names_the_missing_seed_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: ""})
    code = main(
        [
            "seeds",
            "unpack",
            str(zipped),
            "--to",
            str(tmp_path / "a"),
            "--no-verify",
            "--for",
            str(EXAMPLES / "tasks"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "tasks' seed files missing:" in out and "NOT verified (--no-verify)" in out


def test_validate_seed_root_names_the_missing_files_and_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(EXAMPLES / "tasks")]) == 0
    capsys.readouterr()
    assert main(["validate", str(EXAMPLES / "tasks"), "--seed-root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"3 seed file(s) missing under {tmp_path} (eog-core seeds unpack gym_dbs.zip" in out
    assert "  example/itsm/seed_incidents.sql" in out


def test_a_missing_archive_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.zip"
    assert main(["seeds", "unpack", str(missing), "--to", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err.strip()
    assert f"cannot read seed archive {missing}: No such file or directory" in err


def test_unpacking_never_writes_through_a_hard_link_into_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.sql"
    outside.write_text("mine")
    target = tmp_path / "out"
    (target / SEED_ROOT_FOLDER / "csm" / "dbs").mkdir(parents=True)
    (target / CSM_SEED).hardlink_to(outside)
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: "CREATE TABLE t (x);"})
    unpack_seeds(zipped, target, sha256=None, replace=True)
    assert outside.read_text() == "mine"
    assert (target / CSM_SEED).read_text() == "CREATE TABLE t (x);"


def test_an_existing_folder_is_refused_unless_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "stale.sql").write_text("old")
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: "new"})
    with pytest.raises(
        SeedArchiveError, match=r"is not empty; nothing was unpacked \(pass --force"
    ):
        unpack_seeds(zipped, target, sha256=None)
    assert sorted(p.name for p in target.iterdir()) == ["stale.sql"]
    unpack_seeds(zipped, target, sha256=None, replace=True)
    assert not (target / "stale.sql").exists()
    assert (target / CSM_SEED).read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gym_dbs.zip", "out"]  # no leftovers
    (tmp_path / "file").write_text("")
    with pytest.raises(SeedArchiveError, match="exists and is not a folder"):
        unpack_seeds(zipped, tmp_path / "file", sha256=None, replace=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert unpack_seeds(zipped, empty, sha256=None).files == 1


def test_cli_force_replaces_and_without_it_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zipped = archive(tmp_path / "gym_dbs.zip", {CSM_SEED: ""})
    target = tmp_path / "seeds"
    argv = ["seeds", "unpack", str(zipped), "--to", str(target), "--no-verify"]
    assert main(argv) == 0
    assert main(argv) == 3
    err = capsys.readouterr().err.strip()
    assert f"{target} is not empty; nothing was unpacked (pass --force" in err
    assert main([*argv, "--force"]) == 0


def test_a_crc_error_leaves_nothing_and_says_so(tmp_path: Path) -> None:
    zipped = tmp_path / "gym_dbs.zip"
    with zipfile.ZipFile(zipped, "w") as bundle:  # stored: the member's bytes appear as written
        bundle.writestr("first.sql", "fine")
        bundle.writestr(CSM_SEED, "CREATE TABLE t (x);" * 100)
    data = bytearray(zipped.read_bytes())
    at = data.index(b"CREATE TABLE t (x);") + 7
    data[at] ^= 0xFF
    zipped.write_bytes(bytes(data))
    with pytest.raises(SeedArchiveError, match=r"is damaged: member .*db_demo.sql' fails its CRC"):
        unpack_seeds(zipped, tmp_path / "out", sha256=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gym_dbs.zip"]  # no partial folder


def test_size_and_ratio_limits_apply_without_a_digest_check(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(CSM_SEED, b"\0" * (8 << 20))
    with pytest.raises(SeedArchiveError, match=r"expands [\d,]+ times .* more than the 250"):
        unpack_seeds(bomb, tmp_path / "out", sha256=None)
    with pytest.raises(SeedArchiveError, match=r"would unpack to 8,388,608 bytes, more than"):
        unpack_seeds(bomb, tmp_path / "out", sha256=digest(bomb), max_bytes=1 << 20)
    assert not (tmp_path / "out").exists()


def test_a_windows_made_archive_with_folder_entries_and_backslashes(tmp_path: Path) -> None:
    zipped = tmp_path / "gym_dbs.zip"
    with zipfile.ZipFile(zipped, "w") as bundle:
        for folder in ("", "\\csm", "\\csm\\dbs"):
            info = zipfile.ZipInfo(f"{SEED_ROOT_FOLDER}{folder}\\")
            info.create_system, info.external_attr = 0, 0x10  # MS-DOS, directory attribute
            bundle.writestr(info, b"")
        info = zipfile.ZipInfo(f"{SEED_ROOT_FOLDER}\\csm\\dbs\\db_demo.sql")
        info.create_system, info.external_attr = 0, 0x20  # MS-DOS, archive attribute
        bundle.writestr(info, "CREATE TABLE t (x);")
    result = unpack_seeds(zipped, tmp_path / "out", sha256=None)
    assert (result.files, result.seed_files) == (1, {"csm": 1})
    assert (tmp_path / "out" / CSM_SEED).read_text() == "CREATE TABLE t (x);"


def test_force_never_replaces_a_folder_holding_the_archive_or_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``seeds unpack seeds/gym_dbs.zip --to seeds --force`` would delete the download."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    zipped = archive(seeds / "gym_dbs.zip", {CSM_SEED: "new"})
    (seeds / "precious.txt").write_text("keep")
    with pytest.raises(SeedArchiveError, match=r"the archive .* is inside .*nothing was unpacked"):
        unpack_seeds(zipped, seeds, sha256=None, replace=True)
    assert sorted(p.name for p in seeds.iterdir()) == ["gym_dbs.zip", "precious.txt"]
    outside = archive(tmp_path / "other.zip", {CSM_SEED: "new"})
    monkeypatch.chdir(seeds)
    with pytest.raises(SeedArchiveError, match="holds the working folder"):
        unpack_seeds(outside, Path("."), sha256=None, replace=True)
    assert sorted(p.name for p in seeds.iterdir()) == ["gym_dbs.zip", "precious.txt"]
