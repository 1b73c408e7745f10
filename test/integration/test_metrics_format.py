"""Metrics and logs fit the tools operators already run: /metrics passes
`promtool check metrics` (Debian's prometheus package; scripts/setup.sh
fetches the binary), every series the Grafana dashboard in deploy/grafana/
queries is one holdfast exposes and docs/reference.md lists, and
`--log-format json` writes one JSON object per line.

The series are taken from two real replicas in one test: one serving a
directory to a real gRPC client that NACKs (the per-type xDS series and
proxies by state), and one on etcd that leads (election and store series)."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "holdfast-dashboard.json"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"


def promtool() -> str:
    path = os.environ.get("HOLDFAST_PROMTOOL") or str(
        Path(os.environ.get("HOLDFAST_CACHE", Path.home() / ".cache" / "holdfast"))
        / "promtool" / "promtool")
    if not os.access(path, os.X_OK):
        pytest.fail(f"promtool not found at {path}: run scripts/setup.sh", pytrace=False)
    return path


def assert_promtool_passes(body: str, what: str) -> None:
    r = subprocess.run([promtool(), "check", "metrics"], input=body, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip(), \
        f"promtool check metrics on {what}: exit {r.returncode}\n{r.stdout}{r.stderr}"


def exposed_names(body: str) -> set:
    return {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE ")}


def dashboard_metric_names() -> set:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    exprs += [v.get("query", "") for v in doc["templating"]["list"]]
    assert exprs, "the dashboard queries nothing"
    return {m for e in exprs for m in re.findall(r"\bholdfast_[a-z0-9_]+", e)}


def metrics_body(admin) -> str:
    status, body = admin.get("/metrics")
    assert status == 200, (status, body[:300])
    return body


def test_metrics_pass_promtool_and_cover_the_dashboard(world, store):
    holdfast = world.start_holdfast()
    client = world.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    # Valid for Envoy, unsupported by proxyless gRPC: the client NACKs it.
    world.xds.set_cluster(lb_policy="MAGLEV")
    wait_for(lambda: holdfast.admin.metric("holdfast_proxies", state="nacking"), lambda n: n == 1,
             timeout=CONVERGE_TIMEOUT, what="the NACKing client counted as nacking")
    assert holdfast.admin.metric("holdfast_proxies", state="synced") == 0
    assert holdfast.admin.metric("holdfast_xds_nacks_total", type_url=CDS) >= 1
    # Every ACK was a push measured: as many observations as ACKs.
    acks = holdfast.admin.metric("holdfast_xds_acks_total", type_url=CDS)
    assert acks >= 1
    assert holdfast.admin.metric("holdfast_xds_push_seconds_count", type_url=CDS) == acks
    fleet = metrics_body(holdfast.admin)
    assert_promtool_passes(fleet, "a replica serving a NACKing client")

    leader = store.replica("a", extra=["--log-format", "json"]).wait_ready()
    wait_for(lambda: leader.metric("holdfast_is_leader"), lambda v: v == 1,
             timeout=CONVERGE_TIMEOUT, what="replica a leading")
    elected = metrics_body(leader.admin)
    assert_promtool_passes(elected, "a leading replica on etcd")

    exposed = exposed_names(fleet) | exposed_names(elected)
    # A histogram is queried by its series: _bucket, _sum, _count.
    missing = sorted(n for n in dashboard_metric_names()
                     if n not in exposed and re.sub(r"_(bucket|sum|count)$", "", n) not in exposed)
    assert not missing, f"the dashboard queries series holdfast does not expose: {missing}"
    reference = (REPO / "docs" / "reference.md").read_text()
    undocumented = sorted(n for n in exposed if f"`{n}`" not in reference)
    assert not undocumented, f"metrics missing from docs/reference.md: {undocumented}"

    # The harness writes the command line first ("$ holdfast serve ...").
    lines = [line for line in leader.log_lines_since(0) if not line.startswith("$ ")]
    assert lines, "the replica logged nothing"
    for line in lines:
        entry = json.loads(line)  # every line, not most
        assert set(entry) == {"time", "level", "msg"}, line
        assert entry["level"] in ("debug", "info", "warn", "error"), line
