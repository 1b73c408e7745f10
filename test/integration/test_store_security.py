"""holdfast when etcd stops accepting it at runtime: credentials refused
(the user's password changed, or its role's permission revoked) and TLS that
no longer verifies (the member comes back with a certificate from another
CA). docs/operations.md: no such failure makes a replica exit; each is
logged once when it starts (and once when it ends), exported as a metric,
reported on /debug/store and /readyz, and retried until it heals. Proxies
keep the last good config meanwhile, and a change made after the store
accepts the replica again reaches them, with a leader writing its status.

Every test runs real etcd (auth enabled: a root user for the harness, a
`holdfast` user whose role may read and write the test's prefix) and two
replicas with the short election timings of hf_replica. Faults are held
open for longer than the lease on purpose; everything else waits for a
condition.
"""

import re
import time
from collections import Counter

import pytest

from hf_gateway import route, virtual_service
from hf_replica import (CONVERGE_TIMEOUT, GRACE, GRACE_FLAGS, LEASE_DURATION, READY_LIVE,
                        READY_PERSISTED, RETRY_PERIOD, Replica, Store, all_ready, assert_ready,
                        echo_to, hold, key_of, live_version, new_client, readyz, serving,
                        store_doc, the_leader, upstreams, wait_snapshot_written,
                        wait_status_by_current_leader, wait_store_statuses, written_by)
from hf_tls import TestCa
from hf_wait import wait_for
from hf_world import START_TIMEOUT, assert_no_nack

ROOT_PASSWORD = "root-secret"
USER = "holdfast"
PASSWORD = "holdfast-secret"
# A fault is held this long after every replica reported it: past the lease,
# so any election key bound to a lease a replica could not renew would be
# gone, and past several retries of every loop.
HOLD = LEASE_DURATION + 2 * RETRY_PERIOD
# What a refusal says, by how it was made (etcd 3.4's words).
REFUSALS = {"password": "authentication failed", "role": "permission denied"}
# What gRPC says when etcd's certificate does not verify.
TLS_ERROR = re.compile(r"(?i)handshake|certificate|ssl|tls")
STATE_CHANGE_REFUSED = "the store refuses user"
STATE_CHANGE_ACCEPTED = "the store accepts user"
STATE_CHANGE_UNREACHABLE = "store unreachable"
STATE_CHANGE_CONNECTED = "etcd: connected to"
ACCEPTED = {key_of("Upstream", "alpha"): "Accepted", key_of("Upstream", "beta"): "Accepted",
            key_of("VirtualService", "echo"): "Accepted"}


# --- fixtures and helpers ----------------------------------------------------

@pytest.fixture
def tls_store(procs, etcd_support, etcd_tls, tmp_path):
    """A fresh prefix on one etcd member that serves TLS; replicas and the
    CLI trust its CA."""
    s = Store(procs, etcd_support.holdfast, etcd_tls, tmp_path / "store")
    yield s
    s.close()


def log_in_as_holdfast(s: Store) -> None:
    """Turns etcd's authentication on; replicas and the CLI log in as a user
    allowed to read and write the test's prefix (and nothing else)."""
    s.etcd.enable_auth(ROOT_PASSWORD)
    s.etcd.add_user(USER, PASSWORD, s.prefix)
    s.log_in(USER, PASSWORD)


def access_error(r: Replica) -> str:
    doc = store_doc(r)
    assert "access_error" in doc, f"{r.name} /debug/store lacks 'access_error': {doc!r}"
    return doc["access_error"]


def serving_version(r: Replica) -> str:
    """The snapshot version /readyz names (live or persisted)."""
    body = assert_ready(r)
    m = READY_LIVE.match(body) or READY_PERSISTED.match(body)
    assert m, f"{r.name} /readyz names no snapshot: {body!r}"
    return m.group(1)


def assert_said_once(r: Replica, mark: int, phrase: str) -> list:
    """Since `mark`, the replica's log has `phrase` on exactly one line (a
    state change); returns every line since `mark`."""
    lines = r.log_lines_since(mark)
    said = [line for line in lines if phrase in line]
    assert len(said) == 1, (f"{r.name} logged {phrase!r} {len(said)} times, not once:\n"
                            + "\n".join(lines[-40:]))
    return lines


def _shape(line: str) -> str:
    """A log line without its time and level, digits blurred: two lines of
    one shape are the same message logged twice."""
    return re.sub(r"\d+", "#", re.sub(r"^\S+ +(?:DEBUG|INFO|WARN|ERROR) +", "", line))


