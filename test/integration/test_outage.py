"""holdfast through store outages (../shared/seed: a control plane that
crashed when its store went away, so proxies scaling out during the outage got
no configuration).

Replicas reach etcd through a FaultProxy each. `blackhole` drops everything
without a reset (connections hang, like iptables DROP); `reject` refuses and
resets. A replica keeps serving the last config it had while the store is
gone, keeps running, stays ready, and says so on /debug/store and /readyz. A
replica started while the store is unreachable serves its last-known-good
snapshot from --state-dir after --store-grace; a damaged snapshot file is
never served. Every check polls with a deadline; the only fixed durations
are outages held open on purpose.
"""

import random
import re
import subprocess
import time
from pathlib import Path

import pytest

from hf_gateway import upstream
from hf_replica import (CONVERGE_TIMEOUT, FAILOVER_TIMEOUT, GRACE, GRACE_FLAGS, LEASE_DURATION,
                        NS, READY_LIVE, READY_PERSISTED, RENEW_DEADLINE, RETRY_PERIOD, Replica,
                        all_ready, all_running, assert_ready, echo_to, hold, live_version,
                        new_client, readyz, serving, store_doc, the_leader, upstreams,
                        wait_snapshot_written)
from hf_snapshot_file import HEADER_SIZE, DamagedFile, check_snapshot_file
from hf_wait import wait_for
from hf_world import START_TIMEOUT, XdsClient

# Longer than the lease: every election key bound to a lease the replicas
# could not renew is gone from etcd before the store comes back.
OUTAGE = LEASE_DURATION + 4.0
UNUSED_PORT = 18083
# After the store is back: reconnect, then one leader (a lease, a retry,
# slack for two loaded cores; FAILOVER_TIMEOUT is lease + retry + 25 s).
RECOVER_TIMEOUT = FAILOVER_TIMEOUT
# How long "not ready" must hold to count: past the grace, with margin.
NOT_READY_HOLD = GRACE + 3.0
# holdfast's test hook (src/snapshot/snapshot_file.cc): set, a snapshot write
# that finds FILE.pause stops halfway, with FILE.paused, for a kill to land.
PAUSE_HOOK_ENV = "HOLDFAST_TEST_PAUSE_SNAPSHOT_WRITE"


# --- fixtures ----------------------------------------------------------------
# (store, a fresh prefix on one etcd member, is in conftest.py)

@pytest.fixture(scope="module", autouse=True)
def outage_support(binaries):
    """Fails at once when this holdfast has no last-known-good snapshot."""
    r = subprocess.run([str(binaries.holdfast), "serve", "--help"], capture_output=True,
                       text=True, timeout=30)
    for flag in ("--etcd-endpoints", "--state-dir", "--store-grace"):
        if flag not in r.stdout + r.stderr:
            pytest.fail(f"{binaries.holdfast} serve --help does not mention {flag}",
                        pytrace=False)


# --- helpers -----------------------------------------------------------------

def routed_backend(resources: list) -> str:
    """The one echo backend the snapshot's route configurations name."""
    routes = b"".join(body for type_url, _, body in resources
                      if type_url.endswith("RouteConfiguration")
                      or type_url.endswith("Listener"))
    named = [b for b in ("alpha", "beta") if f"{NS}/{b}".encode() in routes]
    assert len(named) == 1, f"routes in the snapshot file name {named}"
    return named[0]


def no_ok_lines(c: XdsClient) -> list:
    return [line for line in c.lines() if line.startswith("ok ")]


# --- 1. the seed incident ---------------------------------------------------------

