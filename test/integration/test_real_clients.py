"""holdfast against real proxyless gRPC xDS clients.

The clients are independent xDS implementations (gRPC C++ core from Debian's
libgrpc, @grpc/grpc-js-xds, grpc-go's xds package): they validate what holdfast serves, ACK or NACK
it, and route real RPCs to echo backends by it. Each test waits with a
deadline for an observable condition and asserts it; none passes by sleeping.
"""

import pytest

from hf_process import free_port
from hf_resources import ALL_TYPES, CDS, EDS, LDS, TARGET_HOST, listener
from hf_wait import assert_stays, wait_for
from hf_world import (CONVERGE_TIMEOUT, START_TIMEOUT, XdsClient, fully_acked,
                      proxy_type_state)

# What each client says when it rejects a Cluster with lb_policy MAGLEV
# (none supports it without load_balancing_policy). Seen on this machine:
#  C++ core 1.51 (status 3): "xDS response validation errors: [resource index
#    0: echo-cluster: INVALID_ARGUMENT: errors validating Cluster resource:
#    [field:lb_policy error:LB policy is not supported]]"
#  grpc-js-xds 1.14.1 (status 14): "xDS response validation errors: [resource
#    index 0: Cluster message validation failed: [load_balancing_policy unset
#    and unsupported lb_policy: MAGLEV]]"
#  grpc-go 1.85.0 (status 3): "error parsing \"ClusterResource\" response:
#    resource \"echo-cluster\": unexpected lbPolicy MAGLEV in response: <the
#    cluster in text format>"
NACK_TEXT = {
    "cpp": "field:lb_policy error:LB policy is not supported",
    "node": "unsupported lb_policy: MAGLEV",
    "go": "unexpected lbPolicy MAGLEV",
}

# How long a rejected version is watched for re-sends. A re-send loop shows
# within milliseconds; two seconds also cover a poll of the config directory.
NO_LOOP_WINDOW = 2.0


def wait_fully_acked(admin, node_id: str) -> dict:
    return wait_for(lambda: admin.proxy(node_id), fully_acked,
                    timeout=CONVERGE_TIMEOUT,
                    what=f"{node_id} to ACK the last sent version of every type")


def responses_sent(proxy: dict) -> dict:
    return {t: s.get("responses_sent") for t, s in (proxy.get("types") or {}).items()}


def sent_metrics(admin) -> dict:
    """Server-wide responses and NACKs per type, the counters a loop moves."""
    m = admin.metrics()
    return {(name, t): m.get((name, frozenset({("type_url", t)})), 0.0)
            for name in ("holdfast_xds_responses_sent_total", "holdfast_xds_nacks_total")
            for t in ALL_TYPES}


def test_rpcs_reach_configured_backend(world, client_kind):
    """RPCs reach the backend the served config names; the proxy shows up
    as an ADS SotW stream that ACKed every type; SIGTERM exits cleanly."""
    holdfast = world.start_holdfast()
    client = world.client(client_kind)

    client.wait_serving("alpha", timeout=START_TIMEOUT)

    proxy = wait_fully_acked(holdfast.admin, client.node_id)
    assert proxy["stream"] == "ads-sotw", proxy
    for t in ALL_TYPES:
        assert proxy["types"][t]["responses_sent"] >= 1, (t, proxy)
    assert holdfast.admin.metric("holdfast_connected_proxies") == 1
    assert not any(l.startswith("ok beta") for l in client.lines()), \
        "beta is not in the served config but got traffic"

    # SIGTERM with a proxy's stream open: a graceful exit, promptly (an
    # unbounded server Shutdown() would wait for the ADS stream forever).
    code = holdfast.proc.stop(grace=10.0)
    assert code == 0, f"holdfast exited with {code} on SIGTERM (-9: still running after 10 s)"
    since = client.mark()
    assert client.wait_lines(5, since=since) == ["ok alpha"] * 5


