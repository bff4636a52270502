"""docs/real-benchmark.md, section 2: its ``eog-core gyms`` commands run as written
(every domain's image is the test image, through ``EOG_FLEET_IMAGE``)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests_integrations.containers.conftest import REPO, our_containers
from tests_integrations.containers.test_fleet import eog


def gyms_commands() -> list[list[str]]:
    text = (REPO / "docs" / "real-benchmark.md").read_text(encoding="utf-8")
    section = text.split("## 2. The gyms", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [
        shlex.split(line)
        for line in block.group(1).splitlines()
        if line.startswith("eog-core gyms ")
    ]


async def test_the_pages_gyms_commands_run_as_written(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    commands = gyms_commands()
    assert [c[2] for c in commands] == ["up", "status", "logs", "down"]
    outputs = []
    for argv in commands:
        argv = [a if a != "gyms.json" else str(tmp_path / "gyms.json") for a in argv]
        code, out, err = await eog(fleet_env, *argv[1:])
        assert code == 0, f"{shlex.join(argv)}: {err}"
        outputs.append(out)
        if argv[2] == "up":
            gyms = json.loads((tmp_path / "gyms.json").read_text())
            assert sorted(gyms) == ["gym-itsm-mcp", "sn-csm-server"]
            assert len(our_containers()) == 2
    assert outputs[1].count("running") == 2 and "detached" in outputs[1]
    assert "serving on" in outputs[2]
    assert outputs[3].strip() == "removed 2 gym container(s)"
