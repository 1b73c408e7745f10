"""Gateway objects (holdfast.dev/v1) for `holdfast serve --config-dir`, and
their statuses at /debug/status.

Objects are built as plain dicts and written as block-style YAML, one key per
line, so a test can name the line holdfast must report for a bad field
(ConfigDir.line_of). Every file is replaced atomically (written beside the
directory, then renamed in): the server's poller never sees a partial file.
"""

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional

from hf_admin import Admin
from hf_resources import TARGET_HOST
from hf_wait import wait_for

API_VERSION = "holdfast.dev/v1"
NAMESPACE = "test"

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


# --- YAML --------------------------------------------------------------------

def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a valid YAML double-quoted scalar.
        return json.dumps(value)
    raise TypeError(f"unsupported YAML scalar {value!r}")


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) else json.dumps(key)


def _is_scalar(value: Any) -> bool:
    return (not isinstance(value, (dict, list))) or not value


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _emit(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if _is_scalar(v):
                lines.append(f"{pad}{_key(k)}: {_inline(v)}")
            else:
                lines.append(f"{pad}{_key(k)}:")
                lines.extend(_emit(v, indent + 2))
    elif isinstance(value, list):
        for item in value:
            if _is_scalar(item):
                lines.append(f"{pad}- {_inline(item)}")
            else:
                # The item's first line goes on the dash line.
                inner = _emit(item, indent + 2)
                inner[0] = f"{pad}- {inner[0][indent + 2:]}"
                lines.extend(inner)
    else:
        raise TypeError(f"expected a map or a list, got {value!r}")
    return lines


def to_yaml(*documents: dict) -> str:
    """Block-style YAML, one document per object, one key per line."""
    return "---\n".join("\n".join(_emit(doc, 0)) + "\n" for doc in documents)


# --- objects -----------------------------------------------------------------

def _object(kind: str, name: str, spec: dict, ns: str, labels: Optional[dict]) -> dict:
    metadata = {"name": name, "namespace": ns}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def upstream(name: str, port: int, *, ns: str = NAMESPACE) -> dict:
    """An Upstream with one host on loopback: an EDS cluster for gRPC."""
    return _object("Upstream", name, {"hosts": [{"address": "127.0.0.1", "port": port}]},
                   ns, None)


def route(match: Optional[dict] = None, *, name: Optional[str] = None, **action) -> dict:
    """One route: `match` (default: every path) and exactly one action, given
    as a keyword: upstream=, upstreams=, redirect=, directResponse=,
    delegate=. Extra keywords are written as they are (to make bad input)."""
    out: dict = {}
    if name:
        out["name"] = name
    out["match"] = match if match is not None else {"prefix": "/"}
    out.update(action)
    return out


def virtual_service(name: str, routes: list, *, domains=(TARGET_HOST,),
                    ns: str = NAMESPACE, labels: Optional[dict] = None) -> dict:
    return _object("VirtualService", name, {"domains": list(domains), "routes": routes},
                   ns, labels)


def route_table(name: str, routes: list, *, ns: str = NAMESPACE,
                labels: Optional[dict] = None) -> dict:
    return _object("RouteTable", name, {"routes": routes}, ns, labels)


def rollout_policy(name: str, *, node_group: Optional[str] = None, canaries: Optional[dict] = None,
                   bake: Optional[str] = None, ack_timeout: Optional[str] = None,
                   ns: str = NAMESPACE) -> dict:
    spec: dict = {}
    if node_group is not None:
        spec["nodeGroup"] = node_group
    if canaries is not None:
        spec["canaries"] = canaries
    if bake is not None:
        spec["bake"] = bake
    if ack_timeout is not None:
        spec["ackTimeout"] = ack_timeout
    return _object("RolloutPolicy", name, spec, ns, None)


# --- the config directory ----------------------------------------------------

class ConfigDir:
    """holdfast's --config-dir."""

    def __init__(self, path: Path, staging: Path):
        self.path = Path(path)
        self.staging = Path(staging)
        self.path.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir(parents=True, exist_ok=True)

    def write_text(self, file_name: str, text: str) -> Path:
        tmp = self.staging / file_name
        tmp.write_text(text)
        target = self.path / file_name
        os.replace(tmp, target)
        return target

    def write(self, file_name: str, *objects: dict) -> Path:
        return self.write_text(file_name, to_yaml(*objects))

    def line_of(self, file_name: str, needle: str) -> int:
        """The 1-based number of the one line of `file_name` containing `needle`."""
        lines = (self.path / file_name).read_text().splitlines()
        hits = [i + 1 for i, line in enumerate(lines) if needle in line]
        assert len(hits) == 1, f"{needle!r} is on lines {hits} of {file_name}, expected one"
        return hits[0]


# --- statuses ----------------------------------------------------------------

def statuses(admin: Admin) -> list:
    doc = admin.get_json("/debug/status")
    if not isinstance(doc, dict) or not isinstance(doc.get("objects"), list):
        raise AssertionError(f"/debug/status: expected {{'objects': [...]}}, got {doc!r}")
    return doc["objects"]


def object_status(admin: Admin, kind: str, name: str, ns: str = NAMESPACE) -> Optional[dict]:
    """The /debug/status entry of one object, or None if it is not listed."""
    matches = [o for o in statuses(admin)
               if (o.get("kind"), o.get("namespace"), o.get("name")) == (kind, ns, name)]
    if len(matches) > 1:
        raise AssertionError(f"{kind} {ns}/{name} listed {len(matches)} times: {matches!r}")
    return matches[0] if matches else None


def wait_status(admin: Admin, kind: str, name: str, condition: Callable[[dict], bool], *,
                what: str, timeout: float, ns: str = NAMESPACE) -> dict:
    return wait_for(lambda: object_status(admin, kind, name, ns),
                    lambda s: s is not None and condition(s),
                    timeout=timeout, what=f"{kind} {ns}/{name} {what} in /debug/status")


def wait_state(admin: Admin, kind: str, name: str, state: str, *, timeout: float,
               ns: str = NAMESPACE) -> dict:
    return wait_status(admin, kind, name, lambda s: s.get("status") == state,
                       what=f"to be {state}", timeout=timeout, ns=ns)


def split_location(location: str) -> tuple[Path, int]:
    """`FILE:LINE` -> (resolved FILE, LINE)."""
    path, sep, line = str(location).rpartition(":")
    assert sep and path and line.isdigit(), f"location {location!r} is not FILE:LINE"
    return Path(path).resolve(), int(line)
