#!/usr/bin/env python3
"""Prints the transitive import closure of the given root .proto files.

Usage: proto_closure.py --include DIR [--include DIR...] --skip PREFIX... -- ROOT...
Files found under a --skip prefix (protobuf's well-known types) are followed
for imports but not printed, since the protobuf library already provides them.
"""
import argparse
import os
import re
import sys

IMPORT_RE = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.M)


def find(path, includes):
    for inc in includes:
        full = os.path.join(inc, path)
        if os.path.isfile(full):
            return full
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--include", action="append", required=True)
    parser.add_argument("--skip", action="append", default=[])
    parser.add_argument("roots", nargs="+")
    args = parser.parse_args()

    seen, order, stack = set(), [], list(args.roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if any(name.startswith(p) for p in args.skip):
            continue
        full = find(name, args.include)
        if full is None:
            sys.exit(f"proto_closure: {name} not found on the include path")
        order.append(name)
        with open(full, encoding="utf-8") as f:
            stack.extend(IMPORT_RE.findall(f.read()))
    print(";".join(sorted(order)), end="")


if __name__ == "__main__":
    main()
