"""Staged rollout set in the configuration (a RolloutPolicy object), with
real gRPC xDS clients: one would-be canary (gRPC C++ core with node metadata
canary=yes) and a client of each kind that is not (C++ core, grpc-go,
grpc-js-xds). holdfast starts without any --rollout-* flag.

- without a policy every change reaches everyone at once, as ever;
- a RolloutPolicy added while the clients are connected makes the
  connected canary a canary (its stream moves; no reconnect) and rolls the
  next changes out in stages: a change gRPC rejects reaches the canary
  only and holds the rollout, every other client is never sent it;
- an invalid edit of the policy is Rejected with its field path and the
  policy in effect stays the last accepted one;
- the fix is promoted after the bake; removing the policy ends the
  rollout, and the change after it reaches everyone at once."""

from hf_gateway import (object_status, rollout_policy, route, upstream, virtual_service,
                        wait_state, wait_status)
from hf_resources import CDS
from hf_rollout import cds_field, rollout, write_a_change_grpc_rejects
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT

BAKE_S = 2


def canary_policy(percent=None):
    canaries = {"nodeMetadata": {"key": "canary", "value": "yes"}}
    if percent is not None:
        canaries["percent"] = percent
    return rollout_policy("canaries", canaries=canaries, bake=f"{BAKE_S}s", ack_timeout="20s")


def test_a_policy_in_the_configuration_stages_changes_until_it_is_removed(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    w.holdfast.start()
    w.holdfast.wait_ready()
    holdfast = w.holdfast
    canary = w.client("cpp", node_metadata={"canary": "yes"})
    others = [w.client(kind) for kind in ("cpp", "go", "node")]
    clients = [canary, *others]
    for client in clients:
        client.wait_serving("alpha", timeout=START_TIMEOUT)
    assert rollout(holdfast)["enabled"] is False
    assert not holdfast.admin.proxy(canary.node_id)["canary"]

    # The policy arrives while everyone is connected: the canary's stream
    # moves to the canaries' view, and the snapshot that brought the policy
    # is itself rolled out (same resources, so it bakes and is promoted).
    w.config.write("rollout.yaml", canary_policy())
    wait_state(holdfast.admin, "RolloutPolicy", "canaries", "Accepted", timeout=CONVERGE_TIMEOUT)
    wait_for(lambda: holdfast.admin.proxy(canary.node_id), lambda p: p["canary"] is True,
             timeout=CONVERGE_TIMEOUT, what="the connected canary marked a canary")
    assert not any(holdfast.admin.proxy(c.node_id)["canary"] for c in others)
    idle = wait_for(lambda: rollout(holdfast),
                    lambda r: r.get("enabled") and r["stage"] == "idle" and
                    r["canaries"]["connected"] == 1,
                    timeout=CONVERGE_TIMEOUT, what="the policy's rollout idle with one canary")
    assert idle["policy"]["origin"] == "RolloutPolicy test/canaries", idle
    assert idle["policy"]["bake"] == f"{BAKE_S}s", idle
    before = cds_field(holdfast, clients, "acked_version")
    sent_before = cds_field(holdfast, others, "responses_sent")

    held = write_a_change_grpc_rejects(w)  # Upstream alpha's load balancing: Random
    assert canary.node_id in held["reason"] and "changed Cluster: test/alpha" in held["reason"], held
    assert held["held_objects"] == ["Upstream test/alpha"], held
    wait_status(holdfast.admin, "Upstream", "alpha", lambda s: s["status"] == "Rejected",
                what="Rejected by the hold", timeout=CONVERGE_TIMEOUT)
    wait_for(lambda: holdfast.admin.proxy(canary.node_id)["types"][CDS],
             lambda t: t["acked_version"] == before[canary.node_id] and t["nacks"] == 1,
             timeout=CONVERGE_TIMEOUT, what="the canary back on the stable snapshot")
    for client in others:
        cds = holdfast.admin.proxy(client.node_id)["types"][CDS]
        assert cds["responses_sent"] == sent_before[client.node_id] and cds["nacks"] == 0, \
            f"{client.node_id} was sent a CDS response during the hold: {cds}"

    # An invalid edit of the policy: Rejected where it is wrong; the policy
    # in effect stays the accepted one.
    w.config.write("rollout.yaml", canary_policy(percent=150))
    rejected = wait_state(holdfast.admin, "RolloutPolicy", "canaries", "Rejected",
                          timeout=CONVERGE_TIMEOUT)
    assert any(r["field"] == "spec.canaries.percent" for r in rejected["reasons"]), rejected
    assert rejected["serving_last_good"] is True, rejected
    assert rollout(holdfast)["policy"]["canary_percent"] == 0
    w.config.write("rollout.yaml", canary_policy())

    # The fix bakes on the canary and is promoted to everyone.
    w.config.write("upstreams.yaml", upstream("alpha", w.beta.port))
    wait_for(lambda: rollout(holdfast),
             lambda r: r["stage"] == "idle" and r["stable"] != held["stable"],
             timeout=CONVERGE_TIMEOUT, what="the fixed change promoted")
    wait_state(holdfast.admin, "Upstream", "alpha", "Accepted", timeout=CONVERGE_TIMEOUT)
    for client in clients:
        client.wait_serving("beta", timeout=CONVERGE_TIMEOUT)

    # Removing the policy ends the rollout: the canary is one no more, and
    # the next change reaches everyone at once.
    (w.config.path / "rollout.yaml").unlink()
    wait_for(lambda: rollout(holdfast), lambda r: r["enabled"] is False,
             timeout=CONVERGE_TIMEOUT, what="no rollout once the policy is gone")
    wait_for(lambda: holdfast.admin.proxy(canary.node_id), lambda p: p["canary"] is False,
             timeout=CONVERGE_TIMEOUT, what="the canary a canary no more")
    assert object_status(holdfast.admin, "RolloutPolicy", "canaries") is None
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    for client in clients:
        client.wait_serving("alpha", timeout=CONVERGE_TIMEOUT)
