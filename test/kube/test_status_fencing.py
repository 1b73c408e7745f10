"""Status write-back on Kubernetes, fenced by the API server: replicas of
`holdfast serve --kubeconfig` (the least-privileged holdfast user) against a
real API server with deploy/status-fencing.yaml installed.

- the policy type-checks, and before any Lease exists no status is admitted;
- only the leader writes: each holdfast.dev object gets state, reasons with
  field paths, the Accepted condition and observedGeneration, and names its
  writer (the Lease's holder, term leaseTransitions + 1);
- the API server refuses the write a late ex-leader would send (its own
  identity and ended term, sent as the holdfast user) and a write naming
  another replica, with a message that says why;
- a Lease not written for its leaseDurationSeconds fences even the holder
  it names (what the API server's Lease cache shows in the milliseconds
  before it sees another replica take over), and a renewal lifts it;
- the leader SIGSTOPped past its lease while an object changes: the new
  leader converges that object's status (observedGeneration included) in
  its term; after SIGCONT the old leader writes nothing, and the statuses
  still name the new leader.
"""

import copy
import datetime
import signal
import time

from hf_gateway import route, upstream, virtual_service
from hf_kube import REPO
from hf_replica import the_leader
from hf_wait import wait_for
from test_kube_election import (LEASE_NAME, LEASE_NS, TAKEOVER_BOUND, TIMEOUT, install, lease,
                                new_leader_within, start_replicas, stop_all)

API = "holdfast.dev/v1"
POLICY = "holdfast-status-fencing"
FENCED = "holdfast status fencing: a status may only be written by the holder of Lease"
UNRENEWED = "which has ended by this write"


def install_fencing(kube):
    """CRDs, RBAC and the policy. (Its type-checking status is written by
    kube-controller-manager, which these tests do not run: a CEL error would
    refuse every write under failurePolicy Fail, so the leader's accepted
    writes below are what show the expressions evaluate.)"""
    install(kube)
    kube.admin.apply(REPO / "deploy/status-fencing.yaml")
    # The API server enforces a new policy only once it has loaded it (about
    # a second here): until a probe's status write is refused, any is taken.
    probe = upstream("fencing-probe", 8080)
    kube.admin.apply(probe)
    status = {"state": "Accepted", "writer": {"replica": "nobody", "term": 1}}
    r = wait_for(lambda: put_status(kube.admin, stored(kube, "Upstream", "fencing-probe"), status),
                 lambda r: r.status in (403, 422), timeout=TIMEOUT,
                 what="the fencing policy to be enforced")
    kube.admin.delete(API, "Upstream", "fencing-probe", "test")
    return r


def put_status(client, obj: dict, status: dict):
    """PUT obj's /status with `status`; the HTTP answer."""
    body = copy.deepcopy(obj)
    body["status"] = status
    return client.request("PUT", client.object_path(body, "status"), body)


def stored(kube, kind: str, name: str) -> dict:
    obj = kube.admin.get(API, kind, name, "test")
    assert obj is not None, f"{kind} test/{name} not stored"
    return obj


def written_by(kube, kind, name, replica, term, generation=None):
    """Waits until the status of `kind` test/`name` names `replica` in
    `term` (and is about `generation`, if given); returns the object."""
    def done(obj):
        status = obj.get("status") or {}
        return (status.get("writer") == {"replica": replica, "term": term} and
                (generation is None or status.get("observedGeneration") == generation))
    return wait_for(lambda: stored(kube, kind, name), done, timeout=TIMEOUT,
                    what=f"{kind} {name} status written by {replica} in term {term}")


def test_no_status_is_admitted_before_a_lease_exists(kube):
    # 422 (Invalid): how the API server answers for a binding whose
    # parameter is missing; a CEL rule that fails is 403 (the policy's reason).
    r = install_fencing(kube)
    assert r.status == 422 and POLICY in r.text() and "no params found" in r.text(), r.text()