def test_seed_incident_store_blackholed_repeatedly(store, backends, procs, binaries, tmp_path):
    """Two replicas with leader election, each reaching etcd through its own
    FaultProxy. Three times the store goes silent (blackhole, longer than the
    lease): both replicas keep running and ready, say the store is
    unreachable, stop leading, and a proxy scaling out during the outage (a
    new real xDS client, on a and b in turn) gets the last config applied
    before the outage and reaches the right backend; the clients already
    connected keep working. After each outage both reconnect and exactly one
    leads again. Finally a change made with `holdfast apply` reaches every
    client."""
    s = store
    alpha, beta = backends
    proxy_a, proxy_b = s.etcd.proxy(), s.etcd.proxy()
    s.apply("upstreams.yaml", *upstreams(alpha.port, beta.port))
    s.apply("echo.yaml", echo_to("alpha"))
    a = s.replica("a", endpoints=proxy_a.endpoint)
    b = s.replica("b", endpoints=proxy_b.endpoint)
    reps = [a, b]
    pids = {r.name: r.proc.pid for r in reps}
    for r in reps:
        r.wait_ready()
    the_leader(reps)
    clients = [(a, new_client(procs, binaries, tmp_path, a))]
    serving(a, clients[0][1], "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT,
            guard=all_running(reps))

    current = "alpha"
    late_detection: list[str] = []
    for round_no, (target, on) in enumerate((("beta", a), ("alpha", b), ("beta", a))):
        # A change before the outage: the new client must get this one,
        # not whatever the replicas started with.
        marks = [c.mark() for _, c in clients]
        s.apply("echo.yaml", echo_to(target))
        for (rep, c), mark in zip(clients, marks):
            serving(rep, c, target, since=mark, guard=all_running(reps))
        current = target
        for r in reps:
            wait_for(lambda r=r: store_doc(r), lambda d: d["connected"] is True,
                     timeout=CONVERGE_TIMEOUT, what=f"{r.name} connected before round {round_no}")

        proxy_a.set_mode("blackhole")
        proxy_b.set_mode("blackhole")
        cut_at = time.monotonic()
        during = [c.mark() for _, c in clients]
        guard = all_ready(reps)
        try:
            # The proxy scaling out during the outage, at once.
            fresh = new_client(procs, binaries, tmp_path, on)
            serving(on, fresh, target, timeout=CONVERGE_TIMEOUT, guard=guard)
            # Cut off, nobody may go on leading (renew deadline, own clock).
            wait_for(lambda: (guard(), [r.leader()["is_leader"] for r in reps])[1],
                     lambda v: v == [False, False],
                     timeout=RENEW_DEADLINE + CONVERGE_TIMEOUT,
                     what=f"both replicas to stop leading (round {round_no})")
            hold(cut_at, OUTAGE, guard)
            # Past the lease, the store has been unreachable long enough
            # that the replicas must say so. Noted, not failed at once, so
            # the rest of the rounds still run (the outage is held open
            # until they do notice).
            seen = {r.name: store_doc(r) for r in reps}
            late = {n: d for n, d in seen.items() if d["connected"] is not False}
            if late:
                late_detection.append(
                    f"round {round_no}: after {time.monotonic() - cut_at:.1f}s of blackhole "
                    f"(lease {LEASE_DURATION:g}s) /debug/store still says "
                    + "; ".join(f"{n}: {d!r}" for n, d in late.items()))
            for r in reps:
                down = wait_for(lambda r=r: (guard(), store_doc(r))[1],
                                lambda d: d["connected"] is False,
                                timeout=CONVERGE_TIMEOUT,
                                what=f"{r.name} to notice the silent store (round {round_no})")
                assert down["last_error"], down
                assert down["unreachable_seconds"] > 0, down
                assert down["serving"] == "live", down
                body = assert_ready(r)
                assert "store unreachable" in body, (r.name, body)
                assert r.metric("holdfast_store_connected") == 0
                assert r.metric("holdfast_serving_persisted_snapshot") == 0
            for (rep, c), mark in zip(clients, during):
                lines = c.lines(mark)
                assert lines and set(lines) == {f"ok {target}"}, (
                    f"client {c.node_id} of {rep.name} during outage {round_no}: {lines!r}")
            lines = fresh.lines()
            assert lines and set(lines[-5:]) == {f"ok {target}"}, lines
        finally:
            proxy_a.set_mode("pass")
            proxy_b.set_mode("pass")
        clients.append((on, fresh))

        for r in reps:
            wait_for(lambda r=r: store_doc(r), lambda d: d["connected"] is True,
                     timeout=RECOVER_TIMEOUT,
                     what=f"{r.name} to reconnect after outage {round_no}")
        the_leader(reps, timeout=RECOVER_TIMEOUT)
        for r in reps:
            assert r.proc.pid == pids[r.name] and r.running(), r

    final = "alpha" if current == "beta" else "beta"
    marks = [c.mark() for _, c in clients]
    s.apply("echo.yaml", echo_to(final))
    for (rep, c), mark in zip(clients, marks):
        serving(rep, c, final, since=mark, guard=all_ready(reps))
    the_leader(reps)
    for r in reps:
        assert r.proc.pid == pids[r.name] and r.running(), r
    assert not late_detection, ("the replicas did not report the silent store during the "
                                "outage:\n" + "\n".join(late_detection))


