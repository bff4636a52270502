"""The fleet's pure parts: catalogue, image references, run arguments, labels, ports,
owners, options from the environment, and the Compose file text."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from eog_core import load_task
from eog_core.errors import FleetError, UsageError
from eog_core.fleet import (
    CATALOGUE,
    Container,
    ContainerEngine,
    FleetOptions,
    compose_file,
    domains_for_tasks,
    options_from_env,
    owner_of,
    services_for,
)
from eog_core.fleet._engine import owner_alive
from eog_core.fleet._owners import split_held
from eog_core.fleet._ports import ephemeral_range, spare_port
from eog_core.local import demo_paths
from tests.datasets import EXAMPLES


def test_the_catalogue_has_the_seven_gyms_with_their_ports_and_digests() -> None:
    assert {d: (s.gym, s.host_port, s.container_port) for d, s in CATALOGUE.items()} == {
        "csm": ("sn-csm-server", 8001, 8005),
        "teams": ("gym-teams-mcp", 8002, 8005),
        "calendar": ("gym-calendar", 8003, 8003),
        "email": ("gym-email-mcp", 8004, 8005),
        "itsm": ("gym-itsm-mcp", 8006, 8005),
        "hr": ("sn-hr-internal", 8008, 8005),
        "drive": ("gym-google-drive-mcp", 8009, 8005),
    }
    assert all(s.digest.startswith("sha256:") and len(s.digest) == 71 for s in CATALOGUE.values())
    assert CATALOGUE["drive"].environment == {
        "FASTAPI_BASE_URL": "http://127.0.0.1:8005",
        "MCP_SERVER_HOST": "0.0.0.0",
        "MCP_SERVER_PORT": "8005",
    }
    assert CATALOGUE["calendar"].environment == {"API_PORT": "8003"}


def test_images_are_pinned_by_digest_with_registry_and_image_overrides() -> None:
    csm = CATALOGUE["csm"]
    assert csm.image() == (
        "docker.io/shivakrishnareddyma225/enterpriseops-gym-mcp-csm@sha256:"
        "eaa456ac9aa85728426e7d3813a0bbca0949d6a8695be30e26f03894e6e6b189"
    )
    assert csm.image(registry="mirror.example:5000/eog/").startswith(
        "mirror.example:5000/eog/enterpriseops-gym-mcp-csm@sha256:eaa456"
    )
    options = FleetOptions(images={"csm": "local/csm:1", "*": "local/any:2"})
    assert options.image_for(csm) == "local/csm:1"
    assert options.image_for(CATALOGUE["hr"]) == "local/any:2"


def test_services_are_chosen_by_domain_or_by_the_gyms_tasks_name() -> None:
    assert [s.domain for s in services_for(["itsm", "csm"])] == ["csm", "itsm"]
    assert len(services_for(["all"])) == 7
    with pytest.raises(UsageError, match=r"unknown gym domain.*nope"):
        services_for(["csm", "nope"])
    with pytest.raises(UsageError, match="no gym domain"):
        services_for([" "])
    examples = [load_task(p) for p in sorted((EXAMPLES / "tasks").rglob("*.json"))]
    assert domains_for_tasks(examples) == ["csm", "itsm"]
    with pytest.raises(UsageError, match=r"demo-csm-server.*cannot be launched"):
        domains_for_tasks([load_task(demo_paths().task)])


def test_run_arguments_publish_on_loopback_raise_ulimits_and_label() -> None:
    engine = ContainerEngine(
        executable="podman",
        global_args=("--runtime", "runc"),
        extra_run_args=("-v", "/usr:/usr:ro"),
        nofile=4096,
        nproc=512,
    )
    args = engine.run_args(
        image="img@sha256:1",
        name="eog-csm-x-0",
        labels={"b": "2", "a": "1"},
        container_port=8005,
        host_port=None,
        environment={"K": "V"},
    )
    assert args == [
        "run",
        "-d",
        "--name",
        "eog-csm-x-0",
        "-p",
        "127.0.0.1::8005",
        "--ulimit",
        "nofile=4096:4096",
        "--ulimit",
        "nproc=512:512",
        "--label",
        "a=1",
        "--label",
        "b=2",
        "--env",
        "K=V",
        "-v",
        "/usr:/usr:ro",
        "img@sha256:1",
    ]
    assert engine.argv("ps") == ["podman", "--runtime", "runc", "ps"]
    fixed = engine.run_args(
        image="i", name="n", labels={}, container_port=8003, host_port=9003, bind_host="0.0.0.0"
    )
    assert fixed[fixed.index("-p") + 1] == "0.0.0.0:9003:8003"
    assert engine.remove_args(["a", "b"], podman=True) == ["rm", "-f", "-t", "0", "a", "b"]
    assert engine.remove_args(["a"], podman=False) == ["rm", "-f", "a"]


def test_fixed_ports_are_upstreams_plus_100_per_replica() -> None:
    csm = CATALOGUE["csm"]
    assert [FleetOptions(fixed_ports=True).host_port_for(csm, r) for r in range(3)] == [
        8001,
        8101,
        8201,
    ]
    low, high = ephemeral_range()
    chosen = {FleetOptions().host_port_for(csm, 0) for _ in range(20)}
    assert all(port < low or port > high for port in chosen) and len(chosen) > 1


def test_spare_ports_avoid_the_ephemeral_range_and_ports_in_use() -> None:
    """A published port outside the range bind(port 0) draws from: a NAT rule a dead
    container leaves behind can never catch a port another program was handed."""
    assert ephemeral_range(Path("/nonexistent")) == (32768, 60999)
    for ephemeral in [(32768, 60999), (1024, 65000), (49152, 65535)]:
        port = spare_port("127.0.0.1", ephemeral=ephemeral)
        assert not ephemeral[0] <= port <= ephemeral[1] and port >= 10_000
    with pytest.raises(FleetError, match="no host port outside the ephemeral range"):
        spare_port("127.0.0.1", ephemeral=(1024, 65535))
    held = []
    try:  # every candidate but one held: the free one is found
        for port in range(65530, 65535):
            sock = socket.socket()
            sock.bind(("127.0.0.1", port))
            held.append(sock)
        assert spare_port("127.0.0.1", ephemeral=(1024, 65529)) == 65535
    finally:
        for sock in held:
            sock.close()


def test_bad_replica_and_lifecycle_counts_are_refused() -> None:
    with pytest.raises(FleetError, match="replicas"):
        FleetOptions(replicas=0)
    with pytest.raises(FleetError, match="max_lifecycles"):
        FleetOptions(max_lifecycles=0)


def test_an_owner_is_alive_while_its_process_runs_on_this_host() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert owner_alive(f"here:{os.getpid()}", hostname="here")
    assert not owner_alive(f"here:{child.pid}", hostname="here")
    assert owner_alive(f"elsewhere:{child.pid}", hostname="here")  # another host's: not ours
    assert owner_alive("detached", hostname="here")


def test_options_come_from_the_environment_then_overrides() -> None:
    options = options_from_env(
        {
            "EOG_FLEET_ENGINE_ARGS": "--runtime runc --cgroup-manager cgroupfs",
            "EOG_FLEET_RUN_ARGS": "-v '/a b:/c:ro'",
            "EOG_FLEET_REGISTRY": "reg/ns",
            "EOG_FLEET_IMAGE": "local/gym:1",
        },
        engine_executable="podman",
        replicas=3,
    )
    assert options.engine.argv("ps") == [
        "podman",
        "--runtime",
        "runc",
        "--cgroup-manager",
        "cgroupfs",
        "ps",
    ]
    assert options.engine.extra_run_args == ("-v", "/a b:/c:ro")
    assert (options.registry, dict(options.images), options.replicas) == (
        "reg/ns",
        {"*": "local/gym:1"},
        3,
    )
    assert options_from_env({}).engine.executable == "docker"


def test_a_missing_engine_is_one_clear_error() -> None:
    with pytest.raises(FleetError, match="'no-such-engine' not found on PATH"):
        ContainerEngine(executable="no-such-engine").find()


def test_the_compose_file_pins_images_ports_ulimits_labels_and_environment() -> None:
    services = services_for(["calendar"])
    text = compose_file(services, images=[services[0].image()], nofile=4096)
    assert text == (
        "# The EnterpriseOps-Gym gym servers, images pinned by digest (eog-core gyms compose).\n"
        "# Up: docker compose -f FILE up -d   Down: docker compose -f FILE down\n"
        "services:\n"
        "  calendar:\n"
        '    image: "docker.io/shivakrishnareddyma225/enterpriseops-gym-mcp-calendar@sha256:'
        '994c5421a6dd065861bc7f813a177f6d408875e9df60fe8d012959bc4510da02"\n'
        '    platform: "linux/amd64"\n'
        "    ports:\n"
        '      - "127.0.0.1:8003:8003"\n'
        "    ulimits:\n"
        "      nofile:\n"
        "        soft: 4096\n"
        "        hard: 4096\n"
        "    labels:\n"
        '      "io.eog-core.managed": "compose"\n'
        '      "io.eog-core.domain": "calendar"\n'
        '      "io.eog-core.gym": "gym-calendar"\n'
        "    environment:\n"
        '      API_PORT: "8003"\n'
        '    restart: "unless-stopped"\n'
    )


def container_owned_by(owner: str, name: str = "eog-csm-abc-0") -> Container:
    labels = {"io.eog-core.managed": "1", "io.eog-core.owner": owner}
    return Container(id=name, name=name, running=True, status="running", labels=labels)


def test_owners_are_named_with_their_pid_and_command_and_live_ones_hold_theirs() -> None:
    here = socket.gethostname()
    script = "import time; print('up', flush=True); time.sleep(60)"
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead = ended.pid
    sleeper = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert sleeper.stdout is not None
        sleeper.stdout.readline()  # running its script: its command line is in place
        mine = owner_of(container_owned_by(f"{here}:{sleeper.pid}"))
        assert (mine.state, mine.pid) == ("alive", sleeper.pid)
        assert mine.command == f"{sys.executable} -c {script}"
        assert mine.describe() == f"pid {sleeper.pid} ({sys.executable} -c {script})"
        gone = owner_of(container_owned_by(f"{here}:{dead}"))
        assert (gone.state, gone.describe()) == ("gone", f"pid {dead}, gone")
        other = owner_of(container_owned_by("elsewhere:12"))
        assert (other.state, other.describe()) == ("elsewhere", "pid 12 on elsewhere")
        assert owner_of(container_owned_by("detached")).describe() == "detached"
        containers = [
            container_owned_by(f"{here}:{sleeper.pid}", "held"),
            container_owned_by(f"{here}:{dead}", "orphan"),
            container_owned_by("detached", "free"),
            container_owned_by("elsewhere:12", "foreign"),
        ]
        free, held = split_held(containers)
        assert ([c.name for c in free], [c.name for c in held]) == (
            ["orphan", "free"],
            ["held", "foreign"],
        )
    finally:
        sleeper.kill()
        sleeper.wait()
        if sleeper.stdout is not None:
            sleeper.stdout.close()


def test_an_eog_core_owner_is_shown_as_the_command_a_person_typed() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()  # serving: its command line is in place
        owner = owner_of(container_owned_by(f"{socket.gethostname()}:{child.pid}"))
        assert owner.command == "eog-core serve-local --port 0"
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
