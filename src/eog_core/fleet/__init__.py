"""The EOG gym containers on Docker or Podman: start, health, restarts, cleanup; the
seed archive. Depends on ``gym``, ``tasks`` and ``errors`` only; nothing lower imports it."""

from eog_core.fleet._catalogue import (
    CATALOGUE,
    DEFAULT_REGISTRY,
    GymService,
    domains_for_tasks,
    services_for,
)
from eog_core.fleet._compose import compose_file
from eog_core.fleet._engine import (
    LABEL_DOMAIN,
    LABEL_MANAGED,
    LABEL_REPLICA,
    Container,
    ContainerEngine,
)
from eog_core.fleet._fleet import GymFleet, launch
from eog_core.fleet._options import (
    DEFAULT_MAX_LIFECYCLES,
    ENV_VARIABLES,
    FleetOptions,
    options_from_env,
)
from eog_core.fleet._owners import Owner, down, owner_of, reap_orphans, split_held
from eog_core.fleet._owners import remove as remove_containers
from eog_core.fleet._seeds import (
    MAX_UNPACKED_BYTES,
    MAX_UNPACKED_RATIO,
    SEED_ARCHIVE_REVISION,
    SEED_ARCHIVE_SHA256,
    SEED_ROOT_FOLDER,
    UnpackedSeeds,
    missing_seed_files,
    sha256_of,
    unpack_seeds,
)

__all__ = [
    "CATALOGUE",
    "DEFAULT_MAX_LIFECYCLES",
    "DEFAULT_REGISTRY",
    "ENV_VARIABLES",
    "LABEL_DOMAIN",
    "LABEL_MANAGED",
    "LABEL_REPLICA",
    "MAX_UNPACKED_BYTES",
    "MAX_UNPACKED_RATIO",
    "SEED_ARCHIVE_REVISION",
    "SEED_ARCHIVE_SHA256",
    "SEED_ROOT_FOLDER",
    "Container",
    "ContainerEngine",
    "FleetOptions",
    "GymFleet",
    "GymService",
    "Owner",
    "UnpackedSeeds",
    "compose_file",
    "domains_for_tasks",
    "down",
    "launch",
    "missing_seed_files",
    "options_from_env",
    "owner_of",
    "reap_orphans",
    "remove_containers",
    "services_for",
    "sha256_of",
    "split_held",
    "unpack_seeds",
]