# --- 2. restarted during an outage ------------------------------------------------

def test_replica_restarted_during_outage_serves_last_known_good(store, backends, procs,
                                                                binaries, tmp_path):
    """A synced replica's store goes silent and the replica is SIGKILLed.
    Restarted with the same --state-dir while the store is still
    unreachable, it serves its persisted snapshot after --store-grace
    (/readyz and /debug/store say so) and a new client gets complete config
    through it. When the store is back it serves live config again,
    including a change made meanwhile."""
    s = store
    alpha, beta = backends
    proxy = s.etcd.proxy()
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), echo_to("alpha"))
    rep = s.replica("solo", endpoints=proxy.endpoint, extra=GRACE_FLAGS)
    rep.wait_ready()
    first = new_client(procs, binaries, tmp_path, rep)
    serving(rep, first, "alpha", timeout=START_TIMEOUT + CONVERGE_TIMEOUT)
    doc = wait_for(lambda: store_doc(rep), lambda d: d["connected"] is True
                   and d["serving"] == "live" and d["synced"] is True,
                   timeout=CONVERGE_TIMEOUT, what="solo synced and serving live config")
    version = live_version(rep)
    wait_snapshot_written(rep)
    assert rep.metric("holdfast_serving_persisted_snapshot") == 0, doc

    proxy.set_mode("blackhole")
    rep.kill()
    first.proc.kill()
    rep.start()
    body = wait_for(lambda: readyz(rep), lambda r: r[0] == 200,
                    timeout=START_TIMEOUT + GRACE,
                    what="the restarted replica to serve its persisted snapshot")[1]
    m = READY_PERSISTED.match(body)
    assert m, f"/readyz does not say it serves the persisted snapshot: {body!r}"
    assert m.group(1) == version, (f"serves persisted {m.group(1)}, the last live snapshot "
                                   f"was {version}: {body!r}")
    doc = store_doc(rep)
    assert doc["serving"] == "persisted", doc
    assert doc["persisted_version"] == version, doc
    assert doc["connected"] is False, doc
    assert doc["restore_error"] in ("", None), doc
    assert rep.metric("holdfast_serving_persisted_snapshot") == 1
    assert rep.metric("holdfast_store_connected") == 0
    # Unreachable: said in readiness, once the replica has noticed.
    wait_for(lambda: readyz(rep), lambda r: r[0] == 200 and "store unreachable" in r[1],
             timeout=CONVERGE_TIMEOUT, what="/readyz to say the store is unreachable")

    scaled = new_client(procs, binaries, tmp_path, rep)
    serving(rep, scaled, "alpha", timeout=CONVERGE_TIMEOUT, guard=lambda: assert_ready(rep))
    # Meanwhile, directly in etcd (not through the proxy): move echo to beta.
    s.apply("echo.yaml", echo_to("beta"))
    assert store_doc(rep)["serving"] == "persisted"

    mark = scaled.mark()
    proxy.set_mode("pass")
    doc = wait_for(lambda: (assert_ready(rep), store_doc(rep))[1],
                   lambda d: d["serving"] == "live" and d["connected"] is True,
                   timeout=CONVERGE_TIMEOUT, what="solo to serve live config again")
    serving(rep, scaled, "beta", since=mark, guard=lambda: assert_ready(rep))
    assert rep.metric("holdfast_serving_persisted_snapshot") == 0
    assert rep.metric("holdfast_store_connected") == 1
    body = assert_ready(rep)
    assert READY_LIVE.match(body) and "persisted" not in body, body
    assert live_version(rep) != version, body


# --- 3. a damaged snapshot file ---------------------------------------------------

