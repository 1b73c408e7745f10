"""holdfast on etcd (docs/etcd.md): several replicas reading gateway objects
from one etcd prefix, serving real proxyless gRPC clients, with one elected
leader writing statuses fenced by its term.

Every test has its own etcd member (or cluster) and prefix. Store faults are
injected on loopback: SIGKILL/SIGSTOP of replicas and a FaultProxy between
a replica and etcd. Every wait polls with a deadline; none passes by
sleeping. Status keys are read with etcdctl (`-w json`: mod_revision and
the raw value).
"""

import re

import pytest

from hf_gateway import object_status, route, to_yaml, virtual_service, wait_state
from hf_replica import (CONVERGE_TIMEOUT, FAILOVER_TIMEOUT, NS, Store, assert_status_value,
                        echo_to, key_of, new_client, serving, the_leader, upstreams,
                        wait_status_by_current_leader, wait_store_statuses, written_by)
from hf_wait import assert_stays, wait_for
from hf_world import REPO_ROOT, START_TIMEOUT, assert_no_nack

EXAMPLES = REPO_ROOT / "examples" / "gateway"


# --- fixtures ----------------------------------------------------------------
# (store, on one member, and etcd_support are in conftest.py)

@pytest.fixture
def store3(procs, etcd_support, etcd_cluster, tmp_path):
    """A fresh prefix on a three-member etcd cluster."""
    s = Store(procs, etcd_support.holdfast, etcd_cluster, tmp_path / "store")
    yield s
    s.close()


def example_object_count() -> int:
    return sum(1 for f in EXAMPLES.glob("*.yaml")
               for line in f.read_text().splitlines() if line.startswith("kind:"))


# --- 1. config flows to real clients through every replica --------------------

