"""What a fleet starts and how: engine, domains, replicas, images, ports, lifecycles."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from eog_core.errors import FleetError
from eog_core.fleet._catalogue import GymService
from eog_core.fleet._engine import ContainerEngine
from eog_core.fleet._ports import spare_port

__all__ = ["DEFAULT_MAX_LIFECYCLES", "ENV_VARIABLES", "FleetOptions", "options_from_env"]

DEFAULT_MAX_LIFECYCLES = 150
"""Well under the ~200 lifecycles after which an EOG container runs out of descriptors."""

ENV_VARIABLES = {
    "EOG_FLEET_ENGINE_ARGS": "arguments before every engine command (--runtime runc ...)",
    "EOG_FLEET_RUN_ARGS": "arguments added to every container run (-v SRC:DST:ro ...)",
    "EOG_FLEET_REGISTRY": "registry/namespace replacing docker.io/shivakrishnareddyma225",
    "EOG_FLEET_IMAGE": "one image reference for every domain (a test image)",
}


@attrs.frozen(kw_only=True)
class FleetOptions:
    """What to start and how. ``images`` maps a domain (or ``*``, every domain) to an
    image reference that replaces the pinned one; ``registry`` replaces the registry."""

    engine: ContainerEngine = attrs.field(factory=ContainerEngine)
    domains: Sequence[str] = ("all",)
    replicas: int = 1
    registry: str | None = None
    images: Mapping[str, str] = attrs.field(factory=dict)
    fixed_ports: bool = False
    bind_host: str = "127.0.0.1"
    max_lifecycles: int | None = DEFAULT_MAX_LIFECYCLES
    health_timeout: float = 120.0
    detached: bool = False
    """Leave the containers running at exit (``eog-core gyms up``); ``gyms down`` removes them."""

    def __attrs_post_init__(self) -> None:
        if self.replicas < 1:
            raise FleetError(f"replicas must be at least 1, got {self.replicas}")
        if self.max_lifecycles is not None and self.max_lifecycles < 1:
            raise FleetError(f"max_lifecycles must be at least 1, got {self.max_lifecycles}")

    def image_for(self, service: GymService) -> str:
        return service.image(
            registry=self.registry, override=self.images.get(service.domain) or self.images.get("*")
        )

    def host_port_for(self, service: GymService, replica: int) -> int:
        """Upstream's port (plus 100 per further replica) with ``fixed_ports``, else a free one
        outside the kernel's ephemeral range (``fleet._ports``: why)."""
        if self.fixed_ports:
            return service.host_port + 100 * replica
        return spare_port(self.bind_host)


def options_from_env(environ: Mapping[str, str] | None = None, **overrides: Any) -> FleetOptions:
    """FleetOptions from ``EOG_FLEET_*`` variables (see ``ENV_VARIABLES``), then ``overrides``
    (``engine_executable`` names the engine's client)."""
    environ = os.environ if environ is None else environ
    executable = overrides.pop("engine_executable", None) or "docker"
    engine = ContainerEngine(
        executable=executable,
        global_args=tuple(shlex.split(environ.get("EOG_FLEET_ENGINE_ARGS", ""))),
        extra_run_args=tuple(shlex.split(environ.get("EOG_FLEET_RUN_ARGS", ""))),
    )
    values: dict[str, Any] = {"engine": engine}
    if environ.get("EOG_FLEET_REGISTRY"):
        values["registry"] = environ["EOG_FLEET_REGISTRY"]
    if environ.get("EOG_FLEET_IMAGE"):
        values["images"] = {"*": environ["EOG_FLEET_IMAGE"]}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return FleetOptions(**values)
