"""The seven EOG gym services: image, pinned digest, container port and environment.

The facts come from upstream's README (image names, container port 8005, 8003
for calendar) and NeMo Gym's EOG server (digests, environment). A
:class:`GymService` is a plain record; :func:`services_for` picks the ones a
run asks for, by domain or by the gyms a set of tasks names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from eog_core.errors import UsageError
from eog_core.tasks import DEFAULT_GYMS, Task

__all__ = [
    "CATALOGUE",
    "DEFAULT_REGISTRY",
    "GymService",
    "domains_for_tasks",
    "services_for",
]

DEFAULT_REGISTRY = "docker.io/shivakrishnareddyma225"
"""Where upstream publishes the images (a personal Docker Hub account, amd64 only)."""


@attrs.frozen(kw_only=True)
class GymService:
    """One gym as a container: ``image@digest`` listening on ``container_port``."""

    domain: str
    gym: str
    host_port: int
    """The port upstream's README maps it to (``--fixed-ports`` uses it)."""
    container_port: int
    digest: str
    environment: Mapping[str, str] = attrs.field(factory=dict)

    def image(self, *, registry: str | None = None, override: str | None = None) -> str:
        """The reference to run: ``override`` as given, else ``REGISTRY/...-<domain>@digest``."""
        if override:
            return override
        base = (registry or DEFAULT_REGISTRY).rstrip("/")
        return f"{base}/enterpriseops-gym-mcp-{self.domain}@{self.digest}"


def _service(
    domain: str, gym: str, digest: str, container_port: int = 8005, **environment: str
) -> GymService:
    host_port = DEFAULT_GYMS[gym][1]
    env = {key: value.format(port=container_port) for key, value in environment.items()}
    return GymService(
        domain=domain,
        gym=gym,
        host_port=host_port,
        container_port=container_port,
        digest=f"sha256:{digest}",
        environment=env,
    )


_SELF = "http://127.0.0.1:{port}"
# The environment NeMo Gym sets, with the container's own port (each server calls
# its own REST API through these); drive listens on every interface of the container
# so that the engine's port mapping reaches it.
CATALOGUE: Mapping[str, GymService] = {
    service.domain: service
    for service in (
        _service(
            "csm",
            "sn-csm-server",
            "eaa456ac9aa85728426e7d3813a0bbca0949d6a8695be30e26f03894e6e6b189",
            API_BASE_URL=_SELF,
        ),
        _service(
            "teams",
            "gym-teams-mcp",
            "602655e46f6501885540c36dc9b12114cb173c75063d7f25c17ed0652695fa78",
            API_PORT="{port}",
        ),
        _service(
            "calendar",
            "gym-calendar",
            "994c5421a6dd065861bc7f813a177f6d408875e9df60fe8d012959bc4510da02",
            container_port=8003,
            API_PORT="{port}",
        ),
        _service(
            "email",
            "gym-email-mcp",
            "69c2081fe4ab0962b86233f9fb52b307b8ad0019f6746ba64ce75851036201cd",
            API_PORT="{port}",
        ),
        _service(
            "itsm",
            "gym-itsm-mcp",
            "a234ae3fb7cee196ba25e6b9957969dea829919b6e8271dddae128f065aaf39f",
            ITSM_API_BASE_URL=_SELF,
        ),
        _service(
            "hr",
            "sn-hr-internal",
            "1ea1c1d64d4be35e8062e56f00b8318e9e6c09289cfa56bcfd0595bfa59ac64d",
            HR_API_BASE_URL=_SELF,
        ),
        _service(
            "drive",
            "gym-google-drive-mcp",
            "3475962fcf6da7675e194dbf138de01fa3e96134a302ad47316e4111a5e63f32",
            FASTAPI_BASE_URL=_SELF,
            MCP_SERVER_HOST="0.0.0.0",
            MCP_SERVER_PORT="{port}",
        ),
    )
}
_BY_GYM = {service.gym: service for service in CATALOGUE.values()}


def services_for(domains: Iterable[str]) -> list[GymService]:
    """The services of ``domains`` (names or ``all``), in the catalogue's order."""
    wanted = {d.strip() for d in domains if d.strip()}
    if "all" in wanted:
        return list(CATALOGUE.values())
    unknown = sorted(wanted - set(CATALOGUE))
    if unknown:
        raise UsageError(
            f"unknown gym domain(s) {', '.join(unknown)}; the domains are {', '.join(CATALOGUE)}"
        )
    if not wanted:
        raise UsageError("no gym domain asked for")
    return [service for domain, service in CATALOGUE.items() if domain in wanted]


def domains_for_tasks(tasks: Iterable[Task]) -> list[str]:
    """The domains whose gyms the tasks name (a gym outside the seven is an error)."""
    domains: set[str] = set()
    for task in tasks:
        for server in task.gym_servers:
            service = _BY_GYM.get(server.name)
            if service is None:
                raise UsageError(
                    f"task {task.task_id}: gym {server.name!r} is not one of the "
                    f"seven EOG gyms ({', '.join(_BY_GYM)}); it cannot be launched"
                )
            domains.add(service.domain)
    return [domain for domain in CATALOGUE if domain in domains]
