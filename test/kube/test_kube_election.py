"""Leader election on a Kubernetes Lease, end to end: replicas of `holdfast
serve --kubeconfig` (the least-privileged holdfast user of deploy/rbac.yaml)
against a real API server, with short timings (lease 4 s, renew deadline 3 s,
retry period 1 s).

- exactly one leader, and the Lease (read as admin) names it with
  client-go's fields;
- the leader SIGKILLed: exactly one new leader within lease duration + retry
  period (jittered) + slack, leaseTransitions one more;
- the leader stopped gracefully (SIGTERM): it releases the Lease (empty
  holder, leaseDurationSeconds 1) and another takes it within a retry period;
- the leader SIGSTOPped past its lease: another takes over; after SIGCONT the
  old one follows and keeps serving;
- the API server killed: the leader steps down after its renew deadline and
  keeps serving xDS; leadership returns once the API server is back;
- spec.preferredHolder set by the admin moves leadership;
- a staged rollout's decisions are shared through the ConfigMap
  holdfast-rollout: an abort on one replica holds the candidate on the
  other, a promote there reaches the first.
"""

import json
import signal
import subprocess
import threading
import time

from hf_admin import Admin
from hf_gateway import route, upstream, virtual_service
from hf_kube import REPO, KubeCluster
from hf_process import environ_without_grpc, wait_for_file
from hf_replica import agreed_leader, leader_views, the_leader
from hf_wait import wait_for
from hf_world import START_TIMEOUT, Backend, Binaries, XdsClient, assert_no_nack

CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev"]
LEASE_DURATION = 4.0
RENEW_DEADLINE = 3.0
RETRY_PERIOD = 1.0
RETRY_JITTER = 0.2  # LeaseElector waits 0.8-1.2 x the retry period
# One poll of /debug/leader, a round trip and a scheduling hiccup on two
# loaded cores: what a takeover may take beyond the protocol's own bound.
SLACK = 1.5
# A takeover after the holder vanished without a word: the followers judge
# the Lease expired LEASE_DURATION after they last saw it change (at or
# before the kill), then act on their next step.
TAKEOVER_BOUND = LEASE_DURATION + RETRY_PERIOD * (1 + RETRY_JITTER) + SLACK
TIMEOUT = 30.0
LEASE_NS = "holdfast-system"
LEASE_NAME = "holdfast-leader"


class KubeReplica:
    """One `holdfast serve --kubeconfig` process, with the interface
    hf_replica's leader helpers use (name, leader())."""

    def __init__(self, procs, binary, kubeconfig, name, work, extra=()):
        self.name = name
        self._ports_file = work / f"{name}-ports.json"
        self.proc = procs.start(f"holdfast-{name}", [
            binary, "serve", "--kubeconfig", kubeconfig, "--replica-id", name,
            "--lease-duration", f"{LEASE_DURATION:g}s",
            "--renew-deadline", f"{RENEW_DEADLINE:g}s",
            "--retry-period", f"{RETRY_PERIOD:g}s",
            "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
            "--ports-file", self._ports_file, "--state-dir", work / f"{name}-state", *extra],
            env=environ_without_grpc(), check_exit=True)
        ports = json.loads(wait_for_file(self._ports_file, self.proc, START_TIMEOUT))
        self.xds_port = int(ports["xds"])
        self.admin = Admin(int(ports["admin"]))

    def assert_running(self):
        assert self.proc.running(), f"{self.name} exited:\n{self.proc.log_tail()}"

    def leader(self) -> dict:
        self.assert_running()
        doc = self.admin.get_json("/debug/leader")
        for field in ("replica", "is_leader", "term", "leader", "transitions", "lease"):
            assert field in doc, f"{self.name} /debug/leader lacks {field!r}: {doc!r}"
        assert doc["lease"] == f"{LEASE_NS}/{LEASE_NAME}", doc
        return doc

    def metric(self, name: str) -> float:
        return self.admin.metric(name)

    def ready(self) -> bool:
        self.assert_running()
        return self.admin.get("/readyz")[0] == 200

    def __repr__(self):
        return f"KubeReplica({self.name})"


