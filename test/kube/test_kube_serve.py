"""`holdfast serve --kubeconfig` end to end: the least-privileged holdfast
user's kubeconfig against a real API server, gateway objects applied as
custom resources, a real gRPC xDS client (C++ core) routed by them; an object
the schema admits but holdfast rejects keeps its last good version in
service; the API server stopped -> holdfast keeps serving and /readyz says
the store is unreachable; it follows changes again once the API server is
back."""

import json

from hf_admin import Admin
from hf_gateway import route, upstream, virtual_service, wait_state
from hf_kube import REPO
from hf_process import environ_without_grpc, wait_for_file
from hf_wait import wait_for
from hf_world import START_TIMEOUT, Backend, Binaries, XdsClient, assert_no_nack

CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev"]
TIMEOUT = 30.0


def test_serves_objects_from_the_api_server_through_an_outage(kube, procs, tmp_path):
    kube.admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    kube.admin.wait_crds_established(CRDS)
    kube.admin.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml"])
    kube.ensure_namespace("test")
    binaries = Binaries.from_env()
    a = Backend(procs, binaries.echo_backend, "a", tmp_path)
    b = Backend(procs, binaries.echo_backend, "b", tmp_path)
    kube.admin.apply([upstream("up-a", a.port), upstream("up-b", b.port),
                      virtual_service("vs", [route(upstream="up-a")])])

    ports_file = tmp_path / "ports.json"
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--kubeconfig", kube.kubeconfig("holdfast"),
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--ports-file", ports_file, "--state-dir", tmp_path / "state"],
        env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))
    wait_for(lambda: admin.get("/readyz")[0], lambda s: s == 200, timeout=START_TIMEOUT,
             what="/readyz 200")
    client = XdsClient(procs, binaries, "cpp", int(ports["xds"]), tmp_path)
    client.wait_serving("a", timeout=TIMEOUT)
    assert_no_nack(admin, client.node_id)

    # A change is followed.
    mark = client.mark()
    kube.admin.apply(virtual_service("vs", [route(upstream="up-b")]))
    client.wait_serving("b", since=mark, timeout=TIMEOUT)

    # A regex no schema can check: stored, Rejected by holdfast, which keeps
    # serving the last good version.
    kube.admin.apply(virtual_service("vs", [route({"regex": "/(x"}, upstream="up-a")]))
    status = wait_state(admin, "VirtualService", "vs", "Rejected", timeout=TIMEOUT)
    print("rejected:", status)
    assert status["serving_last_good"] is True
    reasons = json.dumps(status)
    assert "spec.routes[0].match.regex" in reasons
    assert "kubernetes:VirtualService/test/vs" in reasons
    mark = client.mark()
    client.wait_serving("b", since=mark, timeout=TIMEOUT)

    # The API server goes away: holdfast keeps serving and says why.
    kube.stop_apiserver()
    body = wait_for(lambda: admin.get("/readyz"),
                    lambda r: r[0] == 200 and "store unreachable" in r[1],
                    timeout=TIMEOUT, what="/readyz to report the store unreachable")[1]
    print("readyz during the outage:", body)
    mark = client.mark()
    client.wait_serving("b", since=mark, timeout=TIMEOUT)
    assert holdfast.running()

    # Back: the fix is followed and the store is reachable again.
    kube.start_apiserver()
    mark = client.mark()
    kube.admin.apply(virtual_service("vs", [route(upstream="up-a")]))
    client.wait_serving("a", since=mark, timeout=TIMEOUT)
    wait_state(admin, "VirtualService", "vs", "Accepted", timeout=TIMEOUT)
    wait_for(lambda: admin.get("/readyz"),
             lambda r: r[0] == 200 and "unreachable" not in r[1],
             timeout=TIMEOUT, what="/readyz without the outage")
    assert_no_nack(admin, client.node_id)

    # holdfast ends (cleanly) before the API server, whose graceful shutdown
    # otherwise waits on holdfast's open watches; under load it overran the
    # harness's 30 s grace.
    assert holdfast.stop() == 0