def assert_logged_once(r: Replica, mark: int, phrase: str, error: re.Pattern,
                       elapsed: float) -> list:
    """Since `mark` (`elapsed` seconds of a fault): `phrase` (the state
    change) on exactly one line, no message logged twice (nothing is logged
    per retry, by holdfast or by gRPC), and no more lines naming `error`
    than one per retry period (a generous bound)."""
    lines = assert_said_once(r, mark, phrase)
    shapes = Counter(_shape(line) for line in lines)
    repeated = [line for line in lines if shapes[_shape(line)] > 1]
    assert not repeated, (f"{r.name} logged the same message {len(repeated)} times in "
                          f"{elapsed:.1f}s:\n" + "\n".join(repeated[:20]))
    naming = [line for line in lines if error.search(line)]
    assert naming and len(naming) <= elapsed / RETRY_PERIOD, (
        f"{r.name} logged {len(naming)} lines naming {error.pattern!r} in {elapsed:.1f}s "
        f"(retry period {RETRY_PERIOD:g}s):\n" + "\n".join(lines[-40:]))
    return lines


def ghostly() -> dict:
    """A VirtualService routing to an Upstream that does not exist: Warning."""
    return virtual_service("ghostly", [route(name="to-ghost", upstream="ghost")],
                           domains=["ghost.test"])


# --- 1. credentials refused at runtime ---------------------------------------