def _flip(data: bytes) -> bytes:
    out = bytearray(data)
    middle = HEADER_SIZE + (len(data) - HEADER_SIZE) // 2
    for i in (middle, middle + 1, len(data) - 1):
        out[i] ^= 0x5A
    return bytes(out)


def _truncate(data: bytes) -> bytes:
    return data[:HEADER_SIZE + (len(data) - HEADER_SIZE) // 2]


def test_damaged_snapshot_file_is_not_served(store, backends, procs, binaries, tmp_path):
    """The stopped replica's snapshot file is damaged (bytes flipped; then,
    on a second start, cut short). Started while the store refuses
    connections, it must not become ready, /debug/store says why, and a
    client gets nothing from it. Once the store answers it serves live."""
    s = store
    alpha, beta = backends
    proxy = s.etcd.proxy()
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), echo_to("alpha"))
    rep = s.replica("solo", endpoints=proxy.endpoint, extra=GRACE_FLAGS)
    rep.wait_ready()
    wait_for(lambda: store_doc(rep), lambda d: d["serving"] == "live" and d["synced"] is True,
             timeout=CONVERGE_TIMEOUT, what="solo serving live config")
    good = wait_snapshot_written(rep)
    rep.proc.stop()
    proxy.set_mode("reject")

    for how, damage in (("flipped", _flip), ("truncated", _truncate)):
        damaged = damage(good)
        with pytest.raises(DamagedFile):
            check_snapshot_file(damaged)
        rep.snapshot_file.write_bytes(damaged)
        rep.start()
        c = new_client(procs, binaries, tmp_path, rep)
        started = time.monotonic()
        doc = wait_for(lambda: store_doc(rep), lambda d: d["restore_error"],
                       timeout=START_TIMEOUT, what=f"restore_error for the {how} file")
        assert "damaged" in doc["restore_error"], doc
        assert doc["serving"] == "nothing", doc
        assert doc["persisted_version"] in ("", None), doc

        def not_ready():
            status, body = readyz(rep)
            assert status == 503, f"{how} file: /readyz {status} {body!r}"
            assert re.search(r"damaged|no (complete )?snapshot", body), body
            assert store_doc(rep)["serving"] == "nothing"
            assert not no_ok_lines(c), (how, c.lines()[-5:])
            return body

        # Past the grace: the damaged file would have been restored by now.
        hold(started, NOT_READY_HOLD, not_ready)
        assert rep.metric("holdfast_serving_persisted_snapshot") == 0
        # The client did ask (it is connected, its RPCs fail) and got nothing.
        proxy_entry = wait_for(lambda: (not_ready(), rep.admin.proxy(c.node_id))[1],
                               lambda e: e is not None, timeout=CONVERGE_TIMEOUT,
                               what=f"{c.node_id} connected to solo")
        sent = {t: st.get("last_sent_version")
                for t, st in (proxy_entry.get("types") or {}).items()
                if st.get("last_sent_version")}
        assert not sent, f"sent to {c.node_id} with a {how} snapshot file: {sent!r}"
        assert any(line.startswith("error") for line in c.lines()), c.lines()[-5:]
        rep.proc.stop()
        c.proc.kill()

    # Still damaged (or moved aside): now the store answers.
    rep.snapshot_file.write_bytes(_flip(good))
    rep.start()
    c = new_client(procs, binaries, tmp_path, rep)
    hold(time.monotonic(), 1.0, lambda: assert_no_ok_and_not_ready(rep, c))
    proxy.set_mode("pass")
    rep.wait_ready(timeout=CONVERGE_TIMEOUT)
    doc = wait_for(lambda: store_doc(rep), lambda d: d["serving"] == "live",
                   timeout=CONVERGE_TIMEOUT, what="solo to serve live config")
    assert doc["connected"] is True, doc
    serving(rep, c, "alpha", timeout=CONVERGE_TIMEOUT, guard=lambda: assert_ready(rep))
    # And it has written a good file again.
    check_snapshot_file(wait_snapshot_written(rep))


def assert_no_ok_and_not_ready(rep: Replica, c: XdsClient) -> None:
    status, body = readyz(rep)
    assert status == 503, body
    assert not no_ok_lines(c), c.lines()[-5:]