def test_config_reaches_clients_through_every_replica(store, backends, procs, binaries,
                                                      tmp_path):
    """`holdfast apply` writes the example objects and an Echo service in one
    transaction; two replicas serve them: a C++ client on replica b and a
    Node (or second C++) client on replica a reach alpha; applying a route
    change moves both clients to beta."""
    s = store
    alpha, beta = backends
    examples = sorted(EXAMPLES.glob("*.yaml"))
    ups = s.write("upstreams.yaml", *upstreams(alpha.port, beta.port))
    echo = s.write("echo.yaml", echo_to("alpha"))
    r = s.cli.apply(*examples, ups, echo)
    want = example_object_count() + 3
    assert f"applied {want} objects" in r.stdout, s.cli.describe(r)

    keys = s.config_keys()
    assert len(keys) == want, sorted(keys)
    assert s.key("config", "VirtualService", NS, "echo") in keys, sorted(keys)
    assert s.key("config", "VirtualService", "shop", "shop") in keys, sorted(keys)
    # One transaction: every key written at the same revision.
    assert len({kv.mod_revision for kv in keys.values()}) == 1, \
        {k: kv.mod_revision for k, kv in keys.items()}

    a = s.replica("a")
    b = s.replica("b")
    a.wait_ready()
    b.wait_ready()
    on_b = new_client(procs, binaries, tmp_path, b)
    on_a = new_client(procs, binaries, tmp_path, a, kind="node" if binaries.node else "cpp")
    serving(b, on_b, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    serving(a, on_a, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    for rep in (a, b):
        wait_state(rep.admin, "VirtualService", "shop", "Accepted", ns="shop",
                   timeout=CONVERGE_TIMEOUT)

    marks = (on_a.mark(), on_b.mark())
    s.apply("echo.yaml", echo_to("beta"))
    serving(b, on_b, "beta", since=marks[1])
    serving(a, on_a, "beta", since=marks[0])
    # Once moved, stays moved.
    for rep, c in ((a, on_a), (b, on_b)):
        lines = c.wait_lines(10, since=c.mark(), timeout=CONVERGE_TIMEOUT,
                             guard=lambda: assert_no_nack(rep.admin, c.node_id))
        assert lines == ["ok beta"] * 10, lines


# --- 2. one leader; failover reconciles statuses --------------------------------

def test_one_leader_fails_over_and_reconciles_statuses(store):
    """Three replicas: exactly one leads, with the create revision of its
    election key as term, and it alone writes every status. Then, with the
    leader SIGKILLed and the two followers stopped (so nobody leads), one
    status is overwritten with garbage, one deleted, and one object deleted.
    The follower that takes over rewrites the two statuses under its own
    term and removes the deleted object's status."""
    s = store
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"),
            echo_to("beta", name="doomed", domains=["doomed.test"]))
    reps = [s.replica(n) for n in ("a", "b", "c")]
    for r in reps:
        r.wait_ready()

    leader, term = the_leader(reps)
    followers = [r for r in reps if r is not leader]
    assert_stays(lambda: sorted(r.name for r in reps if r.leader()["is_leader"]),
                 duration=3.0, what="the set of replicas saying they lead")

    election = s.election_kvs()
    assert sorted(kv.text() for kv in election) == ["a", "b", "c"], \
        [(kv.key, kv.text()) for kv in election]
    own = [kv for kv in election if kv.text() == leader.name]
    assert own[0].create_revision == term, (term, [(kv.key, kv.create_revision) for kv in own])
    assert min(kv.create_revision for kv in election) == term

    objects = {key_of("Upstream", "alpha"): "Accepted", key_of("Upstream", "beta"): "Accepted",
               key_of("VirtualService", "echo"): "Accepted",
               key_of("VirtualService", "doomed"): "Accepted"}
    wait_store_statuses(s, objects, what=f"every status written by {leader.name}",
                        extra=lambda st: written_by(st, leader.name, term))

    assert leader.metric("holdfast_is_leader") == 1
    assert leader.metric("holdfast_leader_term") == term
    assert leader.metric("holdfast_status_writes_total") >= len(objects)
    for f in followers:
        assert f.metric("holdfast_is_leader") == 0, f
        assert f.metric("holdfast_status_writes_total") == 0, f

    # Nobody leads while the store is tampered with: the followers are
    # stopped before the leader dies and continued after.
    echo_key = s.key("status", "VirtualService", NS, "echo")
    beta_key = s.key("status", "Upstream", NS, "beta")
    for f in followers:
        f.pause()
    try:
        leader.kill()
        s.etcd.put(echo_key, "garbage{")
        assert s.etcd.delete(beta_key) == 1
        s.cli.delete("VirtualService", f"{NS}/doomed")
        tampered_at = s.etcd.revision()
    finally:
        for f in followers:
            f.resume()

    new, new_term = the_leader(followers, timeout=FAILOVER_TIMEOUT)
    assert new_term != term
    del objects[key_of("VirtualService", "doomed")]

    def reconciled(statuses):
        for k in (key_of("VirtualService", "echo"), key_of("Upstream", "beta")):
            if statuses[k].get("writer") != new.name or statuses[k].get("term") != new_term:
                return False
        # Untouched statuses may keep the old leader's write; any write is
        # a leader's under its own term.
        return all((v.get("writer"), v.get("term")) in ((leader.name, term),
                                                       (new.name, new_term))
                   for v in statuses.values())

    wait_store_statuses(s, objects, extra=reconciled,
                        what=f"{new.name} to repair the tampered statuses and drop doomed's",
                        timeout=CONVERGE_TIMEOUT)
    kvs = s.status_kvs()
    assert kvs[key_of("VirtualService", "echo")].mod_revision > tampered_at
    assert kvs[key_of("Upstream", "beta")].mod_revision > tampered_at

    view = new.leader()
    assert view["transitions"] >= 1, view
    assert new.metric("holdfast_leader_transitions_total") >= 1
    assert new.metric("holdfast_is_leader") == 1
    assert new.metric("holdfast_leader_term") == new_term
    other = next(f for f in followers if f is not new)
    assert other.leader()["leader"] == new.name


# --- 3. a paused leader is fenced ----------------------------------------------

def test_paused_leader_is_fenced(store):
    """The leader is SIGSTOPped past its lease; the other replica takes over
    and writes the statuses of changes made meanwhile. Continued, the old
    leader stays up, reports is_leader false, and no status written after
    the new term began is the old leader's."""
    s = store
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    reps = [s.replica("a"), s.replica("b")]
    for r in reps:
        r.wait_ready()
    old, old_term = the_leader(reps)
    successor = next(r for r in reps if r is not old)
    wait_store_statuses(s, {key_of("Upstream", "alpha"): "Accepted",
                            key_of("Upstream", "beta"): "Accepted",
                            key_of("VirtualService", "echo"): "Accepted"},
                        what=f"statuses written by {old.name}",
                        extra=lambda st: written_by(st, old.name, old_term))

    old_keys = [kv.key for kv in s.election_kvs() if kv.text() == old.name]
    assert len(old_keys) == 1, [(kv.key, kv.text()) for kv in s.election_kvs()]
    old.pause()
    paused_at = s.etcd.revision()
    try:
        new, new_term = the_leader([successor], timeout=FAILOVER_TIMEOUT)
        assert new_term > old_term, (old_term, new_term)
        # The old leader's term ended when its election key went with its
        # lease; from that revision on, etcd must refuse its writes.
        assert s.etcd.get(old_keys[0]) is None, f"{new.name} leads beside {old_keys[0]}"
        ended_at = s.etcd.deleted_at(old_keys[0], paused_at, s.etcd.revision())
        # Changes while the old leader sleeps: a route to a missing Upstream
        # (Warning, through apply) and an unknown field (Rejected, written
        # directly: apply would refuse it).
        s.apply("ghost.yaml", virtual_service(
            "ghostly", [route(name="to-ghost", upstream="ghost")], domains=["ghost.test"]))
        bad = virtual_service("bad", [route(name="default", upstream="alpha", colour="red")],
                              domains=["bad.test"])
        s.etcd.put(s.key("config", "VirtualService", NS, "bad"), to_yaml(bad))
        wait_store_statuses(
            s, {key_of("Upstream", "alpha"): "Accepted", key_of("Upstream", "beta"): "Accepted",
                key_of("VirtualService", "echo"): "Accepted",
                key_of("VirtualService", "ghostly"): "Warning",
                key_of("VirtualService", "bad"): "Rejected"},
            what=f"{new.name} to write the new statuses",
            extra=lambda st: all(st[key_of("VirtualService", n)].get("writer") == new.name
                                 for n in ("ghostly", "bad")))
    finally:
        old.resume()

    view = wait_for(old.leader, lambda v: v["is_leader"] is False and v["leader"] == new.name,
                    timeout=CONVERGE_TIMEOUT,
                    what=f"{old.name} to follow {new.name} after SIGCONT")
    assert view["replica"] == old.name, view

    # A change after it woke, so the old leader has fresh statuses of its
    # own to (not) write: echo now routes to a missing Upstream.
    s.apply("objects.yaml", *upstreams(), virtual_service(
        "echo", [route(name="default", upstream="ghost")], domains=["echo.test"]))
    for r in (old, new):
        wait_state(r.admin, "VirtualService", "echo", "Warning", timeout=CONVERGE_TIMEOUT)
    wait_for(s.statuses,
             lambda st: st.get(key_of("VirtualService", "echo"), {}).get("state") == "Warning",
             timeout=CONVERGE_TIMEOUT, what="echo's Warning status in the store")

    # The successor's term (its key's create revision) may predate the old
    # leader's last legitimate writes; the old term ended at `ended_at`.
    stale = [(k, kv.mod_revision, kv.text()) for k, kv in s.status_kvs().items()
             if kv.mod_revision > ended_at and _writer(kv) == old.name]
    assert not stale, f"written by {old.name} after its term ended at {ended_at}: {stale!r}"
    for k, kv in s.status_kvs().items():
        if kv.mod_revision > ended_at:
            value = kv.json()
            assert (value.get("writer"), value.get("term")) == (new.name, new_term), (k, value)

    old.assert_running()
    assert old.leader()["is_leader"] is False
    assert old.metric("holdfast_is_leader") == 0
    assert new.leader()["is_leader"] is True


def _writer(kv) -> object:
    try:
        return kv.json().get("writer")
    except AssertionError:
        return None


# --- 4. compaction while a replica is cut off -----------------------------------

def test_replica_converges_after_compaction_while_cut_off(store, backends, procs, binaries,
                                                         tmp_path):
    """A replica reaches etcd through a FaultProxy. Its connections are
    reset and refused while several changes are written and etcd is
    compacted past everything it saw; it keeps serving meanwhile. Restored,
    it converges to the latest config (a real client moves, a deleted object
    is gone) at a revision at least the compacted one."""
    s = store
    alpha, beta = backends
    proxy = s.etcd.proxy()
    s.apply("upstreams.yaml", *upstreams(alpha.port, beta.port))
    s.apply("echo.yaml", echo_to("alpha"))
    s.apply("extra.yaml", echo_to("beta", name="extra", domains=["extra.test"]))
    rep = s.replica("solo", endpoints=proxy.endpoint)
    rep.wait_ready()
    c = new_client(procs, binaries, tmp_path, rep)
    serving(rep, c, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    wait_state(rep.admin, "VirtualService", "extra", "Accepted", timeout=CONVERGE_TIMEOUT)
    seen = wait_for(rep.store, lambda st: st["connected"] is True, timeout=CONVERGE_TIMEOUT,
                    what="the replica connected to the store")["revision"]

    proxy.set_mode("reject")
    wait_for(rep.store, lambda st: st["connected"] is False, timeout=CONVERGE_TIMEOUT,
             what="the replica to notice the store is unreachable")
    cut = c.mark()
    s.apply("echo.yaml", virtual_service("echo", [route(name="v2", upstream="alpha")],
                                         domains=["echo.test"]))
    s.apply("echo.yaml", echo_to("beta"))
    assert s.cli.delete("VirtualService", f"{NS}/extra").returncode == 0
    s.apply("late.yaml", echo_to("alpha", name="late", domains=["late.test"]))
    compacted = s.etcd.compact()
    assert compacted > seen
    down = rep.store()
    assert down["connected"] is False and down["last_error"], down
    assert rep.metric("holdfast_store_connected") == 0
    # Cut off from the store, it serves what it had.
    during = c.lines(cut)
    assert set(during) <= {"ok alpha"}, during

    restored = c.mark()
    proxy.set_mode("pass")
    serving(rep, c, "beta", since=restored, timeout=CONVERGE_TIMEOUT)
    st = wait_for(rep.store, lambda st: st["connected"] is True and st["revision"] >= compacted,
                  timeout=CONVERGE_TIMEOUT, what=f"store revision >= {compacted}")
    assert st["last_error"] in ("", None), st
    assert rep.metric("holdfast_store_revision") >= compacted
    assert rep.metric("holdfast_store_connected") == 1
    wait_state(rep.admin, "VirtualService", "late", "Accepted", timeout=CONVERGE_TIMEOUT)
    wait_for(lambda: object_status(rep.admin, "VirtualService", "extra"), lambda x: x is None,
             timeout=CONVERGE_TIMEOUT, what="the deleted VirtualService extra to be gone")
    # It leads again (it is alone) and writes the statuses of what changed.
    wait_store_statuses(s, {key_of("Upstream", "alpha"): "Accepted",
                            key_of("Upstream", "beta"): "Accepted",
                            key_of("VirtualService", "echo"): "Accepted",
                            key_of("VirtualService", "late"): "Accepted"},
                        what="statuses after the outage",
                        extra=lambda st: st[key_of("VirtualService", "late")]
                        .get("writer") == "solo")


# --- 5. bad objects written behind apply's back ---------------------------------

def test_bad_objects_in_store_are_rejected(store, backends, procs, binaries, tmp_path):
    """Invalid YAML at a valid key, an object of an unknown kind and an
    object stored under another object's key, put with etcdctl: the leader
    writes Rejected statuses whose reasons name the key, within the limits
    on reasons; valid objects keep serving a real client, and later changes
    still apply."""
    s = store
    alpha, beta = backends
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), echo_to("alpha"))
    rep = s.replica("a")
    rep.wait_ready()
    c = new_client(procs, binaries, tmp_path, rep)
    serving(rep, c, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)

    broken_key = s.key("config", "VirtualService", NS, "broken")
    gizmo_key = s.key("config", "Gizmo", NS, "thing")
    s.etcd.put(broken_key, "apiVersion: holdfast.dev/v1\nkind: VirtualService\n"
                           "metadata: {name: broken, namespace: test\nspec: [\n")
    s.etcd.put(gizmo_key, to_yaml({"apiVersion": "holdfast.dev/v1", "kind": "Gizmo",
                                   "metadata": {"name": "thing", "namespace": NS},
                                   "spec": {"size": 3}}))
    # An object at another object's key, 25 errors in one object, and an
    # error message of 3 KB (docs/etcd.md: at most 20 reasons of 1 KiB).
    s.etcd.put(s.key("config", "VirtualService", NS, "elsewhere"),
               to_yaml(echo_to("alpha", name="other", domains=["other.test"])))
    s.etcd.put(s.key("config", "VirtualService", NS, "many"), to_yaml(virtual_service(
        "many", [route(name=f"r{i}", upstream="alpha", colour="red") for i in range(25)],
        domains=["many.test"])))
    s.etcd.put(s.key("config", "VirtualService", NS, "long"), to_yaml(virtual_service(
        "long", [route({"prefix": "/", "headers": [{"name": "x", "regex": "(" + "a" * 3000}]},
                       name="r", upstream="alpha")], domains=["long.test"])))
    mark = c.mark()
    expected = {key_of("Upstream", "alpha"): "Accepted", key_of("Upstream", "beta"): "Accepted",
                key_of("VirtualService", "echo"): "Accepted",
                key_of("VirtualService", "broken"): "Rejected",
                key_of("Gizmo", "thing"): "Rejected",
                key_of("VirtualService", "elsewhere"): "Rejected",
                key_of("VirtualService", "many"): "Rejected",
                key_of("VirtualService", "long"): "Rejected"}
    statuses = wait_store_statuses(s, expected, what="Rejected statuses for the bad keys",
                                   extra=lambda st: written_by(st, "a", st[key_of(
                                       "Upstream", "alpha")].get("term")))
    for k, store_key in ((key_of("VirtualService", "broken"), broken_key),
                         (key_of("Gizmo", "thing"), gizmo_key)):
        reasons = statuses[k]["reasons"]
        assert reasons, statuses[k]
        locations = [str(r.get("location", "")) for r in reasons]
        assert any(loc == store_key or loc.rpartition(":")[0] == store_key
                   for loc in locations), (store_key, statuses[k])
    # (Limits checked on every status by wait_store_statuses.)
    many = statuses[key_of("VirtualService", "many")]["reasons"]
    assert many[0]["path"] == "spec.routes[0].colour", many[0]
    long_reasons = statuses[key_of("VirtualService", "long")]["reasons"]
    assert [r["path"] for r in long_reasons] == ["spec.routes[0].match.headers[0].regex"], \
        long_reasons
    for kind, name in (("VirtualService", "broken"), ("Gizmo", "thing"),
                       ("VirtualService", "elsewhere")):
        st = object_status(rep.admin, kind, name)
        assert st is not None and st["status"] == "Rejected", (kind, name, st)

    lines = c.wait_lines(10, since=mark, timeout=CONVERGE_TIMEOUT,
                         guard=lambda: assert_no_nack(rep.admin, c.node_id))
    assert lines == ["ok alpha"] * 10, lines
    # Bad keys do not wedge the source: a later change still applies.
    mark = c.mark()
    s.apply("echo.yaml", echo_to("beta"))
    serving(rep, c, "beta", since=mark)


