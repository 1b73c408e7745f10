"""pytest entry for the chaos run (short profile) and for the checker itself.

    HOLDFAST_BUILD_DIR=build python3 -m pytest -q test/chaos

test_short_profile runs chaos.py (inside a private network namespace with
only loopback: chaos.py re-executes itself under `unshare --net
--map-root-user`) with about a dozen faults, then the checker on its
history, then the checker's self-test on that same history (every check,
fed a doctored copy, must fail). The checker tests below need no
deployment: they judge a small synthetic history.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import checker  # noqa: E402

SEED = int(os.environ.get("HOLDFAST_CHAOS_SEED", "7"))


def backend_of(gen: int) -> str:
    return "alpha" if (gen // 5) % 2 == 0 else "beta"


def replica_obs(t, r, pid, **fields):
    base = {"t": t, "kind": "obs", "replica": r, "up": True, "ready": True, "pid": pid,
            "is_leader": r == "a", "leader": "a", "term": 3, "serving": "live",
            "restore_error": ""}
    return dict(base, **fields)


def fleet_session(p, target, proto, connect, gens):
    """A proxy that connects, completes with gens[0], then holds the rest
    (one a second from connect + 1); every event names its target, as
    chaos-fleet's do."""
    ev = [{"t": connect, "kind": "fleet", "ev": "connect", "p": p, "target": target,
           "proto": proto},
          {"t": connect + 0.1, "kind": "fleet", "ev": "complete", "p": p, "target": target,
           "gen": gens[0]}]
    for i, g in enumerate(gens[1:]):
        ev.append({"t": connect + 1.1 + i, "kind": "fleet", "ev": "gen", "p": p, "gen": g,
                   "target": target})
    return ev


def real_client(t, node, front, start, stop, gen_at):
    """A real client started at `start` whose RPCs every 0.25 s reach the
    backend of the generation committed then; stopped at `stop` if given."""
    ev = [{"t": t + start, "kind": "real_start", "node": node, "front": front,
           "deadline": 1.0}]
    k = t + start + 0.3
    while k < t + (stop or 22.0):
        ev.append({"t": k, "since": k - 0.25, "kind": "real_rpc", "node": node,
                   "line": f"ok {backend_of(gen_at(k - t))}"})
        k += 0.25
    if stop:
        ev.append({"t": t + stop, "kind": "real_stopped", "node": node})
    return ev


def fault(t, fid, kind, target, start, end, committed, note=None):
    ev = [{"t": t + start, "kind": "fault_start", "id": fid, "fault": kind, "target": target,
           "duration": end - start},
          {"t": t + end, "kind": "fault_end", "id": fid, "fault": kind, "target": target,
           "committed": committed}]
    if note:
        ev.append(dict(note, t=t + start + 0.01, kind="fault_note", id=fid))
    return ev


def restart(t, r, pid, exec_at, started_at):
    return [{"t": t + exec_at - 0.9, "kind": "replica_killed", "replica": r},
            {"t": t + exec_at - 0.85, "kind": "obs", "replica": r, "up": False},
            {"t": t + started_at, "kind": "replica_start", "replica": r, "pid": pid,
             "exec": t + exec_at}]


