"""The Gateway API (standard channel, the CRDs pinned by scripts/versions.sh)
on a real API server, served by `holdfast serve --kubeconfig`: a Gateway of
holdfast's GatewayClass (deploy/gateway-api/), an HTTPRoute and a GRPCRoute
to a Service whose EndpointSlice lists a documentation address (192.0.2.0/24:
EndpointSlices refuse loopback; only the xDS content matters, no traffic
flows). A real gRPC xDS client (C++ core) targeting the GRPCRoute's hostname
must ACK the API listener, route configuration, cluster and endpoints made
from them; a route with a backendRef to a missing Service and one with a
cross-namespace backendRef no ReferenceGrant allows get the Gateway API
condition at /debug/status, while the valid routes keep being served."""

import base64
import json

import yaml

from hf_admin import Admin
from hf_gateway import wait_state
from hf_kube import REPO
from hf_process import environ_without_grpc, wait_for_file
from hf_wait import wait_for
from hf_world import START_TIMEOUT, Binaries, XdsClient, assert_no_nack, proxy_type_state

TIMEOUT = 30.0
HOLDFAST_CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev",
                 "routetables.holdfast.dev", "upstreams.holdfast.dev"]
GROUP = "gateway.networking.k8s.io"
GW_API = f"{GROUP}/v1"
HTTPROUTE = f"HTTPRoute.{GROUP}"
GRPCROUTE = f"GRPCRoute.{GROUP}"
LISTENER = "type.googleapis.com/envoy.config.listener.v3.Listener"
ROUTES = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
CLUSTER = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
CLA = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
GRPC_HOST = "echo.test"  # what XdsClient targets: xds:///echo.test
GRPC_CLUSTER = "apps/gateway-api:h2:web:50051"
GRPC_ROUTES = f"grpc/infra/gateway-api:gw:8080:{GRPC_HOST}"


def install(kube, kube_binaries) -> None:
    a = kube.admin
    a.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    a.wait_crds_established(HOLDFAST_CRDS)
    files = sorted(kube_binaries.gateway_api_crds.glob("*.yaml"))
    crds = [d for f in files for d in yaml.safe_load_all(f.read_text())
            if d and d["kind"] == "CustomResourceDefinition"]
    a.apply(crds, field_manager="gateway-api")
    a.wait_crds_established([c["metadata"]["name"] for c in crds])
    a.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml",
             REPO / "deploy/gateway-api/gatewayclass.yaml"])
    for ns in ("infra", "apps", "other"):
        kube.ensure_namespace(ns)


def backend_objects() -> list:
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "web", "namespace": "apps"},
         "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080},
                            {"name": "grpc", "port": 50051, "targetPort": 9000,
                             "appProtocol": "kubernetes.io/h2c"}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-1", "namespace": "apps",
                      "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4",
         "ports": [{"name": "grpc", "port": 9000, "protocol": "TCP"},
                   {"name": "http", "port": 8080, "protocol": "TCP"}],
         "endpoints": [{"addresses": ["192.0.2.1"], "conditions": {"ready": True}}]},
    ]


def route(kind: str, ns: str, name: str, hostnames: list, rules: list) -> dict:
    return {"apiVersion": GW_API, "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": {"parentRefs": [{"name": "gw", "namespace": "infra"}],
                     "hostnames": hostnames, "rules": rules}}


def gateway_api_objects() -> list:
    return [
        {"apiVersion": GW_API, "kind": "Gateway", "metadata": {"name": "gw", "namespace": "infra"},
         "spec": {"gatewayClassName": "holdfast",
                  "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP",
                                 "allowedRoutes": {"namespaces": {"from": "All"}}}]}},
        route("HTTPRoute", "apps", "web", ["www.example.com"],
              [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"name": "web", "port": 80}]}]),
        route("GRPCRoute", "apps", "echo", [GRPC_HOST],
              [{"matches": [{"method": {"service": "holdfast.test.Echo", "method": "Call"}}],
                "backendRefs": [{"name": "web", "port": 50051}]}]),
        route("HTTPRoute", "apps", "missing", ["missing.example.com"],
              [{"backendRefs": [{"name": "nothere", "port": 80}]}]),
        route("HTTPRoute", "other", "cross", ["cross.example.com"],
              [{"backendRefs": [{"name": "web", "namespace": "apps", "port": 80}]}]),
    ]


def served(admin: Admin) -> dict:
    groups = admin.get_json("/debug/snapshot")["groups"]
    snapshot = groups[""] if "" in groups else next(iter(groups.values()))
    return {(t, r["name"]): {"resource": r.get("resource"), "type_version": typed["version"]}
            for t, typed in snapshot["types"].items() for r in typed["resources"]}


def reasons_text(status: dict) -> str:
    return json.dumps(status.get("reasons", []))