# --- 4. killed while writing its snapshot -----------------------------------------

def test_killed_while_persisting_never_leaves_a_damaged_snapshot(store, backends, procs,
                                                                 binaries, tmp_path,
                                                                 monkeypatch):
    """A replica is SIGKILLed right after config changes, again and again,
    at moments that fall inside its snapshot writes; after every kill the
    snapshot file is absent or whole (checksum good). Then, deterministically,
    with holdfast's test hook stopping a write halfway: killed there, the
    file it had written before is left as it was. Restarted with the store
    silent, it serves that snapshot (a client reaches the backend its routes
    name); then live config."""
    s = store
    alpha, beta = backends
    proxy = s.etcd.proxy()
    monkeypatch.setenv(PAUSE_HOOK_ENV, "1")
    # Extra objects route to gamma (no client calls it): only echo's route
    # names alpha or beta.
    s.apply("objects.yaml", *upstreams(alpha.port, beta.port), upstream("gamma", UNUSED_PORT),
            echo_to("alpha"))
    rep = s.replica("solo", endpoints=proxy.endpoint, extra=GRACE_FLAGS)
    rng = random.Random(1234)
    target = "alpha"
    checked = 0
    for i in range(8):
        rep.wait_ready()
        target = "beta" if target == "alpha" else "alpha"
        # A bigger change now and then: more to write.
        extra = [echo_to("gamma", name=f"extra{j}-{i}", domains=[f"extra{j}-{i}.test"])
                 for j in range(rng.randrange(0, 30))]
        s.apply("echo.yaml", echo_to(target), *extra)
        time.sleep(rng.uniform(0.0, 0.08))  # jitter: where in the write the kill lands
        rep.kill()
        path = rep.snapshot_file
        if path.exists():
            try:
                check_snapshot_file(path.read_bytes())
            except DamagedFile as e:
                raise AssertionError(f"after kill {i}, {path} is damaged: {e}")
            checked += 1
        rep.start()
    # The random kills prove something only where a file was there to check
    # (the first may land before any write); kill_mid_write below is the
    # deterministic case.
    assert checked >= 4, f"only {checked} of 8 random kills left a file to check"

    rep.wait_ready()
    data = wait_snapshot_written(rep)  # a snapshot of `target` is on disk
    assert routed_backend(check_snapshot_file(data)) == target
    newer = "beta" if target == "alpha" else "alpha"
    kill_mid_write(rep, lambda: s.apply("echo.yaml", echo_to(newer)))
    assert rep.snapshot_file.read_bytes() == data, "the kill mid-write changed the file"
    proxy.set_mode("blackhole")
    rep.start()
    c = new_client(procs, binaries, tmp_path, rep)
    body = wait_for(lambda: readyz(rep), lambda r: r[0] == 200, timeout=START_TIMEOUT + GRACE,
                    what="the replica to serve its persisted snapshot")[1]
    assert READY_PERSISTED.match(body), body
    assert store_doc(rep)["serving"] == "persisted"
    serving(rep, c, target, timeout=CONVERGE_TIMEOUT, guard=lambda: assert_ready(rep))
    mark = c.mark()
    proxy.set_mode("pass")
    wait_for(lambda: store_doc(rep), lambda d: d["serving"] == "live" and d["connected"],
             timeout=CONVERGE_TIMEOUT, what="live config after the store is back")
    serving(rep, c, newer, since=mark, timeout=CONVERGE_TIMEOUT,
            guard=lambda: assert_ready(rep))


def kill_mid_write(rep: Replica, change) -> None:
    """Asks the replica's snapshot writer to stop halfway through its next
    write (the test hook), makes `change`, and SIGKILLs the replica once the
    write has stopped; fails unless the kill landed mid-write."""
    asked = Path(f"{rep.snapshot_file}.pause")
    paused = Path(f"{rep.snapshot_file}.paused")
    asked.touch()
    change()
    wait_for(paused.exists, bool, timeout=CONVERGE_TIMEOUT,
             what=f"{rep.name}'s snapshot write to stop halfway ({paused})")
    rep.kill()
    assert paused.exists(), "the write went on before the kill"
    paused.unlink()
