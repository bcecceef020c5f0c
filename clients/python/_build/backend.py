"""A minimal PEP 517 build backend from the standard library: builds the wheel (and sdist) of src/execgate.

pip calls it in an isolated environment with no build requirements (pyproject.toml: requires = []), so installing
the client needs no index at all: `pip install --no-index ./clients/python` works offline.
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "execgate"
VERSION = "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "src", NAME)
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
TAG = "py3-none-any"


def _metadata() -> str:
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\nVersion: {VERSION}\n"
        "Summary: Python client for an execgate server: run code for agents, safely (sync and asyncio).\n"
        "License: MIT\nRequires-Python: >=3.9\nDescription-Content-Type: text/markdown\n\n" + readme
    )


def _package_files():
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith((".py", ".typed")):
                full = os.path.join(folder, name)
                yield full, os.path.relpath(full, os.path.join(ROOT, "src")).replace(os.sep, "/")


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    target = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "METADATA"), "w", encoding="utf-8") as handle:
        handle.write(_metadata())
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-{TAG}.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        def add(path: str, data: bytes) -> None:
            wheel.writestr(path, data)
            records.append(_record_line(path, data))

        for full, relative in _package_files():
            add(relative, open(full, "rb").read())
        add(f"{DIST_INFO}/METADATA", _metadata().encode())
        add(f"{DIST_INFO}/WHEEL", f"Wheel-Version: 1.0\nGenerator: execgate-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode())
        records.append(f"{DIST_INFO}/RECORD,,")
        wheel.writestr(f"{DIST_INFO}/RECORD", "\n".join(records) + "\n")
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for relative in ["pyproject.toml", "README.md", "_build/backend.py"]:
            sdist.add(os.path.join(ROOT, relative), f"{base}/{relative}")
        for full, relative in _package_files():
            sdist.add(full, f"{base}/src/{relative}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return filename