def test_gateway_api_served_to_a_grpc_client(kube, kube_binaries, procs, tmp_path):
    install(kube, kube_binaries)
    kube.admin.apply(backend_objects())
    kube.admin.apply(gateway_api_objects())
    binaries = Binaries.from_env()
    ports_file = tmp_path / "ports.json"
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--kubeconfig", kube.kubeconfig("holdfast"),
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--ports-file", ports_file], env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))

    wait_state(admin, f"GatewayClass.{GROUP}", "holdfast", "Accepted", ns="", timeout=TIMEOUT)
    wait_state(admin, f"Gateway.{GROUP}", "gw", "Accepted", ns="infra", timeout=TIMEOUT)
    wait_state(admin, GRPCROUTE, "echo", "Accepted", ns="apps", timeout=TIMEOUT)
    wait_state(admin, HTTPROUTE, "web", "Accepted", ns="apps", timeout=TIMEOUT)

    # A real gRPC client receives what the GRPCRoute became, and ACKs it.
    client = XdsClient(procs, binaries, "cpp", int(ports["xds"]), tmp_path,
                       target_host=GRPC_HOST, deadline_ms=200)

    def look():
        now = served(admin)
        acked = {t: (proxy_type_state(admin, client.node_id, t) or {}).get("acked_version")
                 for t in (LISTENER, ROUTES, CLUSTER, CLA)}
        return now, acked

    def complete(result):
        # Route configurations and load assignments carry the snapshot's
        # type version; listener and cluster responses are versioned per
        # subscription, so for them an ACK of what is served is enough.
        now, acked = result
        wanted = [(LISTENER, GRPC_HOST), (ROUTES, GRPC_ROUTES), (CLUSTER, GRPC_CLUSTER),
                  (CLA, GRPC_CLUSTER)]
        return (all(k in now for k in wanted) and acked[LISTENER] and acked[CLUSTER]
                and all(acked[t] == now[(t, GRPC_CLUSTER if t == CLA else GRPC_ROUTES)]
                        ["type_version"] for t in (ROUTES, CLA)))

    now, _ = wait_for(look, complete, timeout=TIMEOUT,
                      what=f"{client.node_id} to ACK the GRPCRoute's resources")
    assert_no_nack(admin, client.node_id)
    routes = json.dumps(now[(ROUTES, GRPC_ROUTES)]["resource"])
    assert "/holdfast.test.Echo/Call" in routes, routes
    assert GRPC_CLUSTER in routes, routes
    cla = json.dumps(now[(CLA, GRPC_CLUSTER)]["resource"])
    assert "192.0.2.1" in cla and "9000" in cla, cla
    assert (LISTENER, "gateway/infra/gateway-api:gw:8080") in now, "the Envoy listener"
    assert (LISTENER, "www.example.com") in now

    # Bad references: the Gateway API condition at /debug/status, and the
    # valid routes keep serving.
    missing = wait_state(admin, HTTPROUTE, "missing", "Warning", ns="apps", timeout=TIMEOUT)
    assert "BackendNotFound" in reasons_text(missing), missing
    assert "spec.rules[0].backendRefs[0].name" in reasons_text(missing), missing
    cross = wait_state(admin, HTTPROUTE, "cross", "Warning", ns="other", timeout=TIMEOUT)
    assert "RefNotPermitted" in reasons_text(cross), cross
    assert "spec.rules[0].backendRefs[0].namespace" in reasons_text(cross), cross
    wait_state(admin, GRPCROUTE, "echo", "Accepted", ns="apps", timeout=TIMEOUT)

    # A ReferenceGrant in the target namespace allows the cross reference.
    kube.admin.apply({"apiVersion": f"{GROUP}/v1beta1", "kind": "ReferenceGrant",
                      "metadata": {"name": "from-other", "namespace": "apps"},
                      "spec": {"from": [{"group": GROUP, "kind": "HTTPRoute",
                                         "namespace": "other"}],
                               "to": [{"group": "", "kind": "Service"}]}})
    wait_state(admin, HTTPROUTE, "cross", "Accepted", ns="other", timeout=TIMEOUT)
    now = served(admin)
    assert (CLA, GRPC_CLUSTER) in now
    assert_no_nack(admin, client.node_id)

    # The statuses, as the replica (the leader of one) wrote them to the
    # API server, each about the generation it read.
    def api_status(kind, name, ns):
        obj = kube.admin.get(f"{GROUP}/v1", kind, name, ns)
        return obj, (obj or {}).get("status") or {}

    def condition(conditions, type_):
        return next((c for c in conditions if c["type"] == type_), {})

    def parent_conditions(status):
        return [p for p in status.get("parents", [])
                if p.get("controllerName") == "holdfast.dev/gateway-controller"]

    obj, status = wait_for(lambda: api_status("GatewayClass", "holdfast", None),
                           lambda r: condition(r[1].get("conditions", []), "Accepted"),
                           timeout=TIMEOUT, what="the GatewayClass status on the API server")
    accepted = condition(status["conditions"], "Accepted")
    assert accepted["status"] == "True", status
    assert accepted["observedGeneration"] == obj["metadata"]["generation"], (obj, status)
    _, status = wait_for(lambda: api_status("Gateway", "gw", "infra"),
                         lambda r: condition(r[1].get("conditions", []), "Programmed"),
                         timeout=TIMEOUT, what="the Gateway status on the API server")
    assert condition(status["conditions"], "Programmed")["status"] == "True", status
    assert any(listener.get("attachedRoutes", 0) >= 1 for listener in status["listeners"]), status
    _, status = wait_for(lambda: api_status("HTTPRoute", "missing", "apps"),
                         lambda r: parent_conditions(r[1]), timeout=TIMEOUT,
                         what="the HTTPRoute status on the API server")
    resolved = condition(parent_conditions(status)[0]["conditions"], "ResolvedRefs")
    assert (resolved["status"], resolved["reason"]) == ("False", "BackendNotFound"), status
    # The cross-namespace route, allowed since the ReferenceGrant.
    _, status = wait_for(
        lambda: api_status("HTTPRoute", "cross", "other"),
        lambda r: parent_conditions(r[1]) and condition(
            parent_conditions(r[1])[0]["conditions"], "ResolvedRefs").get("status") == "True",
        timeout=TIMEOUT, what="the cross-namespace HTTPRoute resolved on the API server")
    print("HTTPRoute other/cross status:", json.dumps(status))
    # Stopped before the API server (the fixture's teardown), whose graceful
    # shutdown would otherwise wait for holdfast's open watches.
    assert holdfast.stop() == 0


