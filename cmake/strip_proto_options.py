#!/usr/bin/env python3
"""Copies etcd's API protos without their gogoproto and google.api.http
options, which only matter to Go and to the REST gateway. What is left
imports nothing outside the copied files, so the generated C++ is a small
self-contained library.

  strip_proto_options.py SRC_ROOT DST_ROOT FILE...   (FILE relative to both)
"""
import re
import sys
from pathlib import Path

DROPPED_IMPORTS = ("gogoproto/gogo.proto", "google/api/annotations.proto")


def strip(text: str) -> str:
    lines = [l for l in text.splitlines()
             if not any(f'import "{imp}"' in l for imp in DROPPED_IMPORTS)]
    text = "\n".join(lines) + "\n"
    # File options: option (gogoproto.x) = y;
    text = re.sub(r"^\s*option\s+\(gogoproto\.[^;]*;\s*$", "", text, flags=re.M)
    # RPC options: option (google.api.http) = { ... };  (braces nest once, in
    # additional_bindings)
    text = re.sub(r"option\s+\(google\.api\.http\)\s*=\s*\{(?:[^{}]|\{[^{}]*\})*\};", "", text)
    # Field options made only of gogoproto entries: [(gogoproto.a) = b, ...]
    text = re.sub(r"\s*\[\s*\(gogoproto\.[^\]]*\]", "", text)
    if "gogoproto" in text or "google.api" in text:
        raise SystemExit("strip_proto_options: an option form this script does not know is left")
    return text


def main() -> None:
    src, dst, files = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    for name in files:
        out = dst / name
        out.parent.mkdir(parents=True, exist_ok=True)
        stripped = strip((src / name).read_text())
        if not out.exists() or out.read_text() != stripped:
            out.write_text(stripped)


if __name__ == "__main__":
    main()
