"""Client for holdfast's admin HTTP endpoints (readiness, metrics, debug)."""

import json
import re
import urllib.error
import urllib.request
from typing import Optional

# Loopback only: never route admin requests through a proxy from the
# environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> dict:
    """Prometheus text format -> {(name, frozenset(labels.items())): value}."""
    samples = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError(f"malformed metrics line: {line!r}")
        name, labels_text, value = m.groups()
        labels = {}
        if labels_text:
            for k, v in _LABEL.findall(labels_text):
                labels[k] = v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        samples[(name, frozenset(labels.items()))] = float(value)
    return samples


class Admin:
    """`token`: the bearer token sent with every request (--admin-token-file)."""

    def __init__(self, port: int, token: Optional[str] = None):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.token = token

    def get(self, path: str, timeout: float = 2.0) -> tuple[Optional[int], str]:
        """(status, body); status None when the server is unreachable."""
        request = urllib.request.Request(self.base + path)
        if self.token is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with _OPENER.open(request, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return None, str(e)

    def get_json(self, path: str):
        status, body = self.get(path)
        if status != 200:
            raise AssertionError(f"GET {path}: status {status}: {body[:500]}")
        try:
            return json.loads(body)
        except json.JSONDecodeError as e:
            raise AssertionError(f"GET {path}: not JSON ({e}): {body[:500]}") from e

    def metrics(self) -> dict:
        status, body = self.get("/metrics")
        if status != 200:
            raise AssertionError(f"GET /metrics: status {status}: {body[:500]}")
        return parse_prometheus(body)

    def metric(self, name: str, **labels) -> float:
        """One sample's value; 0 when the series does not exist yet (a
        counter that was never incremented may be absent)."""
        return self.metrics().get((name, frozenset(labels.items())), 0.0)

    def proxies(self) -> list:
        doc = self.get_json("/debug/proxies")
        if not isinstance(doc, dict) or not isinstance(doc.get("proxies"), list):
            raise AssertionError(f"/debug/proxies: expected {{'proxies': [...]}}, got {doc!r}")
        return doc["proxies"]

    def proxy(self, node_id: str) -> Optional[dict]:
        """The /debug/proxies entry of `node_id`, or None if not connected."""
        matches = [p for p in self.proxies() if p.get("node_id") == node_id]
        if len(matches) > 1:
            raise AssertionError(f"node {node_id} listed {len(matches)} times: {matches!r}")
        return matches[0] if matches else None