# --- 6. the CLI ----------------------------------------------------------------

def test_apply_validates_and_get_lists_statuses(store):
    """apply refuses a batch with an invalid object (exit 1, FILE:LINE:
    PATH: MESSAGE, nothing written); --partial writes the valid objects in
    one transaction and still exits 1; get lists objects as Unknown until a
    leader writes statuses, then with them; delete removes one object."""
    s = store
    good = s.write("good.yaml", *upstreams())
    bad = s.write("bad.yaml", virtual_service(
        "echo", [route(name="default", upstream="alpha", colour="red")], domains=["echo.test"]))
    bad_line = s.line_of(bad, "colour:")

    # docs/etcd.md: `FILE:LINE: PATH: MESSAGE`; holdfast also names the
    # object between location and path, which is allowed here.
    error = re.compile(rf"{re.escape(str(bad))}:{bad_line}: (?:VirtualService {NS}/echo: )?"
                       rf"spec\.routes\[0\]\.colour: \S")
    r = s.cli.apply(good, bad, expect=1)
    assert error.search(r.stdout + r.stderr), s.cli.describe(r)
    assert s.config_keys() == {}, "apply wrote objects from a batch it refused"

    r = s.cli.apply(good, bad, partial=True, expect=1)
    assert error.search(r.stdout + r.stderr), s.cli.describe(r)
    keys = s.config_keys()
    assert sorted(keys) == [s.key("config", "Upstream", NS, "alpha"),
                            s.key("config", "Upstream", NS, "beta")], sorted(keys)
    assert len({kv.mod_revision for kv in keys.values()}) == 1, "not one transaction"

    r = s.apply("echo.yaml", echo_to("alpha"))
    assert re.search(r"applied 1 objects?\b", r.stdout), s.cli.describe(r)

    names = [("Upstream", NS, "alpha"), ("Upstream", NS, "beta"), ("VirtualService", NS, "echo")]
    listed = s.cli.get()
    assert sorted((o["kind"], o["namespace"], o["name"]) for o in listed) == names, listed
    assert all(o["status"] is None for o in listed), listed
    assert sorted(s.cli.get_table()) == sorted(
        [k, f"{ns}/{n}", "Unknown"] for k, ns, n in names)

    rep = s.replica("a")
    rep.wait_ready()
    listed = wait_for(s.cli.get, lambda objs: len(objs) == 3 and all(
        o["status"] and o["status"].get("state") == "Accepted" for o in objs),
        timeout=CONVERGE_TIMEOUT, what="get -o json to show Accepted statuses", interval=0.5)
    for o in listed:
        assert o["status"]["writer"] == "a", o
        assert_status_value((o["kind"], o["namespace"], o["name"]), o["status"])
    assert sorted(s.cli.get_table()) == sorted(
        [k, f"{ns}/{n}", "Accepted"] for k, ns, n in names)
    only_vs = s.cli.get("VirtualService")
    assert [(o["kind"], o["name"]) for o in only_vs] == [("VirtualService", "echo")], only_vs

    s.cli.delete("VirtualService", f"{NS}/echo")
    assert s.cli.delete("VirtualService", f"{NS}/echo", expect=1).returncode == 1
    assert [o["name"] for o in s.cli.get()] == ["alpha", "beta"]
    wait_for(s.statuses, lambda st: key_of("VirtualService", "echo") not in st,
             timeout=CONVERGE_TIMEOUT, what="the leader to remove the deleted object's status")


