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

__all__ = [
    "CERTIFICATE_SCHEMA",
    "CERTIFICATE_SUFFIX",
    "Certificate",
    "CertificateFinding",
    "CertificateStatus",
    "certificate_filename",
    "certificate_from_mapping",
    "certificate_status",
    "read_certificates",
    "sha256_hex",
    "write_certificate",
]
