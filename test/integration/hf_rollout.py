"""Shared steps of the staged-rollout tests (test_rollout*.py)."""

from hf_gateway import upstream
from hf_resources import CDS
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT


def rollout(holdfast) -> dict:
    return holdfast.admin.get_json("/debug/rollout")


def cds_field(holdfast, clients, field: str) -> dict:
    """node id -> one field of the CDS progress holdfast records for it."""
    return {c.node_id: holdfast.admin.proxy(c.node_id)["types"][CDS][field] for c in clients}


def write_a_change_grpc_rejects(world) -> dict:
    """Makes Upstream alpha's load balancing Random (valid for Envoy, NACKed by
    proxyless gRPC) and returns /debug/rollout once the rollout is held."""
    bad = upstream("alpha", world.alpha.port)
    bad["spec"]["loadBalancing"] = "Random"
    world.config.write("upstreams.yaml", bad)
    return wait_for(lambda: rollout(world.holdfast), lambda r: r["stage"] == "held",
                    timeout=CONVERGE_TIMEOUT, what="the rollout held by the canary's NACK")