# --- 7. a leader cut off by a blackhole steps down ------------------------------

def test_blackholed_leader_steps_down(store):
    """The leader reaches etcd through a FaultProxy that starts dropping
    everything (no reset, no answer). It must stop saying it leads by its own
    clock, the other replica takes over and writes the statuses of a change
    made meanwhile; when the network heals the old leader follows, catches up
    with the change, and none of its writes landed after its term ended."""
    s = store
    proxy = s.etcd.proxy()
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    a = s.replica("a", endpoints=proxy.endpoint)
    a.wait_ready()
    _, a_term = the_leader([a])
    b = s.replica("b")
    b.wait_ready()
    leader, term = the_leader([a, b])
    assert (leader, term) == (a, a_term), (leader, term, a_term)
    a_keys = [kv.key for kv in s.election_kvs() if kv.text() == "a"]
    assert len(a_keys) == 1, [(kv.key, kv.text()) for kv in s.election_kvs()]

    proxy.set_mode("blackhole")
    cut_at = s.etcd.revision()
    wait_for(a.leader, lambda v: v["is_leader"] is False, timeout=CONVERGE_TIMEOUT,
             what="the blackholed leader to stop leading")
    new, new_term = the_leader([b], timeout=FAILOVER_TIMEOUT)
    assert s.etcd.get(a_keys[0]) is None
    ended_at = s.etcd.deleted_at(a_keys[0], cut_at, s.etcd.revision())
    s.apply("echo.yaml", virtual_service("echo", [route(name="default", upstream="ghost")],
                                         domains=["echo.test"]))
    wait_for(s.statuses,
             lambda st: st.get(key_of("VirtualService", "echo"), {}).get("writer") == "b"
             and st[key_of("VirtualService", "echo")].get("state") == "Warning",
             timeout=CONVERGE_TIMEOUT, what="b's Warning status for echo")
    down = wait_for(a.store, lambda st: st["connected"] is False
                    and st["unreachable_seconds"] > 0, timeout=CONVERGE_TIMEOUT,
                    what="a to notice the silent store")
    assert down["last_error"], down
    assert a.metric("holdfast_store_connected") == 0
    assert a.metric("holdfast_is_leader") == 0

    proxy.set_mode("pass")
    wait_for(a.store, lambda st: st["connected"] is True, timeout=CONVERGE_TIMEOUT,
             what="a to reconnect")
    wait_state(a.admin, "VirtualService", "echo", "Warning", timeout=CONVERGE_TIMEOUT)
    view = wait_for(a.leader, lambda v: v["leader"] == "b", timeout=CONVERGE_TIMEOUT,
                    what="a to follow b")
    assert view["is_leader"] is False, view
    assert b.leader()["is_leader"] is True
    stale = [(k, kv.mod_revision, kv.text()) for k, kv in s.status_kvs().items()
             if kv.mod_revision > ended_at and _writer(kv) == "a"]
    assert not stale, f"written by a after its term ended at {ended_at}: {stale!r}"