def write_lease(kube, holder: str, transitions: int, seconds: int):
    """Creates or renews the Lease as a holder would: renewTime to the
    microsecond, so that every renewal changes it."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.admin.apply({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": LEASE_NS},
        "spec": {"holderIdentity": holder, "leaseTransitions": transitions,
                 "leaseDurationSeconds": seconds, "acquireTime": now, "renewTime": now}})


def test_a_lease_left_unrenewed_fences_its_own_holder(kube):
    install_fencing(kube)
    kube.admin.apply(upstream("api", 8080))
    holdfast = kube.client("holdfast")
    writer = {"replica": "x", "term": 5}

    def renewed_and_written(state):
        write_lease(kube, "x", 4, 2)
        return put_status(holdfast, stored(kube, "Upstream", "api"),
                          {"state": state, "writer": writer})

    # The holder renewing: its write is admitted once the policy's Lease
    # cache has the Lease (refused with FENCED before that).
    r = wait_for(lambda: renewed_and_written("Accepted"), lambda r: r.status == 200,
                 timeout=TIMEOUT, what="the holder's write to be admitted")
    # No renewal for longer than leaseDurationSeconds (plus the second the
    # API server's timestamps are truncated to): the same holder, same term,
    # is refused, because another replica could hold the Lease by now.
    time.sleep(3.2)
    r = put_status(holdfast, stored(kube, "Upstream", "api"), {"state": "Warning", "writer": writer})
    assert r.status == 403 and UNRENEWED in r.text() and "lease" in r.text().lower(), \
        (r.status, r.text())
    print("refusal:", r.text())
    assert stored(kube, "Upstream", "api")["status"]["state"] == "Accepted"
    # A renewal lifts it.
    wait_for(lambda: renewed_and_written("Warning"), lambda r: r.status == 200,
             timeout=TIMEOUT, what="the renewed holder's write to be admitted")
    assert stored(kube, "Upstream", "api")["status"]["state"] == "Warning"


def test_only_the_leader_writes_and_the_api_server_refuses_ended_terms(kube, procs, tmp_path):
    install_fencing(kube)
    a = kube.admin
    a.apply([upstream("api", 8080),
             virtual_service("shop", [route({"regex": "(broken"}, upstream="api")])])
    replicas = start_replicas(kube, procs, tmp_path, names=("a", "b"))
    try:
        leader, term = the_leader(replicas, timeout=TIMEOUT)
        assert term == lease(kube)["spec"].get("leaseTransitions", 0) + 1

        up = written_by(kube, "Upstream", "api", leader.name, term, generation=1)
        assert up["status"]["state"] == "Accepted", up["status"]
        [accepted] = up["status"]["conditions"]
        assert (accepted["type"], accepted["status"], accepted["reason"]) == \
            ("Accepted", "True", "Accepted"), accepted
        vs = written_by(kube, "VirtualService", "shop", leader.name, term, generation=1)
        status = vs["status"]
        print("VirtualService status:", status)
        assert status["state"] == "Rejected", status
        assert any(r["field"].startswith("spec.routes[0].match.regex") for r in status["reasons"]), \
            status
        [cond] = status["conditions"]
        assert (cond["status"], cond["reason"], cond["observedGeneration"]) == ("False", "Rejected", 1)

        # A spec change: the leader writes the new generation's status.
        fixed = virtual_service("shop", [route({"prefix": "/"}, upstream="api")])
        a.apply(fixed)
        vs = written_by(kube, "VirtualService", "shop", leader.name, term, generation=2)
        assert vs["status"]["state"] == "Accepted", vs["status"]

        # What a late ex-leader would send, as the holdfast user: refused. So is
        # a write naming the other replica, or no writer at all.
        holdfast = kube.client("holdfast")
        follower = next(r for r in replicas if r is not leader)
        # (Term 0 never gets that far: the schema wants a term >= 1.)
        for writer in ([{"replica": leader.name, "term": term - 1}] if term > 1 else []) + [
                {"replica": leader.name, "term": term + 1},
                {"replica": follower.name, "term": term}]:
            late = copy.deepcopy(vs["status"])
            late["writer"] = writer
            late["state"] = "Warning"
            r = put_status(holdfast, vs, late)
            assert r.status == 403 and FENCED in r.text(), \
                (writer, lease(kube)["spec"], r.status, r.text())
        no_writer = {k: v for k, v in vs["status"].items() if k != "writer"}
        assert put_status(holdfast, vs, no_writer).status == 403
        assert stored(kube, "VirtualService", "shop")["status"]["state"] == "Accepted"

        # The leader paused past its lease while the object changes again.
        paused_at = time.monotonic()
        leader.proc.proc.send_signal(signal.SIGSTOP)
        try:
            a.apply(virtual_service("shop", [route({"regex": "(again"}, upstream="api")]))
            new, new_term = new_leader_within([follower], paused_at, TAKEOVER_BOUND, "after SIGSTOP")
            assert new_term == term + 1
            # The new term converges what changed meanwhile, and rewrites the
            # rest under its own name only where the content differs.
            vs = written_by(kube, "VirtualService", "shop", new.name, new_term, generation=3)
            assert vs["status"]["state"] == "Rejected", vs["status"]
            # The request the paused leader would send now: refused.
            late = copy.deepcopy(vs["status"])
            late["writer"] = {"replica": leader.name, "term": term}
            r = put_status(holdfast, vs, late)
            assert r.status == 403 and FENCED in r.text(), (r.status, r.text())
        finally:
            leader.proc.proc.send_signal(signal.SIGCONT)
        wait_for(leader.leader, lambda v: v["is_leader"] is False and v["leader"] == new.name,
                 timeout=TIMEOUT, what=f"{leader.name} to follow {new.name}")
        before = stored(kube, "VirtualService", "shop")["metadata"]["resourceVersion"]
        time.sleep(2)  # a few of the old leader's would-be passes
        after = stored(kube, "VirtualService", "shop")
        assert after["metadata"]["resourceVersion"] == before, "the old leader wrote a status"
        assert after["status"]["writer"] == {"replica": new.name, "term": new_term}
        assert leader.metric("holdfast_status_writes_fenced_total") == 0, \
            "the woken leader knew its term had ended before writing"
        assert new.metric("holdfast_status_writes_total") >= 1
        # The policy reads the Lease from the API server's informer: a write the
        # new leader sends before the informer saw its term is refused and
        # retried (an error, not fencing: the Lease names it).
        print("new leader's refused-and-retried writes:",
              new.metric("holdfast_status_write_errors_total"))
        for r in replicas:
            assert r.ready(), r
        stop_all(replicas)
    finally:  # a failed check must not leave watches holding the API server's shutdown
        for r in replicas:
            if r.proc.running():
                r.proc.proc.send_signal(signal.SIGCONT)
                r.proc.stop()