@pytest.mark.parametrize("revoke", sorted(REFUSALS))
def test_refused_credentials_at_runtime(store, backends, procs, binaries, tmp_path, revoke):
    """Two replicas log in as `holdfast` and serve a client each. Then, with
    etcdctl as root, the user's password is changed (its token goes with
    it) or its role loses the prefix. For longer than the lease both
    replicas run, stay ready on the snapshot they had, keep their clients
    (and a new one) on it, and report the refusal on /debug/store, /readyz
    and holdfast_store_access_denied, logging it once. Restored, both say
    so once, a change reaches both clients and the leader writes its
    status."""
    s = store
    alpha, beta = backends
    log_in_as_holdfast(s)
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), echo_to("alpha"))
    reps = [s.replica("a"), s.replica("b")]
    for r in reps:
        r.wait_ready()
    clients = {r.name: new_client(procs, binaries, tmp_path, r) for r in reps}
    for r in reps:
        serving(r, clients[r.name], "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    leader, term = the_leader(reps)
    wait_store_statuses(s, ACCEPTED,
                        what=f"statuses written by {leader.name}",
                        extra=lambda st: written_by(st, leader.name, term))
    versions = {r.name: live_version(r) for r in reps}
    for r in reps:
        assert access_error(r) == "", store_doc(r)
        assert r.metric("holdfast_store_access_denied") == 0

    refusal = REFUSALS[revoke]
    logs = {r.name: r.log_size() for r in reps}
    cuts = {name: c.mark() for name, c in clients.items()}
    revoked_at = time.monotonic()
    if revoke == "password":
        s.etcd.set_password(USER, "changed-" + PASSWORD)
    else:
        s.etcd.revoke_prefix(USER, s.prefix)

    for r in reps:
        wait_for(lambda: access_error(r), lambda e: refusal in e, timeout=CONVERGE_TIMEOUT,
                 what=f"{r.name} to report {refusal!r} on /debug/store")
        assert r.metric("holdfast_store_access_denied") == 1
        assert "store refuses access: " in assert_ready(r), readyz(r)
    reported_at = time.monotonic()

    def steady():
        for r in reps:
            assert serving_version(r) == versions[r.name], readyz(r)
            assert refusal in access_error(r), store_doc(r)
            assert_no_nack(r.admin, clients[r.name].node_id)

    # A proxy that connects now gets the same snapshot.
    late = new_client(procs, binaries, tmp_path, reps[1])
    serving(reps[1], late, "alpha", guard=steady)
    hold(reported_at, HOLD, steady)
    elapsed = time.monotonic() - revoked_at
    for name, c in clients.items():
        during = c.lines(cuts[name])
        assert during and set(during) == {"ok alpha"}, (name, during[-20:])
    for r in reps:
        assert_logged_once(r, logs[r.name], STATE_CHANGE_REFUSED, re.compile(refusal), elapsed)

    logs = {r.name: r.log_size() for r in reps}
    if revoke == "password":
        s.etcd.set_password(USER, PASSWORD)
    else:
        s.etcd.grant_prefix(USER, s.prefix)
    for r in reps:
        wait_for(lambda: store_doc(r), lambda d: d.get("access_error") == ""
                 and d["connected"] is True, timeout=CONVERGE_TIMEOUT,
                 what=f"{r.name} to be accepted again")
        assert r.metric("holdfast_store_access_denied") == 0
        assert "refuses" not in assert_ready(r)

    marks = {name: c.mark() for name, c in clients.items()}
    s.apply("changes.yaml", echo_to("beta"), ghostly())
    for r in reps:
        serving(r, clients[r.name], "beta", since=marks[r.name], guard=all_ready(reps))
    wait_status_by_current_leader(s, reps, key_of("VirtualService", "ghostly"), "Warning")
    for r in reps:
        r.assert_running()
        assert_said_once(r, logs[r.name], STATE_CHANGE_ACCEPTED)


# --- 2. TLS that no longer verifies -------------------------------------------

def test_untrusted_certificate_at_runtime(tls_store, backends, procs, binaries, tmp_path):
    """etcd serves TLS (and auth, as deployed); replicas trust its CA and log
    in. The member is restarted, same data and port, with a certificate from
    another CA. Both replicas run, stay ready on their last snapshot (a
    client on a keeps working), report the TLS failure on /debug/store and
    /readyz and log the outage once. Replica b, restarted meanwhile (its
    token gone, every handshake failing), serves its persisted snapshot
    after --store-grace to a new client. Back on the right certificate,
    both serve live config again, a change reaches both clients and the
    leader writes its status."""
    s = tls_store
    alpha, beta = backends
    log_in_as_holdfast(s)
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), echo_to("alpha"))
    a = s.replica("a")
    b = s.replica("b", extra=GRACE_FLAGS)
    reps = [a, b]
    for r in reps:
        r.wait_ready()
    on_a = new_client(procs, binaries, tmp_path, a)
    serving(a, on_a, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    leader, term = the_leader(reps)
    wait_store_statuses(s, ACCEPTED,
                        what=f"statuses written by {leader.name}",
                        extra=lambda st: written_by(st, leader.name, term))
    versions = {r.name: live_version(r) for r in reps}
    wait_snapshot_written(b)

    member = s.etcd.members[0]
    impostor = TestCa(tmp_path / "impostor-ca", "impostor-ca").issue("etcd")
    logs = {r.name: r.log_size() for r in reps}
    cut = on_a.mark()
    broken_at = time.monotonic()
    member.restart(tls=impostor)
    s.etcd.wait_healthy()  # as a client trusting the impostor's CA sees it

    for r in reps:
        doc = wait_for(lambda: store_doc(r), lambda d: d["connected"] is False
                       and TLS_ERROR.search(d["last_error"] or ""), timeout=CONVERGE_TIMEOUT,
                       what=f"{r.name} to report the TLS failure on /debug/store")
        assert doc["unreachable_seconds"] > 0, doc
        assert r.metric("holdfast_store_connected") == 0
        wait_for(lambda: readyz(r), lambda z: z[0] == 200 and TLS_ERROR.search(z[1])
                 and "store unreachable" in z[1], timeout=CONVERGE_TIMEOUT,
                 what=f"{r.name} /readyz to stay ready and name the TLS failure")
    reported_at = time.monotonic()

    def steady():
        for r in reps:
            assert serving_version(r) == versions[r.name], readyz(r)
            doc = store_doc(r)
            assert doc["connected"] is False and TLS_ERROR.search(doc["last_error"]), doc
        assert_no_nack(a.admin, on_a.node_id)

    hold(reported_at, HOLD, steady)
    elapsed = time.monotonic() - broken_at
    during = on_a.lines(cut)
    assert during and set(during) == {"ok alpha"}, during[-20:]
    for r in reps:
        assert_logged_once(r, logs[r.name], STATE_CHANGE_UNREACHABLE, TLS_ERROR, elapsed)

    # Restarted while no handshake succeeds: no token, no store, no crash.
    b.kill()
    b.start()
    body = wait_for(lambda: readyz(b), lambda z: z[0] == 200, timeout=START_TIMEOUT + GRACE,
                    what="the restarted b to serve its persisted snapshot")[1]
    m = READY_PERSISTED.match(body)
    assert m and m.group(1) == versions["b"], (versions["b"], body)
    doc = wait_for(lambda: store_doc(b), lambda d: TLS_ERROR.search(d["last_error"] or ""),
                   timeout=CONVERGE_TIMEOUT, what="the restarted b to report the TLS failure")
    assert doc["connected"] is False and doc["serving"] == "persisted", doc
    on_b = new_client(procs, binaries, tmp_path, b)
    serving(b, on_b, "alpha", guard=all_ready(reps))

    member.restart(tls=s.etcd.tls)
    s.etcd.wait_healthy()
    for r in reps:
        wait_for(lambda: store_doc(r), lambda d: d["connected"] is True and d["last_error"] == ""
                 and d["serving"] == "live", timeout=CONVERGE_TIMEOUT,
                 what=f"{r.name} to serve live config again")
        assert r.metric("holdfast_store_connected") == 1
        assert "unreachable" not in assert_ready(r)
    marks = {"a": on_a.mark(), "b": on_b.mark()}
    s.apply("changes.yaml", echo_to("beta"), ghostly())
    for r, c in ((a, on_a), (b, on_b)):
        serving(r, c, "beta", since=marks[r.name], guard=all_ready(reps))
    wait_status_by_current_leader(s, reps, key_of("VirtualService", "ghostly"), "Warning")
    assert_said_once(a, logs["a"], STATE_CHANGE_CONNECTED)