# --- 8. losing the etcd member in use ---------------------------------------------

def test_replicas_survive_losing_an_etcd_member(store3):
    """Two replicas on a three-member etcd cluster, given every member. The
    member replica a's calls go to (/debug/store endpoint; the first listed
    unless a call failed over at start) is SIGKILLed: both replicas end up
    on the others, take a later change, and a leader (the same or a new one)
    writes its status under its term."""
    s = store3
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    reps = [s.replica("a"), s.replica("b")]
    for r in reps:
        r.wait_ready()
    leader, term = the_leader(reps)
    wait_store_statuses(s, {key_of("Upstream", "alpha"): "Accepted",
                            key_of("Upstream", "beta"): "Accepted",
                            key_of("VirtualService", "echo"): "Accepted"},
                        what=f"statuses written by {leader.name}",
                        extra=lambda st: written_by(st, leader.name, term))

    # The kill hits the member in use: the one the replicas' calls go to
    # (the first listed, unless a call already failed over at start).
    in_use = [r.store()["endpoint"] for r in reps]
    victim = next(m for m in s.etcd.members if m.endpoint == in_use[0])
    killed = victim.endpoint
    victim.kill()
    s.etcd.wait_writable()
    s.apply("echo.yaml", virtual_service("echo", [route(name="default", upstream="ghost")],
                                         domains=["echo.test"]))
    for r in reps:
        wait_state(r.admin, "VirtualService", "echo", "Warning", timeout=CONVERGE_TIMEOUT)
        wait_for(r.store, lambda st: st["connected"] is True and st["endpoint"] != killed,
                 timeout=CONVERGE_TIMEOUT, what=f"{r.name} connected to a live member")
    # Leadership may move while the killed member's calls fail over (a
    # renewal can miss the renew deadline), so the writer expected is the
    # leader agreed on at the moment the status is read.
    wait_status_by_current_leader(s, reps, key_of("VirtualService", "echo"), "Warning")
    for r in reps:
        r.assert_running()