def install(kube):
    kube.admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    kube.admin.wait_crds_established(CRDS)
    kube.admin.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml"])
    kube.ensure_namespace("test")


def start_replicas(kube, procs, tmp_path, names=("a", "b", "c"), extra=()) -> list:
    binary = Binaries.from_env().holdfast
    kubeconfig = kube.kubeconfig("holdfast")
    return [KubeReplica(procs, binary, kubeconfig, n, tmp_path, extra) for n in names]


def stop_all(replicas):
    """SIGTERM to every replica still running, before the API server stops
    (its graceful shutdown waits on their watches): each exits 0."""
    for r in replicas:
        if r.proc.running():
            assert r.proc.stop() == 0, r


def lease(kube) -> dict:
    obj = kube.admin.get("coordination.k8s.io/v1", "Lease", LEASE_NAME, LEASE_NS)
    assert obj is not None, "no Lease"
    return obj


def at_most_one_leader(replicas):
    views = leader_views([r for r in replicas if r.proc.running()])
    leaders = sorted(n for n, v in views.items() if v["is_leader"])
    assert len(leaders) <= 1, f"two leaders at once: {views}"
    return views


def new_leader_within(replicas, started: float, bound: float, what: str):
    """Waits for one leader agreed on by `replicas`, checking at every poll
    that no two lead; fails if it came later than `bound` after `started`."""
    views = wait_for(lambda: at_most_one_leader(replicas),
                     lambda v: agreed_leader(v) is not None, timeout=TIMEOUT,
                     what=f"one leader among {replicas}", interval=0.1)
    took = time.monotonic() - started
    name, term = agreed_leader(views)
    print(f"{what}: {name} leads (term {term}) {took:.2f}s after the event "
          f"(bound {bound:.2f}s)")
    assert took <= bound, f"{what}: took {took:.2f}s, more than {bound:.2f}s"
    return next(r for r in replicas if r.name == name), term


def assert_client_go_lease(spec: dict, holder: str):
    assert spec["holderIdentity"] == holder, spec
    assert spec["leaseDurationSeconds"] == int(LEASE_DURATION), spec
    for field in ("acquireTime", "renewTime"):
        # MicroTime, as client-go writes it: microseconds, UTC.
        value = spec[field]
        assert len(value) == len("2026-01-01T00:00:00.000000Z") and value.endswith("Z") \
            and value[19] == ".", (field, value)


def test_one_leader_named_by_the_lease_and_a_killed_leader_is_replaced(kube, procs, tmp_path):
    install(kube)
    replicas = start_replicas(kube, procs, tmp_path)
    leader, term = the_leader(replicas, timeout=TIMEOUT)
    for _ in range(10):  # it stays one leader while nothing happens
        at_most_one_leader(replicas)
        time.sleep(0.2)
    assert the_leader(replicas, timeout=TIMEOUT) == (leader, term)
    spec = lease(kube)["spec"]
    print("Lease:", spec)
    assert_client_go_lease(spec, leader.name)
    assert term == spec["leaseTransitions"] + 1, (term, spec)
    assert leader.metric("holdfast_is_leader") == 1
    assert leader.metric("holdfast_leader_term") == term
    for r in replicas:
        assert r.ready(), r
        if r is not leader:
            assert r.metric("holdfast_is_leader") == 0, r

    # Killed without a word: the Lease must run out first.
    killed_at = time.monotonic()
    leader.proc.kill()
    survivors = [r for r in replicas if r is not leader]
    new, new_term = new_leader_within(survivors, killed_at, TAKEOVER_BOUND, "after SIGKILL")
    spec = lease(kube)["spec"]
    assert_client_go_lease(spec, new.name)
    assert spec["leaseTransitions"] == term, ("one more transition", spec)
    assert new_term == term + 1
    assert new.metric("holdfast_leader_transitions_total") >= 1
    for r in survivors:
        assert r.ready(), r
    stop_all(replicas)