def test_serves_without_gateway_api_crds(kube, procs, tmp_path):
    """Without the Gateway API CRDs, holdfast's own objects are served (the
    missing kinds do not hold translation back)."""
    a = kube.admin
    a.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    a.wait_crds_established(HOLDFAST_CRDS)
    a.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml"])
    kube.ensure_namespace("apps")
    a.apply({"apiVersion": "holdfast.dev/v1", "kind": "Upstream",
             "metadata": {"name": "api", "namespace": "apps"},
             "spec": {"hosts": [{"address": "192.0.2.5", "port": 8080}]}})
    binaries = Binaries.from_env()
    ports_file = tmp_path / "ports.json"
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--kubeconfig", kube.kubeconfig("holdfast"),
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--ports-file", ports_file], env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))
    wait_state(admin, "Upstream", "api", "Accepted", ns="apps", timeout=TIMEOUT)
    wait_for(lambda: served(admin), lambda now: (CLA, "apps/api") in now, timeout=TIMEOUT,
             what="the upstream served")
    assert holdfast.stop() == 0


def test_https_listener_terminates_with_a_tls_secret(kube, kube_binaries, procs, tmp_path):
    """An HTTPS listener's certificate from a kubernetes.io/tls Secret, read
    with deploy/rbac.yaml's per-namespace Secret access: holdfast watches
    holdfast-system (where holdfast-tls-secrets is bound) and infra (where
    it is not: Secrets there are refused, which holds nothing back)."""
    install(kube, kube_binaries)
    pem = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n")
    key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nTEST\n-----END PRIVATE KEY-----\n")
    kube.admin.apply([
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": "web-tls", "namespace": "holdfast-system"},
         "data": {"tls.crt": pem.decode(), "tls.key": key.decode()}},
        {"apiVersion": GW_API, "kind": "Gateway",
         "metadata": {"name": "secure", "namespace": "holdfast-system"},
         "spec": {"gatewayClassName": "holdfast",
                  "listeners": [{"name": "https", "port": 8443, "protocol": "HTTPS",
                                 "tls": {"certificateRefs": [{"name": "web-tls"}]}}]}},
        {"apiVersion": GW_API, "kind": "Gateway",
         "metadata": {"name": "plain", "namespace": "infra"},
         "spec": {"gatewayClassName": "holdfast",
                  "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}},
    ])
    binaries = Binaries.from_env()
    ports_file = tmp_path / "ports.json"
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--kubeconfig", kube.kubeconfig("holdfast"),
        "--watch-namespace", "holdfast-system", "--watch-namespace", "infra",
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--ports-file", ports_file], env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))
    # Warning, not Accepted: no route is attached, so every request gets 404.
    for ns, name in (("holdfast-system", "secure"), ("infra", "plain")):
        status = wait_state(admin, f"Gateway.{GROUP}", name, "Warning", ns=ns, timeout=TIMEOUT)
        assert "every request gets 404" in reasons_text(status), status
    now = wait_for(lambda: served(admin),
                   lambda s: (LISTENER, "gateway/holdfast-system/gateway-api:secure:8443") in s,
                   timeout=TIMEOUT, what="the HTTPS listener served")
    listener = json.dumps(now[(LISTENER, "gateway/holdfast-system/gateway-api:secure:8443")])
    assert "DownstreamTlsContext" in listener, listener
    assert "BEGIN CERTIFICATE" in listener, listener
    assert holdfast.stop() == 0