def synthetic_history() -> list:
    """A small run that passes every check: three replicas, a leads; a store
    fault (every replica cut off from 2.0 s to 3.2 s: generation 3 is
    written meanwhile and reaches the proxies only at 3.3 s), a replica
    killed mid-write, one killed and restarted while cut off from 7 s to
    13 s (serving its persisted snapshot); proxies of both protocols; two
    real clients (one stopped by the runner); fencing data, the status
    keys last written at revision 6; clean stops."""
    t = 1000.0
    gen_at = lambda x: max(1, min(20, int(x)))  # noqa: E731 - gen g committed at t + g
    ev = [{"t": t, "kind": "run_start", "lease": 4.0, "retry": 1.0, "store_grace": 2.0,
           "profile": {}},
          {"t": t, "kind": "fleet_targets", "names": ["a", "b", "c"]}]
    for i, r in enumerate("abc"):
        ev += [{"t": t + 0.05, "kind": "replica_start", "replica": r, "pid": 11 + i,
                "exec": t},
               replica_obs(t + 0.1, r, 11 + i)]
    for g in range(1, 21):
        ev.append({"t": t + g, "start": t + g - 0.05, "kind": "write", "gen": g, "ok": True,
                   "backend": backend_of(g)})
    ev += [{"t": t + 1.1, "kind": "fleet_add", "n": 1, "target": -1, "proto": "sotw"},
           {"t": t + 1.1, "kind": "fleet_add", "n": 1, "target": -1, "proto": "delta"}]
    ev += fleet_session(0, 0, "sotw", t + 1.2, list(range(1, 21)))
    ev += fleet_session(1, 1, "delta", t + 1.2, list(range(1, 21)))
    ev += real_client(t, "cpp-1", 0, 1.5, None, gen_at)
    ev += real_client(t, "cpp-2", 1, 1.6, 6.0, gen_at)
    ev += fault(t, 1, "store-blackhole-all", "all", 2.0, 3.25, 2)
    ev += [{"t": t + 2.0, "kind": "store_cut", "id": 1, "replicas": ["a", "b", "c"]},
           {"t": t + 3.2, "kind": "store_uncut", "id": 1, "replicas": ["a", "b", "c"]}]
    # b killed while writing its snapshot, restarted.
    ev += fault(t, 2, "replica-kill", "b", 4.0, 5.6, 5,
                note={"during_snapshot_write": True, "file_after_kill": "whole"})
    ev += restart(t, "b", 22, 5.0, 5.2)
    ev.append(replica_obs(t + 5.5, "b", 22))
    # c killed and restarted while cut off: persisted 2.3 s after exec; a
    # proxy connects to it then; the store comes back at 13.
    ev += fault(t, 3, "replica-kill-cut-off", "c", 7.0, 13.5, 13)
    ev += [{"t": t + 7.0, "kind": "store_cut", "id": 3, "replicas": ["c"]},
           {"t": t + 13.0, "kind": "store_uncut", "id": 3, "replicas": ["c"]}]
    ev += restart(t, "c", 23, 8.0, 8.2)
    ev += [replica_obs(t + 8.4, "c", 23, ready=False, serving="nothing"),
           replica_obs(t + 10.3, "c", 23, serving="persisted"),
           {"t": t + 13.0, "kind": "store_back", "id": 3, "target": "c"},
           replica_obs(t + 13.3, "c", 23)]
    ev += fleet_session(2, 2, "sotw", t + 11.3, list(range(6, 21)))
    ev.append({"t": t + 20.5, "kind": "final_write", "gen": 20, "ok": True,
               "backend": backend_of(20)})
    for r in "abc":
        ev.append({"t": t + 21.0, "kind": "final_metrics", "replica": r, "damaged": 0.0})
    etcd = [("/election/1", "PUT", 2, 2, "b"), ("/election/2", "PUT", 3, 3, "a"),
            ("/election/1", "DELETE", 0, 4, ""),
            ("/status/Upstream/chaos/alpha", "PUT", 5, 5,
             json.dumps({"writer": "a", "term": 3})),
            ("/status/Upstream/chaos/beta", "PUT", 6, 6,
             json.dumps({"writer": "a", "term": 3}))]
    for key, typ, cr, mr, val in etcd:
        ev.append({"t": t + 22, "kind": "etcd_event", "key": key, "type": typ,
                   "create_revision": cr, "mod_revision": mr, "value": val})
    ev.append({"t": t + 22.1, "kind": "etcd_history", "events": len(etcd), "last_revision": 7,
               "current_revision": 7, "status_revision": 6})
    ev.append({"t": t + 23, "kind": "run_end"})
    ev += [{"t": t + 23.5, "kind": "replica_stop", "replica": r, "code": 0} for r in "abc"]
    return sorted(ev, key=lambda e: e["t"])


def test_checker_passes_a_good_history():
    results = checker.evaluate(synthetic_history())
    failed = [(n, d) for n, ok, d in results if not ok]
    assert not failed, failed


def test_every_check_fails_on_its_doctored_history():
    events = synthetic_history()
    doctored = checker._doctor(events)
    assert {n for n, _, _ in doctored} == {n for n, _ in checker.active_checks(events)}, \
        doctored
    assert {n for n, _ in checker.active_checks(events)} == {n for n, _ in checker.CHECKS}
    for name, what, evs in doctored:
        res = {n: (ok, d) for n, ok, d in checker.evaluate(evs)}
        assert not res[name][0], f"doctored {name} ({what}) still passes: {res[name][1]}"


def test_store_cuts_are_judged_in_etcd_runs():
    """An etcd run's cuts (store_cut/store_uncut, as the nemesis records
    them) are judged: a write withheld from a connected proxy, and a cut
    that withheld nothing fails."""
    events = synthetic_history()
    ok, detail = checker.check_store_cut_effective(events)
    assert ok and detail.startswith("2 cuts, 2 with a committed write withheld"), detail
    # The store-blackhole-all cut did nothing: generation 3 reaches a
    # proxy of a during it.
    leaky = sorted(events + [{"t": 1003.1, "kind": "fleet", "ev": "gen", "p": 0, "gen": 3,
                              "target": 0}], key=lambda e: e["t"])
    ok, detail = checker.check_store_cut_effective(leaky)
    assert not ok and "proxy 0 got gen 3" in detail, detail
    # No cut recorded (the nemesis forgot to say): nothing proven.
    ok, detail = checker.check_store_cut_effective(
        [e for e in events if not e["kind"].startswith("store_")])
    assert not ok and "no cut recorded" in detail, detail


