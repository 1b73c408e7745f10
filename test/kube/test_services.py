"""Services as upstreams on a real API server: an Upstream naming a Service
port, served by `holdfast serve --kubeconfig` from the Service's
EndpointSlices. What is served is read at /debug/snapshot (resource contents
and versions); a real gRPC xDS client (C++ core) subscribed to the cluster
must ACK each new endpoint version, so it received exactly that content
(versions are content digests). The endpoints are documentation addresses
(192.0.2.0/24; EndpointSlices refuse loopback): only the xDS content
matters here, no traffic flows. Each EndpointSlice change (an endpoint
added, set terminating, removed) changes the version of that cluster's load
assignment and of nothing else."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from hf_admin import Admin
from hf_etcd import FaultProxy
from hf_gateway import NAMESPACE, route, virtual_service, wait_state
from hf_kube import REPO
from hf_process import environ_without_grpc, wait_for_file
from hf_wait import wait_for
from hf_world import (START_TIMEOUT, Backend, Binaries, XdsClient, assert_no_nack,
                      proxy_type_state)

CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev"]
CLA = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
CLUSTER = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
TIMEOUT = 30.0
NAME = f"{NAMESPACE}/web"


def service() -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {"ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "grpc", "port": 50051, "targetPort": 9000,
                 "appProtocol": "kubernetes.io/h2c"}]}}


def endpoint(address: str, zone: str, *, terminating: bool = False) -> dict:
    conditions = ({"ready": False, "serving": True, "terminating": True} if terminating
                  else {"ready": True})
    return {"addresses": [address], "zone": zone, "conditions": conditions}


def slice_(name: str, endpoints: list) -> dict:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "grpc", "port": 9000, "protocol": "TCP"},
                      {"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": endpoints}


def served(admin: Admin) -> dict:
    """(type, name) -> {version, resource} of the default group's snapshot."""
    groups = admin.get_json("/debug/snapshot")["groups"]
    snapshot = groups[""] if "" in groups else next(iter(groups.values()))
    out = {}
    for type_url, typed in snapshot["types"].items():
        for r in typed["resources"]:
            out[(type_url, r["name"])] = {"version": r["version"], "resource": r.get("resource"),
                                          "type_version": typed["version"]}
    return out


def localities(cla: dict) -> dict:
    """zone -> (weight, sorted 'address:port[/DRAINING]')."""
    out = {}
    for locality in cla.get("endpoints", []):
        entries = []
        for lb in locality.get("lb_endpoints", []):
            socket = lb["endpoint"]["address"]["socket_address"]
            entry = f"{socket['address']}:{socket['port_value']}"
            if lb.get("health_status") == "DRAINING":
                entry += "/DRAINING"
            entries.append(entry)
        out[locality["locality"]["zone"]] = (locality["load_balancing_weight"], sorted(entries))
    return out


def wait_served(admin: Admin, client: XdsClient, want: dict) -> dict:
    """Waits until the load assignment served is `want` (localities()) and
    the client has ACKed its version; returns what is served."""
    def look():
        now = served(admin)
        cla = now.get((CLA, NAME))
        state = proxy_type_state(admin, client.node_id, CLA) or {}
        return now, cla and localities(cla["resource"]), state.get("acked_version")

    now, _, _ = wait_for(
        look, lambda r: r[1] == want and r[2] == r[0][(CLA, NAME)]["type_version"],
        timeout=TIMEOUT, what=f"{want} served and ACKed by {client.node_id}")
    assert_no_nack(admin, client.node_id)
    return now


def changed(before: dict, after: dict) -> set:
    keys = set(before) | set(after)
    return {k for k in keys if (before.get(k) or {}).get("version")
            != (after.get(k) or {}).get("version")}


def set_up(kube, slice_endpoints: list) -> None:
    kube.admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    kube.admin.wait_crds_established(CRDS)
    kube.admin.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml"])
    kube.ensure_namespace(NAMESPACE)
    kube.admin.apply([service(), slice_("web-1", slice_endpoints)])
    kube.admin.apply([
        {"apiVersion": "holdfast.dev/v1", "kind": "Upstream",
         "metadata": {"name": "web", "namespace": NAMESPACE},
         "spec": {"service": {"name": "web", "portName": "grpc"}, "connectTimeout": "1s"}},
        virtual_service("vs", [route(upstream="web")])])


def start_holdfast(kube, procs, tmp_path, binaries: Binaries):
    ports_file = tmp_path / "ports.json"
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--kubeconfig", kube.kubeconfig("holdfast"),
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--ports-file", ports_file], env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))
    wait_state(admin, "Upstream", "web", "Accepted", timeout=TIMEOUT)
    return holdfast, admin, int(ports["xds"])


