"""A real Podman and a registry-free test image for the fleet tests (nox -s containers).

The image is a ``podman import`` of an empty root file system whose command runs
``eog-core serve-local`` on the gym's container port (8005) from this virtualenv;
``/usr``, ``/lib``, ``/lib64``, the Python installation, the virtualenv and the
checkout are bind-mounted read-only by each container run (``EOG_FLEET_RUN_ARGS``).
Every test ends with no container of ours left: the autouse fixture removes
stragglers in its ``finally`` and fails the test that left them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINE_ARGS = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"]
IMAGE = "localhost/eog-core-test-gym:latest"
LABEL = "io.eog-core.managed=1"


def podman(*args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["podman", *ENGINE_ARGS, *args], capture_output=True, text=True, check=False, timeout=300
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def our_containers() -> list[str]:
    return podman("ps", "-a", "-q", "--filter", f"label={LABEL}").split()


def _mounts() -> list[str]:
    paths = {Path("/usr"), Path("/lib"), Path(sys.base_prefix).resolve(), Path(sys.prefix), REPO}
    if Path("/lib64").is_dir():
        paths.add(Path("/lib64"))
    args: list[str] = []
    for path in sorted(paths):
        args += ["-v", f"{path}:{path}:ro"]
    if os.environ.get("PYTHONPATH"):  # a worktree's source ahead of the editable install
        args += ["--env", f"PYTHONPATH={os.environ['PYTHONPATH']}"]
    return args


def _build_image(work: Path) -> None:
    root = work / "rootfs"
    for folder in ("usr", "lib", "lib64", "tmp", "proc", "dev", "sys", "etc", "root", "work"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    archive = work / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(root, arcname=".")
    argv = [sys.executable, "-m", "eog_core", "serve-local", "--host", "0.0.0.0", "--port", "8005"]
    command = "CMD=" + json.dumps(argv, separators=(",", ":"))  # podman splits on spaces
    podman("import", "--change", command, str(archive), IMAGE)


@pytest.fixture(scope="session")
def fleet_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment under which ``eog-core`` runs the test image on Podman."""
    if shutil.which("podman") is None:
        message = (
            "podman is not installed (nox -s containers installs it: apt-get install podman runc)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    _build_image(tmp_path_factory.mktemp("image"))
    env = {
        **os.environ,
        "EOG_ENGINE": "podman",
        "EOG_FLEET_ENGINE_ARGS": " ".join(ENGINE_ARGS),
        "EOG_FLEET_IMAGE": IMAGE,
        "EOG_FLEET_RUN_ARGS": " ".join(_mounts()),
        "OPENAI_API_KEY": "",
    }
    try:
        yield env
    finally:
        leftovers = our_containers()
        if leftovers:
            podman("rm", "-f", "-t", "0", *leftovers, check=False)


@pytest.fixture(autouse=True)
def no_container_left(fleet_env: dict[str, str]) -> Iterator[None]:
    before = our_containers()
    assert before == [], f"containers of ours before the test: {before}"
    try:
        yield
    finally:
        left = our_containers()
        if left:
            podman("rm", "-f", "-t", "0", *left, check=False)
    assert left == [], f"the test left {len(left)} container(s) behind"