def test_graceful_stop_releases_the_lease_and_hands_over_quickly(kube, procs, tmp_path):
    install(kube)
    replicas = start_replicas(kube, procs, tmp_path)
    leader, term = the_leader(replicas, timeout=TIMEOUT)
    start_rv = lease(kube)["metadata"]["resourceVersion"]
    seen = []

    def watch():
        for event in kube.admin.watch("coordination.k8s.io/v1", "Lease", LEASE_NS,
                                      resource_version=start_rv, bookmarks=False,
                                      fieldSelector=f"metadata.name={LEASE_NAME}",
                                      timeout_seconds=30):
            seen.append(event)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stopped_at = time.monotonic()
    assert leader.proc.stop() == 0
    survivors = [r for r in replicas if r is not leader]
    # Free at once: a follower takes it on its next step, well before the
    # lease duration would have run out.
    new, new_term = new_leader_within(survivors, stopped_at,
                                      RETRY_PERIOD * (1 + RETRY_JITTER) + SLACK,
                                      "after SIGTERM")
    specs = [e["object"]["spec"] for e in
             wait_for(lambda: list(seen),
                      lambda s: any(e["object"]["spec"].get("holderIdentity") == new.name
                                    for e in s),
                      timeout=TIMEOUT, what="the watch to see the new holder")]
    print("Lease versions after the stop:", specs)
    released = [s for s in specs if s.get("holderIdentity") == ""]
    assert released, f"{leader.name} did not release the Lease: {specs}"
    assert released[0]["leaseDurationSeconds"] == 1, released[0]
    assert released[0]["leaseTransitions"] == term - 1, released[0]
    assert specs.index(released[0]) < next(
        i for i, s in enumerate(specs) if s["holderIdentity"] == new.name)
    assert lease(kube)["spec"]["leaseTransitions"] == term
    assert new_term == term + 1
    stop_all(replicas)


def test_paused_leader_is_replaced_then_follows_and_keeps_serving(kube, procs, tmp_path):
    install(kube)
    replicas = start_replicas(kube, procs, tmp_path)
    old, term = the_leader(replicas, timeout=TIMEOUT)
    others = [r for r in replicas if r is not old]
    paused_at = time.monotonic()
    old.proc.proc.send_signal(signal.SIGSTOP)
    try:
        new, new_term = new_leader_within(others, paused_at, TAKEOVER_BOUND, "after SIGSTOP")
        assert new_term == term + 1
        assert lease(kube)["spec"]["holderIdentity"] == new.name
    finally:
        old.proc.proc.send_signal(signal.SIGCONT)
    # Awake: it knows at once it is past its renew deadline, then reads who
    # leads; it never exits and stays ready.
    view = wait_for(old.leader, lambda v: v["is_leader"] is False and v["leader"] == new.name,
                    timeout=TIMEOUT, what=f"{old.name} to follow {new.name}")
    print("the woken leader:", view)
    for _ in range(int(2 * LEASE_DURATION / 0.2)):  # and it does not take it back
        views = at_most_one_leader(replicas)
        assert views[new.name]["is_leader"], views
        time.sleep(0.2)
    assert old.metric("holdfast_is_leader") == 0
    assert old.ready()
    assert lease(kube)["spec"]["leaseTransitions"] == term
    stop_all(replicas)


