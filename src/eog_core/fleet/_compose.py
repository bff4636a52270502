"""A Compose file for the pinned gym services (``eog-core gyms compose``).

The text is written by hand (no YAML library in the core install); every value
is quoted, so the file reads the same in Docker Compose and podman-compose.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from eog_core.fleet._catalogue import GymService
from eog_core.fleet._engine import LABEL_DOMAIN, LABEL_GYM, LABEL_MANAGED

__all__ = ["compose_file"]


def _q(value: object) -> str:
    return json.dumps(str(value))  # a JSON string is a valid double-quoted YAML scalar


def compose_file(
    services: Sequence[GymService],
    *,
    images: Sequence[str],
    nofile: int = 65536,
    bind_host: str = "127.0.0.1",
) -> str:
    """``services`` with ``images`` (one each, in order) on upstream's host ports."""
    lines = [
        "# The EnterpriseOps-Gym gym servers, images pinned by digest (eog-core gyms compose).",
        "# Up: docker compose -f FILE up -d   Down: docker compose -f FILE down",
        "services:",
    ]
    for service, image in zip(services, images, strict=True):
        lines += [
            f"  {service.domain}:",
            f"    image: {_q(image)}",
            '    platform: "linux/amd64"',
            "    ports:",
            f"      - {_q(f'{bind_host}:{service.host_port}:{service.container_port}')}",
            "    ulimits:",
            "      nofile:",
            f"        soft: {nofile}",
            f"        hard: {nofile}",
            "    labels:",
            f'      {_q(LABEL_MANAGED)}: "compose"',
            f"      {_q(LABEL_DOMAIN)}: {_q(service.domain)}",
            f"      {_q(LABEL_GYM)}: {_q(service.gym)}",
        ]
        if service.environment:
            lines.append("    environment:")
            lines += [
                f"      {key}: {_q(value)}" for key, value in sorted(service.environment.items())
            ]
        lines.append('    restart: "unless-stopped"')
    return "\n".join(lines) + "\n"