# --- 9. hostile text in the store -------------------------------------------------

def test_hostile_text_in_store_does_not_crash_replicas(store):
    """Values an operator can put behind apply's back: an error message that
    must be cut at 1 KiB where a two-byte character straddles the limit, and
    bytes that are not UTF-8. Both replicas stay up, the leader writes a
    status for each (valid JSON, messages within 1 KiB; the first Rejected),
    the valid objects stay Accepted and the admin endpoints keep rendering.
    (docs/etcd.md does not say whether non-UTF-8 text is Rejected; only that
    nothing breaks is asserted here.)"""
    s = store
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    reps = [s.replica("a"), s.replica("b")]
    for r in reps:
        r.wait_ready()
    leader, term = the_leader(reps)
    # "invalid regex: missing ): (" is 27 bytes: 1024 falls inside an "é".
    s.etcd.put(s.key("config", "VirtualService", NS, "accents"), to_yaml(virtual_service(
        "accents", [route({"prefix": "/", "headers": [{"name": "x", "regex": "(" + "é" * 2000}]},
                          name="r", upstream="alpha")], domains=["accents.test"])))
    s.etcd.put(s.key("config", "VirtualService", NS, "binary"),
               to_yaml(echo_to("alpha", name="binary", domains=["binary.test"])).encode()
               .replace(b'"binary.test"', b'"bin\xff\xfeary.test"'))

    def guard_statuses():
        for r in reps:
            r.assert_running()
        return s.statuses()

    expected = {key_of("Upstream", "alpha"): "Accepted", key_of("Upstream", "beta"): "Accepted",
                key_of("VirtualService", "echo"): "Accepted",
                key_of("VirtualService", "accents"): "Rejected"}
    statuses = wait_for(guard_statuses,
                        lambda st: all(st.get(k, {}).get("state") == v
                                       for k, v in expected.items())
                        and key_of("VirtualService", "binary") in st,
                        timeout=CONVERGE_TIMEOUT, what="statuses of the hostile objects")
    for k, v in statuses.items():
        assert_status_value(k, v)
        assert v["writer"] == leader.name, (k, v)
    message = statuses[key_of("VirtualService", "accents")]["reasons"][0]["message"]
    assert message.startswith("invalid regex"), message
    for r in reps:
        r.assert_running()
        wait_state(r.admin, "VirtualService", "accents", "Rejected", timeout=CONVERGE_TIMEOUT)
        assert object_status(r.admin, "VirtualService", "binary") is not None
        # The admin endpoints still render (JSON needs valid UTF-8).
        for path in ("/debug/snapshot", "/debug/status", "/debug/store", "/debug/leader"):
            status, body = r.admin.get(path)
            assert status == 200, (r.name, path, status, body[:300])