def test_endpoint_change_moves_traffic(world, client_kind):
    """Rewriting the endpoint file moves the client's traffic to beta."""
    holdfast = world.start_holdfast()
    client = world.client(client_kind)
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    before = wait_fully_acked(holdfast.admin, client.node_id)

    world.xds.set_endpoint(world.beta.port)
    since = client.mark()

    client.wait_serving("beta", since=since)
    after = wait_fully_acked(holdfast.admin, client.node_id)
    assert after["types"][EDS]["acked_version"] != before["types"][EDS]["acked_version"]


@pytest.mark.parametrize("fix", ["new-version", "revert"])
def test_rejected_cluster_is_recorded_and_not_resent(world, client_kind, fix):
    """A Cluster the client rejects is recorded as that proxy's NACK with the
    client's own words, is not re-sent, and leaves RPCs on the last good
    config; a fix is ACKed and clears the NACK."""
    holdfast = world.start_holdfast()
    admin = holdfast.admin
    client = world.client(client_kind)
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    good = wait_fully_acked(admin, client.node_id)["types"][CDS]["acked_version"]
    nacks_before = sent_metrics(admin)[("holdfast_xds_nacks_total", CDS)]

    # Valid for Envoy, unsupported by proxyless gRPC: the client must NACK.
    world.xds.set_cluster(lb_policy="MAGLEV")

    def rejected(proxy):
        if proxy is None:
            return False
        cds = proxy["types"][CDS]
        others_quiet = fully_acked(proxy, [t for t in ALL_TYPES if t != CDS])
        return (cds.get("nack") is not None and cds["last_sent_version"] != good
                and others_quiet)

    proxy = wait_for(lambda: admin.proxy(client.node_id), rejected,
                     timeout=CONVERGE_TIMEOUT, what="the client's NACK of the MAGLEV cluster")
    cds = proxy["types"][CDS]
    rejected_version = cds["last_sent_version"]
    assert cds["nack"]["version"] == rejected_version, cds
    assert NACK_TEXT[client_kind] in cds["nack"]["error"], cds
    assert cds["acked_version"] == good, "the NACK must not move the ACKed version"
    assert sent_metrics(admin)[("holdfast_xds_nacks_total", CDS)] > nacks_before

    # No re-send loop: neither this proxy's per-type counts nor the server's
    # counters move while the rejected version stays current.
    since = client.mark()
    assert_stays(lambda: responses_sent(admin.proxy(client.node_id)),
                 duration=NO_LOOP_WINDOW, what="responses sent to the NACKing proxy")
    assert_stays(lambda: sent_metrics(admin), duration=0.5,
                 what="server-wide responses/NACK counters")

    # The client keeps routing on the last good cluster.
    results = client.wait_lines(10, since=since)
    assert results == ["ok alpha"] * 10, results

    # Fixing the cluster clears the NACK with a later ACK, whether the fix
    # is a new version or a revert to the version the client still holds
    # (which the server must send again: its last send was the rejected one).
    if fix == "new-version":
        world.xds.set_cluster(lb_policy="ROUND_ROBIN", connect_timeout="2s")
    else:
        world.xds.set_cluster()
    proxy = wait_fully_acked(admin, client.node_id)
    cds = proxy["types"][CDS]
    assert cds["nack"] is None, cds
    assert cds["acked_version"] != rejected_version, cds
    assert (cds["acked_version"] == good) == (fix == "revert"), (fix, good, cds)
    since = client.mark()
    assert client.wait_lines(5, since=since) == ["ok alpha"] * 5