def test_api_server_outage_steps_the_leader_down_but_not_out(kube, procs, tmp_path):
    install(kube)
    binaries = Binaries.from_env()
    backend = Backend(procs, binaries.echo_backend, "a", tmp_path)
    kube.admin.apply([upstream("up-a", backend.port),
                      virtual_service("vs", [route(upstream="up-a")])])
    replicas = start_replicas(kube, procs, tmp_path, names=("a", "b"))
    leader, term = the_leader(replicas, timeout=TIMEOUT)
    client = XdsClient(procs, binaries, "cpp", leader.xds_port, tmp_path)
    client.wait_serving("a", timeout=TIMEOUT)
    log_mark = leader.proc.log_size()

    # Killed, so the outage begins at a known instant (a graceful stop keeps
    # answering for a while, then drains for up to 30 s).
    stopped_at = time.monotonic()
    kube.kill_apiserver()
    view = wait_for(leader.leader, lambda v: v["is_leader"] is False, timeout=TIMEOUT,
                    what=f"{leader.name} to step down", interval=0.1)
    took = time.monotonic() - stopped_at
    print(f"stepped down {took:.2f}s after the API server stopped:", view)
    # Its renew deadline runs from its last renewal, at most a retry period
    # before the stop.
    assert took <= RENEW_DEADLINE + SLACK, took
    # /debug/leader checks the deadline when read; the log line comes with
    # the elector's next step.
    wait_for(lambda: "\n".join(leader.proc.log_lines_since(log_mark)),
             lambda log: "stepped down" in log and "could not renew" in log,
             timeout=TIMEOUT, what="the log to say why it stepped down")
    assert leader.metric("holdfast_is_leader") == 0
    for r in replicas:  # nobody leads without the API server, everyone serves
        assert r.leader()["is_leader"] is False, r
        assert r.ready(), r
    mark = client.mark()
    client.wait_serving("a", since=mark, timeout=TIMEOUT)
    assert_no_nack(leader.admin, client.node_id)

    kube.start_apiserver()
    back, back_term = the_leader(replicas, timeout=TIMEOUT)
    print(f"{back.name} leads again, term {back_term}")
    assert back_term >= term
    for r in replicas:
        assert r.ready(), r
    stop_all(replicas)


def test_preferred_holder_moves_leadership(procs, kube_binaries, tmp_path):
    # The API server keeps spec.preferredHolder only under the
    # CoordinatedLeaderElection feature gate (its LeaseCandidate API on), and
    # only with a spec.strategy; without the gate the field is dropped on
    # write (checked below, so a silent drop cannot pass).
    kube = KubeCluster(procs, tmp_path / "kube", kube_binaries,
                       extra_args=["--feature-gates=CoordinatedLeaderElection=true",
                                   "--runtime-config=coordination.k8s.io/v1beta1=true"])
    kube.start()
    try:
        _preferred_holder_moves_leadership(kube, procs, tmp_path)
    finally:
        kube.close()


def _preferred_holder_moves_leadership(kube, procs, tmp_path):
    install(kube)
    replicas = start_replicas(kube, procs, tmp_path)
    leader, term = the_leader(replicas, timeout=TIMEOUT)
    wanted = next(r for r in replicas if r is not leader)

    def prefer():
        obj = lease(kube)
        obj["spec"]["preferredHolder"] = wanted.name
        obj["spec"]["strategy"] = "OldestEmulationVersion"
        r = kube.admin.request("PUT", kube.admin.object_path(obj), obj)
        assert r.status in (200, 409), r.text()
        if r.status == 200:
            assert r.json()["spec"].get("preferredHolder") == wanted.name, (
                "the API server dropped spec.preferredHolder", r.json())
        return r.status == 200

    wait_for(prefer, bool, timeout=TIMEOUT, what="the admin's update of preferredHolder")
    moved_at = time.monotonic()
    new, new_term = wait_for(lambda: the_leader(replicas, timeout=TIMEOUT),
                             lambda lt: lt[0] is wanted, timeout=TIMEOUT,
                             what=f"{wanted.name} to lead", interval=0.2)
    print(f"{wanted.name} leads {time.monotonic() - moved_at:.2f}s after preferredHolder")
    spec = lease(kube)["spec"]
    assert spec["holderIdentity"] == wanted.name, spec
    assert spec["preferredHolder"] == wanted.name, spec
    assert spec["strategy"] == "OldestEmulationVersion", ("holdfast keeps what it does not own",
                                                          spec)
    assert new_term > term
    assert leader.proc.running() and leader.leader()["is_leader"] is False
    stop_all(replicas)