def test_fencing_needs_the_whole_etcd_history():
    """Fencing fails when the recorded etcd history stops short of the
    status keys' last revision, or when that revision was not recorded."""
    events = synthetic_history()
    ok, detail = checker.check_fencing(events)
    assert ok and "history to revision 6, status keys last written at 6" in detail, detail
    truncated = [e for e in events if not (e["kind"] == "etcd_event" and e["mod_revision"] == 6)]
    ok, detail = checker.check_fencing(truncated)
    assert not ok and "truncated: history to revision 5, status keys last written at 6" \
        in detail, detail
    # Some later event recorded, yet not the status write at 6.
    gap = [dict(e, mod_revision=7, create_revision=7)
           if e["kind"] == "etcd_event" and e["mod_revision"] == 6 else e for e in events]
    ok, detail = checker.check_fencing(gap)
    assert not ok and "no status write at 6 recorded" in detail, detail
    unknown = [{k: v for k, v in e.items() if k != "status_revision"} for e in events]
    ok, detail = checker.check_fencing(unknown)
    assert not ok and "last revision unknown" in detail, detail
    failed = [{k: v for k, v in dict(e, status_error="EtcdError('timeout')").items()
               if k != "status_revision"} if e["kind"] == "etcd_history" else e
              for e in events]
    ok, detail = checker.check_fencing(failed)
    assert not ok and "timeout" in detail, detail


def test_every_doctored_case_applies_to_the_synthetic_history():
    """The doctored cases the self-test runs on a real history: none left
    out here (each needs something the synthetic history has)."""
    whats = [w for _, w, _ in checker._doctor(synthetic_history())]
    assert len(whats) >= 20, whats


def test_leader_wait_is_judged_until_the_next_fault():
    """No agreed leader after the heal: late, unless the next fault starts
    within the bound and so cuts the wait short (its own heal is judged)."""
    # Its first fault only, and the replicas' first processes.
    events = [e for e in synthetic_history()
              if not (e["kind"].startswith("fault_") and e["id"] != 1)
              and not (e["kind"] == "obs" and e.get("pid") not in (11, 12, 13))]
    heal = next(e for e in events if e["kind"] == "fault_end")["t"]
    split = [dict(e, is_leader=e["replica"] != "c") if e["kind"] == "obs" and e["t"] >= heal
             else e for e in events]
    split.append({"t": heal, "kind": "obs", "replica": "b", "up": True, "ready": True,
                  "is_leader": True, "leader": "b", "term": 4})

    def judge(next_fault_after):
        evs = split + [{"t": heal + next_fault_after, "kind": "fault_start", "id": 2,
                        "fault": "replica-kill", "target": "c", "duration": 1.0}]
        evs.sort(key=lambda e: e["t"])
        return checker.check_leader_after_store(evs)

    ok, detail = judge(0.5)
    assert ok and "1 cut short" in detail, detail
    ok, detail = judge(30.0)
    assert not ok, detail


def test_short_profile(tmp_path):
    build = Path(os.environ.get("HOLDFAST_BUILD_DIR", HERE.parent.parent / "build"))
    if not (build / "src/app/holdfast").exists():
        pytest.fail(f"no holdfast binary under {build} (set HOLDFAST_BUILD_DIR)",
                    pytrace=False)
    out = tmp_path / "chaos"
    env = dict(os.environ, HOLDFAST_BUILD_DIR=str(build))
    run = subprocess.run([sys.executable, str(HERE / "chaos.py"), "--profile", "short",
                          "--seed", str(SEED), "--out", str(out)],
                         capture_output=True, text=True, timeout=900, env=env)
    history = out / "history.jsonl"
    assert history.exists(), f"no history:\n{run.stdout}\n{run.stderr[-3000:]}"
    check = subprocess.run([sys.executable, str(HERE / "checker.py"), str(history)],
                           capture_output=True, text=True, timeout=120)
    selftest = subprocess.run([sys.executable, str(HERE / "checker.py"), str(history),
                               "--self-test"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"chaos.py exited {run.returncode}:\n{run.stderr[-3000:]}"
    assert check.returncode == 0, f"checks failed (history {history}):\n{check.stdout}"
    assert selftest.returncode == 0, f"checker self-test:\n{selftest.stdout}"