def test_service_endpoints_follow_endpoint_slices(kube, procs, tmp_path):
    set_up(kube, [endpoint("192.0.2.1", "zone-a"), endpoint("192.0.2.2", "zone-b")])
    binaries = Binaries.from_env()
    holdfast, admin, xds_port = start_holdfast(kube, procs, tmp_path, binaries)
    client = XdsClient(procs, binaries, "cpp", xds_port, tmp_path, deadline_ms=200)

    now = wait_served(admin, client, {"zone-a": (1, ["192.0.2.1:9000"]),
                                      "zone-b": (1, ["192.0.2.2:9000"])})
    cluster = now[(CLUSTER, NAME)]["resource"]
    assert cluster["type"] == "EDS"
    assert "envoy.extensions.upstreams.http.v3.HttpProtocolOptions" in (
        cluster.get("typed_extension_protocol_options") or {}), "appProtocol h2c: HTTP/2"

    steps = [
        ("an endpoint added",
         [endpoint("192.0.2.1", "zone-a"), endpoint("192.0.2.2", "zone-b"),
          endpoint("192.0.2.3", "zone-a")],
         {"zone-a": (2, ["192.0.2.1:9000", "192.0.2.3:9000"]), "zone-b": (1, ["192.0.2.2:9000"])}),
        ("an endpoint terminating",
         [endpoint("192.0.2.1", "zone-a", terminating=True), endpoint("192.0.2.2", "zone-b"),
          endpoint("192.0.2.3", "zone-a")],
         {"zone-a": (2, ["192.0.2.1:9000/DRAINING", "192.0.2.3:9000"]),
          "zone-b": (1, ["192.0.2.2:9000"])}),
        ("an endpoint removed",
         [endpoint("192.0.2.1", "zone-a", terminating=True), endpoint("192.0.2.3", "zone-a")],
         {"zone-a": (2, ["192.0.2.1:9000/DRAINING", "192.0.2.3:9000"])}),
    ]
    for what, endpoints, want in steps:
        kube.admin.apply(slice_("web-1", endpoints))
        after = wait_served(admin, client, want)
        assert changed(now, after) == {(CLA, NAME)}, f"{what}: {changed(now, after)}"
        now = after

    # The Service deleted: a Warning at spec.service, no endpoints; the
    # route and its neighbours stay.
    kube.admin.delete("v1", "Service", "web", NAMESPACE)
    status = wait_state(admin, "Upstream", "web", "Warning", timeout=TIMEOUT)
    assert "spec.service" in json.dumps(status), status
    after = wait_served(admin, client, {})
    assert (CLUSTER, NAME) in after
    wait_state(admin, "VirtualService", "vs", "Accepted", timeout=TIMEOUT)
    assert holdfast.running()


# --- traffic ----------------------------------------------------------------------------

# Inside a network namespace of its own, the test gives loopback two
# addresses EndpointSlices accept; a relay on each forwards to an echo
# backend (which listens on 127.0.0.1).
NETNS_ADDRESSES = ["192.0.2.10", "192.0.2.11"]
IN_NETNS = "HOLDFAST_SERVICES_NETNS"


def test_traffic_follows_endpoint_slices_in_a_network_namespace():
    """Runs test_traffic_inside_network_namespace in a private network
    namespace (unshare --net --map-root-user), like the chaos suite."""
    unshare = shutil.which("unshare")
    ip = shutil.which("ip")
    assert unshare and ip, "unshare and ip are needed to make a network namespace"
    addresses = " && ".join(f"ip addr add {a}/32 dev lo" for a in NETNS_ADDRESSES)
    inner = [sys.executable, "-m", "pytest", "-x", "-p", "no:cacheprovider",
             f"{__file__}::test_traffic_inside_network_namespace"]
    script = f"ip link set lo up && {addresses} && exec " + " ".join(f"'{a}'" for a in inner)
    r = subprocess.run([unshare, "--net", "--map-root-user", "sh", "-c", script],
                       cwd=REPO / "test/kube", env=dict(os.environ, **{IN_NETNS: "1"}),
                       capture_output=True, text=True, timeout=600)
    print(r.stdout[-20000:], r.stderr[-5000:])
    assert r.returncode == 0, f"the test inside the namespace failed:\n{r.stdout[-6000:]}"
    assert "1 passed" in r.stdout


@pytest.mark.skipif(os.environ.get(IN_NETNS) != "1",
                    reason="runs inside the namespace test_traffic_follows_... makes")
def test_traffic_inside_network_namespace(kube, procs, tmp_path):
    binaries = Binaries.from_env()
    backends = [Backend(procs, binaries.echo_backend, name, tmp_path) for name in ("a", "b")]
    relays = [FaultProxy(b.port, name=f"relay-{b.name}", port=9000, host=address)
              for b, address in zip(backends, NETNS_ADDRESSES)]
    try:
        set_up(kube, [endpoint(NETNS_ADDRESSES[0], "zone-a")])
        holdfast, admin, xds_port = start_holdfast(kube, procs, tmp_path, binaries)
        client = XdsClient(procs, binaries, "cpp", xds_port, tmp_path)
        client.wait_serving("a", timeout=TIMEOUT)

        # b added, a terminating (draining): new requests go to b.
        mark = client.mark()
        kube.admin.apply(slice_("web-1", [endpoint(NETNS_ADDRESSES[0], "zone-a", terminating=True),
                                          endpoint(NETNS_ADDRESSES[1], "zone-b")]))
        client.wait_serving("b", since=mark, timeout=TIMEOUT)

        # a ready again and b removed: back to a.
        mark = client.mark()
        kube.admin.apply(slice_("web-1", [endpoint(NETNS_ADDRESSES[0], "zone-a")]))
        client.wait_serving("a", since=mark, timeout=TIMEOUT)
        assert_no_nack(admin, client.node_id)
        assert holdfast.running()
    finally:
        for relay in relays:
            relay.close()
