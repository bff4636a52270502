"""``eog-core certify`` on the local gym: exit codes 0/1/2/3, the summary table, ``--json``,
``--out DIR`` (one certificate per task, as docs/certify.md's "The certificate"), and no
database left on the gym."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eog_core.certify import CERTIFICATE_SCHEMA, read_certificates, sha256_hex
from eog_core.cli import main
from eog_core.local import LocalGym, demo_paths
from tests.certify.test_certify import DEMO_SCRIPTS, TASK_ID, demo_task, verifier


def clean_task() -> dict[str, Any]:
    """The demo task without the defects it plants for ``validate`` (a duplicate verifier
    name, a verifier reading the clock): nothing static to find, so only gyms can flag it."""
    task = demo_task()
    task["verifiers"] = [
        v
        for v in task["verifiers"]
        if "'now'" not in v["validation_config"]["query"]
        and "ORDER BY number DESC" not in v["validation_config"]["query"]
    ]
    return task


def write(tmp_path: Path, task: dict[str, Any], name: str = "task.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(task, indent=2))
    return path


@pytest.fixture
def gym() -> Iterator[LocalGym]:
    """The demo gym on a thread of its own (``main`` runs its own event loop); every test
    ends with no database left on it."""
    with LocalGym.demo().run_in_thread() as served:
        yield served
        assert served.database_ids() == []


def certify(gym: LocalGym, *args: str | Path) -> int:
    return main(["certify", *map(str, args), "--gym", f"{gym.name}={gym.url}"])


def test_certified_task_exits_0_with_its_certificate_written(
    tmp_path: Path, gym: LocalGym, capsys: pytest.CaptureFixture[str]
) -> None:
    task_file = write(tmp_path, clean_task())
    out = tmp_path / "certificates"
    assert certify(gym, task_file, "--scripts", DEMO_SCRIPTS, "--out", out) == 0
    printed = capsys.readouterr().out
    header, _, row, *rest = printed.splitlines()
    assert header.split() == [
        "task",
        "status",
        "findings",
        "do-nothing",
        "oracle",
        "counterexamples",
    ]
    assert row.split() == [TASK_ID, "certified", "-", "fail", "pass", "0/3", "pass"]
    assert "1 certified" in rest and f"certificates in {out}" in rest
    assert [p.name for p in out.iterdir()] == [f"{TASK_ID}.certificate.json"]
    written = json.loads((out / f"{TASK_ID}.certificate.json").read_text())
    assert written["schema"] == CERTIFICATE_SCHEMA
    assert written["task_file"] == str(task_file)
    assert written["task_sha256"] == sha256_hex(task_file.read_bytes())
    seed = demo_paths().seed_sql
    assert written["seed_files"] == {
        gym.name: {"path": str(seed), "sha256": sha256_hex(seed.read_bytes())}
    }
    assert written["status"] == "certified" and written["findings"] == []
    assert set(written["checks"]) == {
        "static",
        "do_nothing",
        "oracle",
        "counterexamples",
        "sensitivity",
        "row_counts",
    }
    assert read_certificates(out)[TASK_ID].status == "certified"


def test_flagged_task_exits_1_and_json_holds_every_certificate(
    tmp_path: Path, gym: LocalGym, capsys: pytest.CaptureFixture[str]
) -> None:
    flagged = clean_task()
    flagged["task_id"] = "no_table"
    flagged["verifiers"].append(verifier("gone", "SELECT COUNT(*) FROM no_such_table", 0))
    files = [write(tmp_path, clean_task()), write(tmp_path, flagged, "flagged.json")]
    assert certify(gym, *files, "--json", "--concurrency", "2") == 1
    report = json.loads(capsys.readouterr().out)
    assert report["databases_left"] == []
    by_id = {c["task_id"]: c for c in report["certificates"]}
    assert by_id[TASK_ID]["status"] == "clean"  # no --scripts: no oracle to certify it
    assert by_id[TASK_ID]["checks"]["oracle"] is None
    assert by_id["no_table"]["status"] == "flagged"
    assert [(f["kind"], f["verifier"]) for f in by_id["no_table"]["findings"]] == [
        ("sql_fails_on_seed", "gone")
    ]
    assert certify(gym, files[0]) == 0


def test_flagged_task_table_names_its_kinds(
    tmp_path: Path, gym: LocalGym, capsys: pytest.CaptureFixture[str]
) -> None:
    task = clean_task()
    task["verifiers"].append(
        verifier("account_exists", "SELECT COUNT(*) FROM account WHERE sys_id = 'acc_001'", 1)
    )
    out = tmp_path / "out"
    assert certify(gym, write(tmp_path, task), "--scripts", DEMO_SCRIPTS, "--out", out) == 1
    row = capsys.readouterr().out.splitlines()[2]
    assert row.split()[:3] == [TASK_ID, "flagged", "verifier_insensitive"]
    (certificate,) = read_certificates(out).values()
    assert [(f.kind, f.verifier) for f in certificate.findings] == [
        ("verifier_insensitive", "account_exists")
    ]


def test_unreachable_gym_exits_3_with_an_incomplete_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as bound:  # bound, never listening: a connection is refused
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}"
        out = tmp_path / "out"
        code = main(
            [
                "certify",
                str(write(tmp_path, clean_task())),
                "--gym",
                f"demo-csm-server={url}",
                "--scripts",
                str(DEMO_SCRIPTS),
                "--out",
                str(out),
                "--timeout",
                "10",
            ]
        )
    assert code == 3
    printed = capsys.readouterr().out
    assert "1 incomplete" in printed
    assert f"{TASK_ID}: could not complete: " in printed and "cannot connect" in printed
    certificate = read_certificates(out)[TASK_ID]
    assert certificate.status == "incomplete"
    assert "cannot connect" in certificate.checks["incomplete"]


def _bad_script(tmp_path: Path) -> list[str]:
    folder = tmp_path / "scripts" / TASK_ID
    folder.mkdir(parents=True)
    (folder / "oracle.script.json").write_text('{"script": [{"tool_calls": "x"}]}')
    return ["--scripts", str(tmp_path / "scripts")]


def _relative_seed(tmp_path: Path) -> list[str]:
    task = clean_task()
    task["task_id"] = "relative"
    task["gym_servers_config"][0]["seed_database_file"] = "seed.sql"
    return [str(write(tmp_path, task, "relative.json")), "--seed-root", str(tmp_path)]


def _twice(tmp_path: Path) -> list[str]:
    return [str(write(tmp_path, clean_task(), "copy.json"))]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (lambda tmp: [str(tmp / "nowhere.json")], "nowhere.json"),
        (lambda tmp: ["--concurrency", "0"], "--concurrency must be between 1"),
        (lambda tmp: ["--local"], "give --local or --gym/--gyms/--launch, not both"),
        (lambda tmp: ["--scripts", str(tmp / "none")], "--scripts"),
        (_bad_script, "oracle.script.json"),
        (_relative_seed, "the seed file of gym 'demo-csm-server' is not found"),
        (_twice, "(one certificate per task id"),
        (lambda tmp: ["--tools", str(tmp / "no-tools")], "no-tools"),
        (lambda tmp: ["--out", str(tmp / "task.json")], "is a file, not a folder"),
    ],
    ids=[
        "missing-task",
        "concurrency",
        "local-and-gym",
        "scripts-not-a-folder",
        "malformed-script",
        "seed-not-found",
        "one-id-twice",
        "tools-not-found",
        "out-is-a-file",
    ],
)
def test_bad_input_exits_2_in_one_line(
    tmp_path: Path, gym: LocalGym, capsys: pytest.CaptureFixture[str], extra: Any, message: str
) -> None:
    task_file = write(tmp_path, clean_task())
    assert certify(gym, task_file, *extra(tmp_path)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("eog-core certify: ") and message in line


@pytest.mark.parametrize(
    ("environ", "pinned"),
    [
        ({}, True),
        ({"EOG_FLEET_REGISTRY": "mirror.example/ns"}, True),
        ({"EOG_FLEET_IMAGE": "x:1"}, False),
    ],
)
def test_launched_images_are_recorded_by_digest_where_one_is_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], pinned: bool
) -> None:
    """``--launch`` records each used gym's image digest: the catalogue's, kept by a registry
    mirror, unknown for an image given by tag."""
    import argparse

    from eog_core.certify import load_sources
    from eog_core.cli._certify import _image_digests
    from eog_core.fleet import CATALOGUE

    for name in ("EOG_FLEET_REGISTRY", "EOG_FLEET_IMAGE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    task = clean_task()
    task["gym_servers_config"][0]["mcp_server_name"] = "sn-csm-server"
    for each in task["verifiers"]:
        each["gym_name"] = "sn-csm-server"
    sources = load_sources([write(tmp_path, task)])
    (csm,) = (s for s in CATALOGUE.values() if s.gym == "sn-csm-server")
    digests = _image_digests(argparse.Namespace(launch="podman"), sources)
    assert digests == ({"sn-csm-server": csm.digest} if pinned else {})
    assert _image_digests(argparse.Namespace(launch=None), sources) == {}


def test_a_mode_is_chosen_before_ids_are_checked(
    tmp_path: Path, gym: LocalGym, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dataset repeats each task id in every mode: ``--mode`` picks one before the
    one-certificate-per-id check, and only the chosen tasks' seeds must be there."""
    other = clean_task()
    other["mode"] = "plus_5_tools"
    other["gym_servers_config"][0]["seed_database_file"] = str(tmp_path / "not-unpacked.sql")
    files = [write(tmp_path, clean_task()), write(tmp_path, other, "plus5.json")]
    assert certify(gym, *files) == 2
    assert "choose one with --mode" in capsys.readouterr().err
    assert certify(gym, *files, "--mode", "oracle", "--json") == 0
    (certificate,) = json.loads(capsys.readouterr().out)["certificates"]
    assert certificate["task_file"] == str(files[0])


def test_the_demo_command_of_docs_certify_md_runs_as_written(tmp_path: Path) -> None:
    """docs/certify.md's demo command, in bash from a folder holding the repository's
    examples/: every gym check passes; a finding, if any, is one of the static kinds the
    demo task plants on purpose."""
    import shutil
    import subprocess
    import sys

    repo = DEMO_SCRIPTS.parents[1]
    text = (repo / "docs" / "certify.md").read_text(encoding="utf-8")
    (command,) = [
        block
        for block in text.split("```sh\n")[1:]
        if "examples/certify-scripts" in block.split("```", 1)[0]
    ]
    command = command.split("```", 1)[0]
    shutil.copytree(repo / "examples", tmp_path / "examples")
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'set -euo pipefail\neog-core() {{ "{sys.executable}" -m eog_core "$@"; }}\n' + command,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    certificate = read_certificates(tmp_path / "certificates")[TASK_ID]
    checks = certificate.checks
    assert checks["oracle"]["passed"] and checks["do_nothing"]["strict"] == "fail"
    assert not any(c["passed"] for c in checks["counterexamples"])
    assert set(certificate.kinds) == set(checks["static"]["kinds"])
    assert done.returncode == (1 if certificate.findings else 0)
