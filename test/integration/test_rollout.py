"""Staged rollout with real gRPC xDS clients: one canary (gRPC C++ core,
chosen by node metadata) and a client of each kind that is not (C++ core,
grpc-go, grpc-js-xds).

- a change gRPC rejects (loadBalancing: Random) reaches the canary only: it
  NACKs, the rollout is held with the canary's own error in
  /debug/rollout, the metrics, the log and the status of the Upstream whose
  cluster it rejected (and of no other object), and no other client is ever
  sent the change; every client keeps routing on the previous
  configuration;
- a fixed change then bakes on the canary and is promoted: every client
  routes on it, the others at least the bake time after the canary ACKed it;
- the operator aborts and promotes by hand (holdfast rollout);
- a canary that is connected but silent (SIGSTOP) holds the rollout after
  the ACK timeout."""

import json

from hf_gateway import object_status, route, upstream, virtual_service, wait_state, wait_status
from hf_rollout import cds_field, rollout, write_a_change_grpc_rejects
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
BAKE_S = 3


def parse_time(text: str) -> float:
    from datetime import datetime
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def test_a_rejected_change_stays_on_the_canary_and_a_good_one_is_promoted(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    w.holdfast.start(extra_args=["--rollout-canary-metadata", "canary=yes",
                                 "--rollout-bake", f"{BAKE_S}s", "--rollout-ack-timeout", "20s"])
    w.holdfast.wait_ready()
    holdfast = w.holdfast
    canary = w.client("cpp", node_metadata={"canary": "yes"})
    others = [w.client(kind) for kind in ("cpp", "go", "node")]
    for client in [canary, *others]:
        client.wait_serving("alpha", timeout=START_TIMEOUT)
    assert rollout(holdfast)["stage"] == "idle"
    assert holdfast.admin.proxy(canary.node_id)["canary"] is True
    assert not any(holdfast.admin.proxy(c.node_id)["canary"] for c in others)
    before = cds_field(holdfast, [canary, *others], "acked_version")
    # Counted, not only the end state: a change sent, NACKed and reverted
    # would leave last_sent_version and nack as they were.
    sent_before = cds_field(holdfast, others, "responses_sent")

    held = write_a_change_grpc_rejects(w)
    print("held:", held)
    assert canary.node_id in held["reason"] and "LB policy is not supported" in held["reason"], held
    assert "changed Cluster: test/alpha" in held["reason"], held  # what it rejected
    assert held["canaries"] == {"connected": 1, "acked": 0, "nacked": 1,
                                "nacking_node": canary.node_id,
                                "error": held["canaries"]["error"]}, held
    # The canary went back to the stable snapshot, and ACKed it again.
    canary_cds = wait_for(lambda: holdfast.admin.proxy(canary.node_id)["types"][CDS],
                          lambda t: t["acked_version"] == before[canary.node_id],
                          timeout=CONVERGE_TIMEOUT, what="the canary back on the stable snapshot")
    assert canary_cds["nacks"] == 1, canary_cds
    assert holdfast.admin.metric("holdfast_rollout_held") == 1
    assert holdfast.admin.metric("holdfast_rollout_holds_total") == 1
    assert "rollout: held" in holdfast.proc.log_tail()
    # The hold is reported on the object behind the rejected cluster.
    assert held["held_objects"] == ["Upstream test/alpha"], held
    alpha = wait_status(holdfast.admin, "Upstream", "alpha", lambda s: s["status"] == "Rejected",
                        what="Rejected by the hold", timeout=CONVERGE_TIMEOUT)
    message = " ".join(r["message"] for r in alpha["reasons"])
    assert "held by the staged rollout" in message and "1 of 1 canaries rejected" in message \
        and canary.node_id in message and "LB policy is not supported" in message, alpha
    assert alpha["serving_last_good"] is True, alpha
    assert object_status(holdfast.admin, "VirtualService", "echo")["status"] == "Accepted"
    for client in others:
        cds = holdfast.admin.proxy(client.node_id)["types"][CDS]
        assert cds["last_sent_version"] == before[client.node_id] and cds["nack"] is None, \
            f"{client.node_id} was sent the held change: {cds}"
        assert cds["responses_sent"] == sent_before[client.node_id] and cds["nacks"] == 0, \
            f"{client.node_id} was sent a CDS response during the hold: {cds}"
    for client in [canary, *others]:
        client.wait_serving("alpha", since=client.mark(), timeout=CONVERGE_TIMEOUT)

    # The fix: valid for everyone, and visible (traffic moves to beta).
    w.config.write("upstreams.yaml", upstream("alpha", w.beta.port))
    promoted = wait_for(lambda: rollout(holdfast),
                        lambda r: r["stage"] == "idle" and r["candidate"] == "" and
                        r["stable"] != held["stable"],
                        timeout=CONVERGE_TIMEOUT, what="the fixed change promoted")
    print("promoted:", promoted)
    assert holdfast.admin.metric("holdfast_rollout_promotions_total") >= 1
    assert promoted["held_objects"] == [], promoted
    wait_state(holdfast.admin, "Upstream", "alpha", "Accepted", timeout=CONVERGE_TIMEOUT)
    for client in [canary, *others]:
        client.wait_serving("beta", timeout=CONVERGE_TIMEOUT)
    canary_eds = holdfast.admin.proxy(canary.node_id)["types"][EDS]
    for client in others:
        eds = holdfast.admin.proxy(client.node_id)["types"][EDS]
        waited = parse_time(eds["acked_at"]) - parse_time(canary_eds["acked_at"])
        assert waited >= BAKE_S - 0.5, \
            f"{client.node_id} got the change {waited:.2f}s after the canary ACKed it"


def holdfast_cli(*args):
    import subprocess
    from hf_world import Binaries
    return subprocess.run([Binaries.from_env().holdfast, *args], capture_output=True, text=True,
                          timeout=60)


def test_the_operator_aborts_and_promotes_by_hand(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    w.holdfast.start(extra_args=["--rollout-canary-metadata", "canary=yes",
                                 "--rollout-bake", "1h", "--rollout-ack-timeout", "1h"])
    w.holdfast.wait_ready()
    admin = f"127.0.0.1:{w.holdfast.admin.port}"
    canary = w.client("cpp", node_metadata={"canary": "yes"})
    other = w.client("cpp")
    for client in (canary, other):
        client.wait_serving("alpha", timeout=START_TIMEOUT)

    w.config.write("upstreams.yaml", upstream("alpha", w.beta.port))
    canary.wait_serving("beta", timeout=CONVERGE_TIMEOUT)
    status = holdfast_cli("rollout", "status", "--admin", admin)
    assert status.returncode == 0 and "stage      baking" in status.stdout, status.stdout
    # One replica with a directory of config: no store to share decisions.
    assert "shared     through memory (this replica only)" in status.stdout, status.stdout
    other.wait_serving("alpha", since=other.mark(), timeout=CONVERGE_TIMEOUT)

    aborted = holdfast_cli("rollout", "abort", "--admin", admin)
    assert aborted.returncode == 0 and "aborted by the operator" in aborted.stdout, \
        (aborted.stdout, aborted.stderr)
    canary.wait_serving("alpha", since=canary.mark(), timeout=CONVERGE_TIMEOUT)
    held = holdfast_cli("rollout", "status", "--admin", admin)
    assert held.returncode == 1, "held: exit 1"
    # An abort holds the whole candidate: every object it changed.
    assert "held on    Upstream test/alpha" in held.stdout, held.stdout

    promoted = holdfast_cli("rollout", "promote", "--admin", admin, "-o", "json")
    assert promoted.returncode == 0, (promoted.stdout, promoted.stderr)
    assert json.loads(promoted.stdout)["rollout"]["reason"] == "promoted by the operator"
    for client in (canary, other):
        client.wait_serving("beta", since=client.mark(), timeout=CONVERGE_TIMEOUT)
    again = holdfast_cli("rollout", "promote", "--admin", admin)
    assert again.returncode == 1, "nothing left to promote"


def test_a_canary_that_does_not_ack_holds_the_rollout_after_the_timeout(gateway_world):
    import signal
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    w.holdfast.start(extra_args=["--rollout-canary-metadata", "canary=yes",
                                 "--rollout-bake", "1s", "--rollout-ack-timeout", "3s"])
    w.holdfast.wait_ready()
    canary = w.client("go", node_metadata={"canary": "yes"})
    other = w.client("cpp")
    for client in (canary, other):
        client.wait_serving("alpha", timeout=START_TIMEOUT)
    canary.proc.proc.send_signal(signal.SIGSTOP)  # alive, connected, silent
    try:
        w.config.write("upstreams.yaml", upstream("alpha", w.beta.port))
        held = wait_for(lambda: rollout(w.holdfast), lambda r: r["stage"] == "held",
                        timeout=CONVERGE_TIMEOUT, what="the rollout held by the silent canary")
        assert "1 of 1 canaries did not ACK" in held["reason"] and "within 3s" in held["reason"], \
            held
        other.wait_serving("alpha", since=other.mark(), timeout=CONVERGE_TIMEOUT)
    finally:
        canary.proc.proc.send_signal(signal.SIGCONT)


def test_a_node_group_with_a_rollout_of_its_own_rolls_out_and_holds_alone(gateway_world):
    """--node-group metadata:tier with --rollout-group edge:...: the edge
    group's canary gets a change first and the rest of edge after the bake
    (or the operator's promote --group edge); the other groups, whose
    rollout has no canaries, get each change at once; a change edge's canary
    rejects holds edge alone, and the Upstream's status names the group."""
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    w.holdfast.start(extra_args=["--node-group", "metadata:tier", "--rollout-group",
                                 "edge:canary-metadata=canary=yes,bake=1h,ack-timeout=1h"])
    w.holdfast.wait_ready()
    holdfast = w.holdfast
    admin = f"127.0.0.1:{holdfast.admin.port}"
    edge_canary = w.client("cpp", node_metadata={"tier": "edge", "canary": "yes"})
    edge_other = w.client("go", node_metadata={"tier": "edge"})
    core = w.client("node" if w.binaries.node else "cpp", node_metadata={"tier": "core"})
    for client in (edge_canary, edge_other, core):
        client.wait_serving("alpha", timeout=START_TIMEOUT)
    page = rollout(holdfast)
    assert page["policy"]["canary_metadata"] == "", page  # no canaries outside edge
    assert page["groups"]["edge"]["policy"]["canary_metadata"] == "canary=yes", page
    assert holdfast.admin.proxy(edge_canary.node_id)["canary"] is True
    assert holdfast.admin.proxy(core.node_id)["canary"] is False

    # A good change: core at once; edge's canary first, the rest of edge
    # only once the operator promotes edge's rollout (the bake is an hour).
    w.config.write("upstreams.yaml", upstream("alpha", w.beta.port))
    core.wait_serving("beta", timeout=CONVERGE_TIMEOUT)
    edge_canary.wait_serving("beta", timeout=CONVERGE_TIMEOUT)
    wait_for(lambda: rollout(holdfast)["groups"]["edge"], lambda r: r["stage"] == "baking",
             timeout=CONVERGE_TIMEOUT, what="edge's rollout baking")
    edge_other.wait_serving("alpha", since=edge_other.mark(), timeout=CONVERGE_TIMEOUT)
    promoted = holdfast_cli("rollout", "promote", "--group", "edge", "--admin", admin)
    assert promoted.returncode == 0, (promoted.stdout, promoted.stderr)
    edge_other.wait_serving("beta", since=edge_other.mark(), timeout=CONVERGE_TIMEOUT)

    # A change edge's canary rejects holds edge alone.
    before = holdfast.admin.proxy(edge_other.node_id)["types"][CDS]["acked_version"]
    sent_before = holdfast.admin.proxy(edge_other.node_id)["types"][CDS]["responses_sent"]
    bad = upstream("alpha", w.beta.port)
    bad["spec"]["loadBalancing"] = "Random"  # valid for Envoy, NACKed by proxyless gRPC
    w.config.write("upstreams.yaml", bad)
    held = wait_for(lambda: rollout(holdfast)["groups"]["edge"], lambda r: r["stage"] == "held",
                    timeout=CONVERGE_TIMEOUT, what="edge's rollout held by its canary's NACK")
    assert edge_canary.node_id in held["reason"], held
    assert held["held_objects"] == ["Upstream test/alpha"], held
    assert rollout(holdfast)["stage"] == "idle", "the other groups' rollout is not held"
    alpha = wait_status(holdfast.admin, "Upstream", "alpha", lambda s: s["status"] == "Rejected",
                        what="Rejected by edge's hold", timeout=CONVERGE_TIMEOUT)
    message = " ".join(r["message"] for r in alpha["reasons"])
    assert "node group edge: 1 of 1 canaries rejected" in message, alpha
    cds = holdfast.admin.proxy(edge_other.node_id)["types"][CDS]
    assert cds["last_sent_version"] == before and cds["nack"] is None, cds
    assert cds["responses_sent"] == sent_before and cds["nacks"] == 0, cds
    status = holdfast_cli("rollout", "status", "--admin", admin)
    assert status.returncode == 1, "held: exit 1"
    assert "node group edge:" in status.stdout and "stage      held" in status.stdout, status.stdout
    only_edge = holdfast_cli("rollout", "status", "--group", "edge", "--admin", admin)
    assert only_edge.returncode == 1 and "node groups without" not in only_edge.stdout, \
        only_edge.stdout
    nowhere = holdfast_cli("rollout", "status", "--group", "nowhere", "--admin", admin)
    assert nowhere.returncode == 2 and \
        "node group nowhere has no rollout of its own" in nowhere.stderr, nowhere