# --- 10. the election key disappears ----------------------------------------------

def test_deleted_election_key_ends_the_term(store):
    """An operator deletes the leader's election key (its lease lives on)
    and a change follows at once. The term ended with the key: no status may
    be written under it afterwards (the fence compares the key's create
    revision). The replica campaigns again and writes the change's status
    under its new term."""
    s = store
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    a = s.replica("a")
    a.wait_ready()
    _, term = the_leader([a])
    wait_store_statuses(s, {key_of("Upstream", "alpha"): "Accepted",
                            key_of("Upstream", "beta"): "Accepted",
                            key_of("VirtualService", "echo"): "Accepted"},
                        what="statuses under the first term",
                        extra=lambda st: written_by(st, "a", term))
    (own,) = [kv for kv in s.election_kvs() if kv.text() == "a"]
    assert own.create_revision == term

    assert s.etcd.delete(own.key) == 1
    deleted_at = s.etcd.revision()
    s.apply("echo.yaml", virtual_service("echo", [route(name="default", upstream="ghost")],
                                         domains=["echo.test"]))
    view = wait_for(a.leader, lambda v: v["is_leader"] is True and v["term"] > deleted_at,
                    timeout=FAILOVER_TIMEOUT, what="a to lead again under a new term")
    new_term = view["term"]
    wait_for(s.statuses,
             lambda st: (st.get(key_of("VirtualService", "echo"), {}).get("state"),
                         st.get(key_of("VirtualService", "echo"), {}).get("term"))
             == ("Warning", new_term),
             timeout=CONVERGE_TIMEOUT, what="echo's Warning status under the new term")
    late = [(k, kv.mod_revision, kv.text()) for k, kv in s.status_kvs().items()
            if kv.mod_revision > deleted_at and kv.json().get("term") != new_term]
    assert not late, (f"written after the key of term {term} was deleted at {deleted_at}, "
                      f"not under the new term {new_term}: {late!r} "
                      f"(fenced writes: {a.metric('holdfast_status_writes_fenced_total')})")
    assert a.metric("holdfast_leader_transitions_total") >= 3  # led, lost, led again


