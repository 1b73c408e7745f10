"""Builds the grpc-go xDS client (goclient/) once into a cache directory.

The binary is keyed by a hash of the module's files, so an edit or a new pin
rebuilds it and an unchanged tree reuses it. Modules come from the Go module
proxy into the same cache scripts/setup.sh uses (HOLDFAST_CACHE, default
~/.cache/holdfast).
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

GO_CLIENT_SOURCE = Path(__file__).resolve().parent / "goclient"
BUILD_TIMEOUT = 900.0


def _source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(GO_CLIENT_SOURCE.iterdir()):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build_go_client() -> Path:
    """Returns the path of an up-to-date goclient binary, building it if needed."""
    go = shutil.which("go")
    if go is None:
        raise AssertionError("go is not on PATH (needed for the grpc-go xDS client)")
    cache = Path(os.environ.get("HOLDFAST_CACHE", Path.home() / ".cache" / "holdfast"))
    binary = cache / "bin" / f"goclient-{_source_hash()}"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ,
               GOPATH=str(cache / "go"), GOMODCACHE=str(cache / "go" / "mod"),
               GOCACHE=str(cache / "go" / "build"),
               GOFLAGS="-modcacherw -buildvcs=false", GOWORK="off")
    tmp = binary.with_name(binary.name + f".tmp{os.getpid()}")
    result = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=GO_CLIENT_SOURCE,
                            env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if result.returncode != 0:
        raise AssertionError(f"go build of {GO_CLIENT_SOURCE} failed:\n{result.stderr[-4000:]}")
    os.replace(tmp, binary)
    return binary