def test_update_rejected_by_server_keeps_last_good(world, client_kind):
    """An update holdfast itself rejects (Envoy's validation rules) is
    reported in /debug/status and never reaches the client, which keeps
    the last good listener; the corrected update is delivered."""
    holdfast = world.start_holdfast()
    admin = holdfast.admin
    client = world.client(client_kind)
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    before = wait_fully_acked(admin, client.node_id)["types"][LDS]

    invalid = listener()
    del invalid["api_listener"]["api_listener"]["stat_prefix"]  # min_len 1 in Envoy
    world.xds.write("listeners.json", invalid)

    def rejections():
        return admin.get_json("/debug/status").get("rejected", [])

    found = wait_for(rejections, lambda rs: any(r.get("name") == TARGET_HOST for r in rs),
                     timeout=CONVERGE_TIMEOUT, what="the listener's rejection in /debug/status")
    entry = next(r for r in found if r.get("name") == TARGET_HOST)
    assert "stat_prefix" in entry["error"], entry
    assert entry["type_url"] == LDS, entry
    assert entry["serving_last_good"] is True, entry

    since = client.mark()
    assert_stays(lambda: proxy_type_state(admin, client.node_id, LDS), duration=NO_LOOP_WINDOW,
                 what="the client's listener state while the update is rejected")
    assert proxy_type_state(admin, client.node_id, LDS) == before
    assert client.wait_lines(10, since=since) == ["ok alpha"] * 10

    fixed = listener()
    fixed["api_listener"]["api_listener"]["stat_prefix"] = "echo-fixed"
    world.xds.write("listeners.json", fixed)
    wait_for(rejections, lambda rs: not any(r.get("name") == TARGET_HOST for r in rs),
             timeout=CONVERGE_TIMEOUT, what="the rejection to clear from /debug/status")
    after = wait_fully_acked(admin, client.node_id)["types"][LDS]
    assert after["acked_version"] != before["acked_version"], (before, after)
    since = client.mark()
    assert client.wait_lines(5, since=since) == ["ok alpha"] * 5


@pytest.mark.parametrize("change_during_outage", [False, True],
                         ids=["same-config", "config-changed-during-outage"])
def test_server_restart(world, client_kind, change_during_outage):
    """SIGKILL the server: RPCs keep flowing on cached config; a server
    restarted on the same port re-sends every type, gets ACKs, and delivers
    config changed while it was down."""
    xds_port = free_port()
    holdfast = world.start_holdfast(xds_port)
    client = world.client(client_kind)
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    wait_fully_acked(holdfast.admin, client.node_id)

    holdfast.kill()

    # The client serves from its last good config while the server is gone.
    since = client.mark()
    outage = client.wait_lines(20, since=since)
    assert outage == ["ok alpha"] * 20, outage
    if change_during_outage:
        world.xds.set_endpoint(world.beta.port)

    holdfast.start(xds_port)
    holdfast.wait_ready()

    # The client reconnects with its last ACKed version and an empty nonce;
    # that is no proof it has the new server's config: every type must be
    # sent again and ACKed.
    proxy = wait_fully_acked(holdfast.admin, client.node_id)
    for t in ALL_TYPES:
        assert proxy["types"][t]["responses_sent"] >= 1, (t, proxy)
    assert holdfast.admin.metric("holdfast_connected_proxies") == 1
    since = client.mark()
    client.wait_serving("beta" if change_during_outage else "alpha", since=since)


def test_nacks_are_recorded_per_proxy(world):
    """Three independent clients on one server reject the same Cluster; each
    proxy's record carries its own client's words, and the NACKs do not
    disturb each other's RPCs."""
    holdfast = world.start_holdfast()
    admin = holdfast.admin
    clients = [world.client(kind) for kind in XdsClient.KINDS]
    for client in clients:
        client.wait_serving("alpha", timeout=START_TIMEOUT)
        wait_fully_acked(admin, client.node_id)
    assert admin.metric("holdfast_connected_proxies") == len(clients)

    world.xds.set_cluster(lb_policy="MAGLEV")

    for client in clients:
        cds = wait_for(lambda: proxy_type_state(admin, client.node_id, CDS),
                       lambda s: s is not None and s.get("nack") is not None,
                       timeout=CONVERGE_TIMEOUT, what=f"the NACK of {client.node_id}")
        assert NACK_TEXT[client.kind] in cds["nack"]["error"], (client.kind, cds)
        for other in XdsClient.KINDS:
            if other != client.kind:
                assert NACK_TEXT[other] not in cds["nack"]["error"], (client.kind, cds)
    marks = [client.mark() for client in clients]
    for client, since in zip(clients, marks):
        assert client.wait_lines(5, since=since) == ["ok alpha"] * 5, client.kind
