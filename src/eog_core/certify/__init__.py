"""Which tasks and verdicts to trust: static findings, and ``eog-core certify`` on gyms.

:func:`task_findings` reads one task's own text for the defects and refusals it
shows before any gym runs it (what ``eog-core validate`` reports).

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
from eog_core.certify._static import (
    REJECTED_BY_VERIFY,
    STATIC_KINDS,
    Severity,
    StaticFinding,
    task_findings,
)

__all__ = [
    "CERTIFICATE_SCHEMA",
    "CERTIFICATE_SUFFIX",
    "REJECTED_BY_VERIFY",
    "ROW_CAP",
    "STATIC_KINDS",
    "Certificate",
    "CertificateFinding",
    "CertificateStatus",
    "CertifyOptions",
    "CertifyReport",
    "Script",
    "Severity",
    "StaticFinding",
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
    "task_findings",
    "write_certificate",
]
