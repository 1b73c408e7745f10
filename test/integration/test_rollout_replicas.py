"""Staged rollout across replicas that share etcd: a hold seen by any
replica holds the rollout on every replica, through the decision it records
in the store (PREFIX/rollout/decisions).

Replica a serves the only canary (gRPC C++ core, chosen by node metadata);
replica b serves no canary, so on its own it would promote any change once
the bake time passed. Its clients are grpc-go and grpc-js-xds."""

import json

from hf_gateway import upstream
from hf_replica import CONVERGE_TIMEOUT, echo_to, serving
from hf_wait import assert_stays, wait_for
from hf_world import START_TIMEOUT, XdsClient

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
BAKE_S = 5
ROLLOUT_FLAGS = ["--rollout-canary-metadata", "canary=yes", "--rollout-bake", f"{BAKE_S}s",
                 "--rollout-ack-timeout", "20s"]


def rollout(replica) -> dict:
    status, body = replica.admin.get("/debug/rollout")
    assert status == 200, (status, body)
    return json.loads(body)


def decisions(store) -> list:
    kv = store.etcd.get(f"{store.prefix}/rollout/decisions")
    return json.loads(kv.value)["decisions"] if kv else []


def test_a_hold_seen_by_one_replica_holds_every_replica(store, backends, procs, binaries,
                                                       tmp_path, go_client_binary):
    s = store
    alpha, beta = backends
    s.apply("upstreams.yaml", upstream("alpha", alpha.port), upstream("beta", beta.port))
    s.apply("echo.yaml", echo_to("alpha"))
    a = s.replica("a", extra=ROLLOUT_FLAGS)
    b = s.replica("b", extra=ROLLOUT_FLAGS)
    a.wait_ready()
    b.wait_ready()
    canary = XdsClient(procs, binaries, "cpp", a.xds_port, tmp_path,
                       node_metadata={"canary": "yes"})
    on_b = [XdsClient(procs, binaries, "go", b.xds_port, tmp_path, go_client=go_client_binary)]
    if binaries.node:
        on_b.append(XdsClient(procs, binaries, "node", b.xds_port, tmp_path))
    serving(a, canary, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    for c in on_b:
        serving(b, c, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    for r in (a, b):
        assert rollout(r)["stage"] == "idle", rollout(r)
        assert rollout(r)["decisions"]["shared_through"] == \
            f"etcd key {s.prefix}/rollout/decisions", rollout(r)
    before = {c.node_id: b.admin.proxy(c.node_id)["types"][CDS]["acked_version"] for c in on_b}
    # Counted, not only the end state: a change sent, NACKed and reverted
    # would leave last_sent_version and nack as they were.
    sent_before = {c.node_id: b.admin.proxy(c.node_id)["types"][CDS]["responses_sent"]
                   for c in on_b}
    first = rollout(a)["stable"]

    bad = upstream("alpha", alpha.port)
    bad["spec"]["loadBalancing"] = "Random"  # valid for Envoy, NACKed by proxyless gRPC
    s.apply("upstreams.yaml", bad, upstream("beta", beta.port))
    held_a = wait_for(lambda: rollout(a), lambda r: r["stage"] == "held",
                      timeout=CONVERGE_TIMEOUT, what="replica a held by its canary's NACK")
    assert canary.node_id in held_a["reason"], held_a
    # The reason names what the canary rejected: the changed cluster.
    assert "changed Cluster: test/alpha" in held_a["reason"], held_a
    held_b = wait_for(lambda: rollout(b), lambda r: r["stage"] == "held",
                      timeout=CONVERGE_TIMEOUT, what="replica b held by a's decision")
    print("held on b:", held_b)
    assert "(decided by replica a)" in held_b["reason"], held_b
    assert canary.node_id in held_b["reason"], held_b
    assert held_b["candidate"] == held_a["candidate"], (held_a, held_b)
    recorded = decisions(s)
    assert [(d["candidate"], d["action"], d["replica"]) for d in recorded] == \
        [(held_a["candidate"], "hold", "a")], recorded
    assert b.metric("holdfast_rollout_held") == 1
    assert "rollout: held" in b.proc.log_tail()
    # Both replicas report the hold on the Upstream, and the leader writes
    # that status to the store.
    for r in (a, b):
        assert rollout(r)["held_objects"] == ["Upstream test/alpha"], rollout(r)
    stored = wait_for(lambda: s.statuses().get(("Upstream", "test", "alpha")),
                      lambda st: st is not None and st.get("state") == "Rejected",
                      timeout=CONVERGE_TIMEOUT, what="the hold in the stored status")
    assert "held by the staged rollout" in json.dumps(stored), stored

    # b has no canary: alone it would have promoted after the bake. Well past
    # it, b's clients were never sent the change and keep routing.
    def b_clients_untouched():
        for c in on_b:
            cds = b.admin.proxy(c.node_id)["types"][CDS]
            assert cds["last_sent_version"] == before[c.node_id] and cds["nack"] is None, \
                f"{c.node_id} was sent the held change: {cds}"
            assert cds["responses_sent"] == sent_before[c.node_id] and cds["nacks"] == 0, \
                f"{c.node_id} was sent a CDS response during the hold: {cds}"
        assert rollout(b)["stage"] == "held"
    assert_stays(b_clients_untouched, duration=2 * BAKE_S, what="b holding the change")
    for c in on_b:
        serving(b, c, "alpha", since=c.mark())

    # The fix rolls out on both: the canary ACKs it on a, b promotes after
    # the bake (no canary of its own), and every client follows.
    s.apply("upstreams.yaml", upstream("alpha", alpha.port), upstream("beta", beta.port))
    s.apply("echo.yaml", echo_to("beta"))
    def promoted(views):
        return all(v["stage"] == "idle" and v["stable"] not in (first, held_a["candidate"])
                   for v in views) and views[0]["stable"] == views[1]["stable"]
    wait_for(lambda: [rollout(a), rollout(b)], promoted, timeout=CONVERGE_TIMEOUT,
             what="the fix promoted on both replicas")
    serving(a, canary, "beta", since=canary.mark())
    for c in on_b:
        serving(b, c, "beta", since=c.mark())
    wait_for(lambda: s.statuses().get(("Upstream", "test", "alpha")),
             lambda st: st is not None and st.get("state") == "Accepted",
             timeout=CONVERGE_TIMEOUT, what="the stored status back to Accepted")