# --- 11. a replica restarted under the same id ------------------------------------

def test_restarted_replica_does_not_inherit_its_old_term(store):
    """Replica a is SIGKILLed and restarted at once under the same id, while
    its old election key (same value, "a") still leads until the old lease
    runs out. The new process must not take the old key for its own: it
    leads only under its own key, and every status it writes carries that
    key's create revision. It revokes the old key as a leftover of its
    earlier process rather than waiting for the lease to run out."""
    s = store
    s.apply("objects.yaml", *upstreams(), echo_to("alpha"))
    a = s.replica("a")
    a.wait_ready()
    _, old_term = the_leader([a])
    wait_store_statuses(s, {key_of("Upstream", "alpha"): "Accepted",
                            key_of("Upstream", "beta"): "Accepted",
                            key_of("VirtualService", "echo"): "Accepted"},
                        what="statuses under the first term",
                        extra=lambda st: written_by(st, "a", old_term))
    (old_key,) = [kv.key for kv in s.election_kvs() if kv.text() == "a"]

    a.kill()
    restarted_at = s.etcd.revision()
    a.start()  # a new process with a log of its own: all of it is after the restart
    a.wait_ready()
    s.apply("echo.yaml", virtual_service("echo", [route(name="default", upstream="ghost")],
                                         domains=["echo.test"]))
    view = wait_for(a.leader, lambda v: v["is_leader"] is True and v["term"] != old_term,
                    timeout=FAILOVER_TIMEOUT, what="the restarted a to lead under its own key")
    new_term = view["term"]
    (new_key,) = [kv for kv in s.election_kvs() if kv.text() == "a"]
    assert new_key.key != old_key and new_key.create_revision == new_term, (new_key, old_key)
    revoked = [line for line in a.log_lines_since(0)
               if "left by an earlier process" in line and old_key in line]
    assert revoked, "the restarted a did not revoke its earlier process's key"
    wait_for(s.statuses,
             lambda st: (st.get(key_of("VirtualService", "echo"), {}).get("state"),
                         st.get(key_of("VirtualService", "echo"), {}).get("term"))
             == ("Warning", new_term),
             timeout=CONVERGE_TIMEOUT, what="echo's Warning status under the new term")
    wrong = [(k, kv.mod_revision, kv.text()) for k, kv in s.status_kvs().items()
             if kv.mod_revision > restarted_at and kv.json().get("term") != new_term]
    assert not wrong, f"written after the restart under another term: {wrong!r}"
