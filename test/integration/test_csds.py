"""CSDS (envoy.service.status.v3.ClientStatusDiscoveryService) on the xDS
port, asked by a grpc-go program built on go-control-plane's generated CSDS
stubs (goclient csds), about real gRPC xDS clients (C++ core, grpc-go,
grpc-js-xds) that ACK and then NACK what holdfast sends them:

- every client is one ClientConfig with its node; every resource it holds
  is ACKED and SYNCED, with its version and contents;
- after a cluster change the clients reject (MAGLEV: valid for Envoy, not
  for proxyless gRPC), the cluster is NACKED with the client's own error,
  the version it still holds and the rejected contents, while listeners
  and routes stay ACKED and the clients keep routing;
- node matchers select by id; StreamClientStatus answers every request;
- --xds-csds false refuses the service (PERMISSION_DENIED)."""

import json
import subprocess

from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT

LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
KINDS = ("cpp", "go", "node")


def csds(go_client_binary, holdfast, *args) -> list:
    """Runs goclient csds against holdfast; its responses (one per request),
    or the error line it printed."""
    r = subprocess.run([go_client_binary, "csds", "--server", f"127.0.0.1:{holdfast.xds_port}",
                        *args], capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    if r.returncode != 0:
        assert lines and lines[-1].startswith("error "), (r.returncode, r.stdout, r.stderr)
        return lines[-1]
    return [json.loads(line) for line in lines]


def configs_by_node(response: dict) -> dict:
    """node id -> {(type_url, name): GenericXdsConfig as JSON}."""
    out = {}
    for config in response.get("config", []):
        entries = {(e["typeUrl"], e["name"]): e for e in config.get("genericXdsConfigs", [])}
        out[config["node"]["id"]] = entries
    return out


def fetch(go_client_binary, holdfast, *args) -> dict:
    responses = csds(go_client_binary, holdfast, *args)
    assert isinstance(responses, list) and len(responses) == 1, responses
    return configs_by_node(responses[0])


def all_acked(entries: dict) -> bool:
    types = {t for t, _ in entries}
    return {LDS, RDS, CDS, EDS} <= types and all(
        e.get("clientStatus") == "ACKED" and e.get("configStatus") == "SYNCED"
        for e in entries.values())


def test_csds_reports_what_real_clients_acked_and_nacked(world, go_client_binary):
    holdfast = world.start_holdfast()
    clients = {kind: world.client(kind) for kind in KINDS}
    for client in clients.values():
        client.wait_serving("alpha", timeout=START_TIMEOUT)
    nodes = {c.node_id for c in clients.values()}

    acked = wait_for(lambda: fetch(go_client_binary, holdfast),
                     lambda by_node: nodes <= set(by_node) and
                     all(all_acked(by_node[n]) for n in nodes),
                     timeout=CONVERGE_TIMEOUT, what="every client's resources ACKED in CSDS")
    print("CSDS, all ACKED:", json.dumps(list(acked[clients["go"].node_id].values()), indent=1)[:3000])
    for node in nodes:
        for (type_url, name), entry in acked[node].items():
            assert entry["versionInfo"], (node, type_url, name, entry)
            assert entry["xdsConfig"]["@type"] == type_url, entry
            assert entry["xdsConfig"].get("name", name) == name or type_url == EDS, entry
    [cluster_key] = [k for k in acked[clients["cpp"].node_id] if k[0] == CDS]
    held_version = acked[clients["cpp"].node_id][cluster_key]["versionInfo"]

    # A change the proxyless clients reject.
    world.xds.set_cluster(lb_policy="MAGLEV")

    def nacked(by_node):
        return all(by_node.get(n, {}).get(cluster_key, {}).get("clientStatus") == "NACKED"
                   for n in nodes)
    after = wait_for(lambda: fetch(go_client_binary, holdfast), nacked,
                     timeout=CONVERGE_TIMEOUT, what="the cluster NACKED by every client in CSDS")
    for kind, client in clients.items():
        entries = after[client.node_id]
        cluster = entries[cluster_key]
        print(f"{kind} NACK in CSDS:", json.dumps(cluster["errorState"].get("details")))
        assert cluster["configStatus"] == "ERROR", cluster
        assert cluster["versionInfo"] == held_version, "the version the client still holds"
        assert cluster["xdsConfig"].get("lbPolicy", "ROUND_ROBIN") == "ROUND_ROBIN", cluster
        error = cluster["errorState"]
        assert error["details"], f"{kind}: the client's error detail is missing: {cluster}"
        assert error["failedConfiguration"]["lbPolicy"] == "MAGLEV", error
        assert error["versionInfo"] and "lastUpdateAttempt" in error, error
        # The admin endpoint tells the same story.
        proxy = holdfast.admin.proxy(client.node_id)
        assert proxy["types"][CDS]["nack"]["error"] == error["details"], proxy
        for (type_url, name), entry in entries.items():
            if type_url != CDS:
                assert entry["clientStatus"] == "ACKED", (kind, type_url, name, entry)
    for client in clients.values():  # still routing on what they hold
        client.wait_serving("alpha", since=client.mark(), timeout=CONVERGE_TIMEOUT)

    # Selection by node id, and without contents.
    only_go = fetch(go_client_binary, holdfast, "--node-prefix", clients["go"].node_id,
                    "--exclude-contents")
    assert set(only_go) == {clients["go"].node_id}, only_go
    assert all("xdsConfig" not in e for e in only_go[clients["go"].node_id].values())
    assert fetch(go_client_binary, holdfast, "--node-prefix", "nobody-") == {}

    # StreamClientStatus: one answer per request on one stream.
    streamed = csds(go_client_binary, holdfast, "--stream", "3", "--interval-ms", "100")
    assert isinstance(streamed, list) and len(streamed) == 3, streamed
    assert all(nodes <= set(configs_by_node(r)) for r in streamed)


def test_csds_can_be_turned_off(world, go_client_binary):
    world.holdfast.start(extra_args=["--xds-csds", "false"])
    world.holdfast.wait_ready()
    line = csds(go_client_binary, world.holdfast)
    assert line.startswith("error 7 ") and "--xds-csds" in line, line
