"""Which tasks and verdicts to trust: static findings, and ``eog-core certify`` on gyms.

A :class:`Certificate` per task (schema ``eog-certificate/1``) records what was
checked and what was found; ``report``/``score --certificates DIR`` read them
with :func:`read_certificates` (``docs/certify.md``).
"""

from eog_core.certify._certificate import (
    CERTIFICATE_SCHEMA,
    CERTIFICATE_SUFFIX,
    Certificate,
    CertificateFinding,
    CertificateStatus,
    certificate_filename,
    certificate_from_mapping,
    certificate_status,
    read_certificates,
    sha256_hex,
    write_certificate,
)
from eog_core.certify._runner import (
    ROW_CAP,
    CertifyOptions,
    CertifyReport,
    TaskSource,
    certify_tasks,
)
from eog_core.certify._scripts import Script, TaskScripts, index_scripts, load_task_scripts
from eog_core.certify._sources import load_sources

__all__ = [
    "CERTIFICATE_SCHEMA",
    "CERTIFICATE_SUFFIX",
    "ROW_CAP",
    "Certificate",
    "CertificateFinding",
    "CertificateStatus",
    "CertifyOptions",
    "CertifyReport",
    "Script",
    "TaskScripts",
    "TaskSource",
    "certificate_filename",
    "certificate_from_mapping",
    "certificate_status",
    "certify_tasks",
    "index_scripts",
    "load_sources",
    "load_task_scripts",
    "read_certificates",
    "sha256_hex",
    "write_certificate",
]