def rollout_of(replica) -> dict:
    replica.assert_running()
    return replica.admin.get_json("/debug/rollout")


def upstream_status(kube, name: str) -> dict:
    return kube.admin.get("holdfast.dev/v1", "Upstream", name, "test").get("status") or {}


def test_replicas_share_rollout_decisions_through_a_config_map(kube, procs, tmp_path):
    install(kube)
    kube.admin.apply([upstream("up-a", 18081), virtual_service("vs", [route(upstream="up-a")])])
    # Decisions by hand only: a bake and timeout no test waits for.
    flags = ["--rollout-canary-metadata", "canary=yes", "--rollout-bake", "1h",
             "--rollout-ack-timeout", "1h"]
    a, b = start_replicas(kube, procs, tmp_path, names=("a", "b"), extra=flags)
    for r in (a, b):
        view = wait_for(lambda: rollout_of(r), lambda v: v["stable"] != "", timeout=TIMEOUT,
                        what=f"{r.name} serving a stable snapshot")
        assert view["decisions"]["shared_through"] == \
            "ConfigMap holdfast-system/holdfast-rollout key decisions", view

    kube.admin.apply([upstream("up-a", 18082)])  # a change: baking on both
    views = wait_for(lambda: [rollout_of(a), rollout_of(b)],
                     lambda v: all(x["stage"] == "baking" for x in v)
                     and v[0]["candidate"] == v[1]["candidate"],
                     timeout=TIMEOUT, what="the same candidate baking on both replicas")
    candidate = views[0]["candidate"]
    aborted = subprocess.run([Binaries.from_env().holdfast, "rollout", "abort", "--admin",
                              f"127.0.0.1:{a.admin.port}", "-o", "json"],
                             capture_output=True, text=True, timeout=60)
    assert aborted.returncode == 0, (aborted.stdout, aborted.stderr)
    assert json.loads(aborted.stdout)["shared"] is True, aborted.stdout
    held = wait_for(lambda: rollout_of(b), lambda v: v["stage"] == "held", timeout=TIMEOUT,
                    what="b held by a's abort")
    assert held["reason"] == "aborted by the operator (decided by replica a)", held
    # The decision as the API server keeps it, read as admin.
    cm = kube.admin.get("v1", "ConfigMap", "holdfast-rollout", "holdfast-system")
    recorded = json.loads(cm["data"]["decisions"])["decisions"]
    assert [(d["candidate"], d["action"], d["replica"]) for d in recorded] == \
        [(candidate, "hold", "a")], recorded
    # The hold is reported on the object the candidate changed, in the
    # status the leader writes to the API server.
    assert held["held_objects"] == ["Upstream test/up-a"], held
    status = wait_for(lambda: upstream_status(kube, "up-a"), lambda st: st.get("state") == "Rejected",
                      timeout=TIMEOUT, what="the hold on the Upstream's status")
    assert "held by the staged rollout" in status["reasons"][0]["message"] and \
        "aborted by the operator" in status["reasons"][0]["message"], status
    assert status["servingLastGood"] is True, status

    promoted = subprocess.run([Binaries.from_env().holdfast, "rollout", "promote", "--admin",
                               f"127.0.0.1:{b.admin.port}", "-o", "json"],
                              capture_output=True, text=True, timeout=60)
    assert promoted.returncode == 0, (promoted.stdout, promoted.stderr)
    promoted = json.loads(promoted.stdout)
    assert promoted["shared"] is True, promoted
    done = wait_for(lambda: rollout_of(a), lambda v: v["stage"] == "idle"
                    and v["stable"] == candidate, timeout=TIMEOUT,
                    what="a promoted by b's decision")
    assert done["reason"] == "promoted by the operator (decided by replica b)", done
    wait_for(lambda: upstream_status(kube, "up-a"), lambda st: st.get("state") == "Accepted",
             timeout=TIMEOUT, what="the Upstream's status Accepted once promoted")
    stop_all([a, b])
