"""The certificate of one task (schema ``eog-certificate/1``): its record, file name, writing
and reading.

``eog-core certify --out DIR`` writes ``DIR/<task_id>.certificate.json`` (the id made
file-safe; the real one is inside), atomically. ``report``/``score --certificates DIR``
read every ``*.certificate.json`` directly in DIR with :func:`read_certificates`, keyed
by the ``task_id`` inside; a file that is not JSON or has another ``schema`` is refused
with a :class:`~eog_core.errors.SchemaError` naming the file. The format is
``docs/certify.md``'s "The certificate".
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from eog_core._plumbing import atomic_write
from eog_core._version import __version__
from eog_core.errors import SchemaError

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

CERTIFICATE_SCHEMA = "eog-certificate/1"
CERTIFICATE_SUFFIX = ".certificate.json"

CertificateStatus = Literal["certified", "clean", "flagged", "incomplete"]
_STATUSES = ("certified", "clean", "flagged", "incomplete")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@attrs.frozen(kw_only=True)
class CertificateFinding:
    """One finding of a task: its kind, the verifier it is about (or None), the policy
    it holds under (``strict``, ``parity`` or None) and one line of detail."""

    kind: str
    detail: str
    verifier: str | None = None
    mode: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "verifier": self.verifier,
            "mode": self.mode,
            "detail": self.detail,
        }


@attrs.frozen(kw_only=True)
class Certificate:
    """What ``certify`` found about one task, with what it was checked against.

    ``checks`` holds each check's own result as written in the file (``static``,
    ``do_nothing``, ``oracle``, ``counterexamples``, ``sensitivity``, ``row_counts``).
    """

    task_id: str
    task_file: str
    task_sha256: str
    status: CertificateStatus
    findings: tuple[CertificateFinding, ...] = ()
    checks: Mapping[str, Any] = attrs.field(factory=dict)
    seed_files: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    image_digests: Mapping[str, str] = attrs.field(factory=dict)
    package_version: str = __version__
    created: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The distinct kinds of the findings, sorted."""
        return tuple(sorted({finding.kind for finding in self.findings}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": CERTIFICATE_SCHEMA,
            "task_id": self.task_id,
            "task_file": self.task_file,
            "task_sha256": self.task_sha256,
            "seed_files": {name: dict(entry) for name, entry in self.seed_files.items()},
            "image_digests": dict(self.image_digests),
            "package_version": self.package_version,
            "created": self.created,
            "status": self.status,
            "findings": [finding.to_dict() for finding in self.findings],
            "checks": dict(self.checks),
        }


def certificate_status(
    findings: Iterable[CertificateFinding], *, oracle_passed: bool | None, incomplete: bool
) -> CertificateStatus:
    """``incomplete`` when a check could not complete, else ``flagged`` with any finding,
    ``certified`` when an oracle passed (a counterexample that passed is a finding),
    ``clean`` when none was given."""
    if incomplete:
        return "incomplete"
    if any(True for _ in findings):
        return "flagged"
    return "certified" if oracle_passed else "clean"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def certificate_filename(task_id: str) -> str:
    """``<task_id>.certificate.json`` with every character outside ``[A-Za-z0-9._-]`` as ``_``."""
    return _UNSAFE.sub("_", task_id) + CERTIFICATE_SUFFIX


def write_certificate(certificate: Certificate, out_dir: Path) -> Path:
    """Write the certificate into ``out_dir`` whole or not at all; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / certificate_filename(certificate.task_id)
    data = (json.dumps(certificate.to_dict(), indent=2, ensure_ascii=False) + "\n").encode()
    atomic_write(path, data)
    return path


def _text(obj: Mapping[str, Any], key: str, source: str, *, optional: bool = False) -> str:
    value = obj.get(key, "" if optional else None)
    if not isinstance(value, str):
        raise SchemaError(
            f"{key} must be a string, got {value!r:.60}", path=f"$.{key}", source=source
        )
    return value


def _finding(obj: Any, index: int, source: str) -> CertificateFinding:
    where = f"$.findings[{index}]"
    if not isinstance(obj, Mapping) or not isinstance(obj.get("kind"), str):
        raise SchemaError("a finding is an object with a string kind", path=where, source=source)
    verifier, mode = obj.get("verifier"), obj.get("mode")
    if verifier is not None and not isinstance(verifier, str):
        raise SchemaError(
            "verifier must be a string or null", path=f"{where}.verifier", source=source
        )
    if mode not in (None, "strict", "parity"):
        raise SchemaError(
            "mode must be strict, parity or null", path=f"{where}.mode", source=source
        )
    return CertificateFinding(
        kind=obj["kind"], detail=str(obj.get("detail") or ""), verifier=verifier, mode=mode
    )


def certificate_from_mapping(obj: Any, *, source: str = "<mapping>") -> Certificate:
    """Read one certificate; a SchemaError naming ``source`` when it is not ``eog-certificate/1``."""
    if not isinstance(obj, Mapping):
        raise SchemaError("a certificate is a JSON object", source=source)
    if obj.get("schema") != CERTIFICATE_SCHEMA:
        raise SchemaError(
            f"schema is {obj.get('schema')!r:.60}, not {CERTIFICATE_SCHEMA!r}",
            path="$.schema",
            source=source,
        )
    status = obj.get("status")
    if status not in _STATUSES:
        raise SchemaError(
            f"status must be one of {', '.join(_STATUSES)}, got {status!r:.60}",
            path="$.status",
            source=source,
        )
    findings = obj.get("findings") or []
    checks = obj.get("checks") or {}
    if not isinstance(findings, list) or not isinstance(checks, Mapping):
        raise SchemaError("findings must be a list and checks an object", source=source)
    seeds, digests = obj.get("seed_files") or {}, obj.get("image_digests") or {}
    if not isinstance(seeds, Mapping) or not isinstance(digests, Mapping):
        raise SchemaError("seed_files and image_digests must be objects", source=source)
    return Certificate(
        task_id=_text(obj, "task_id", source),
        task_file=_text(obj, "task_file", source, optional=True),
        task_sha256=_text(obj, "task_sha256", source, optional=True),
        status=status,
        findings=tuple(_finding(each, i, source) for i, each in enumerate(findings)),
        checks=dict(checks),
        seed_files={str(k): dict(v) for k, v in seeds.items() if isinstance(v, Mapping)},
        image_digests={str(k): str(v) for k, v in digests.items()},
        package_version=_text(obj, "package_version", source, optional=True),
        created=_text(obj, "created", source, optional=True),
    )


def read_certificates(directory: Path) -> dict[str, Certificate]:
    """Every ``*.certificate.json`` directly in ``directory``, keyed by the task id inside.

    Raises :class:`SchemaError` naming the file for one that is not JSON or not a
    certificate, and for a folder that is not there.
    """
    if not directory.is_dir():
        raise SchemaError("not a folder of certificates", source=str(directory))
    found: dict[str, Certificate] = {}
    for path in sorted(directory.glob("*" + CERTIFICATE_SUFFIX)):
        try:
            obj = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise SchemaError(f"not a JSON certificate ({exc})", source=str(path)) from None
        certificate = certificate_from_mapping(obj, source=str(path))
        found[certificate.task_id] = certificate
    return found
