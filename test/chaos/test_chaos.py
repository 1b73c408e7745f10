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


def synthetic_history() -> list:
    """A small run that passes every check: three replicas, a leads; one
    store fault healed; two proxies; one real client; fencing data."""
    t = 1000.0
    ev = [{"t": t, "kind": "run_start", "lease": 4.0, "retry": 1.0, "profile": {}},
          {"t": t, "kind": "fleet_targets", "names": ["a", "b", "c"]}]
    for r in "abc":
        ev.append({"t": t + 0.1, "kind": "obs", "replica": r, "up": True, "ready": True,
                   "is_leader": r == "a", "leader": "a", "term": 3, "serving": "live",
                   "restore_error": ""})
    for g in range(1, 6):
        ev.append({"t": t + g, "kind": "write", "gen": g, "ok": True, "backend": "x"})
    for p in (0, 1):
        ev += [{"t": t + 1.2, "kind": "fleet", "ev": "connect", "p": p, "target": p},
               {"t": t + 1.3, "kind": "fleet", "ev": "complete", "p": p, "target": p, "gen": 1}]
        for g in range(2, 6):
            ev.append({"t": t + g + 0.1, "kind": "fleet", "ev": "gen", "p": p, "gen": g})
    ev.append({"t": t + 1.5, "kind": "real_start", "node": "cpp-1", "front": 0})
    for k in range(40):
        ev.append({"t": t + 1.8 + k * 0.2, "kind": "real_rpc", "node": "cpp-1",
                   "line": "ok beta"})
    ev += [{"t": t + 2.0, "kind": "fault_start", "id": 1, "fault": "store-blackhole-all",
            "target": "all", "duration": 1.0},
           {"t": t + 3.0, "kind": "fault_end", "id": 1, "fault": "store-blackhole-all",
            "target": None, "committed": 2}]
    ev.append({"t": t + 9.0, "kind": "final_write", "gen": 5, "ok": True, "backend": "beta"})
    ev.append({"t": t + 9.5, "kind": "final_metrics", "replica": "a", "damaged": 0.0})
    etcd = [("/election/1", "PUT", 2, 2, "b"), ("/election/2", "PUT", 3, 3, "a"),
            ("/election/1", "DELETE", 0, 4, ""),
            ("/status/Upstream/chaos/alpha", "PUT", 5, 5,
             json.dumps({"writer": "a", "term": 3}))]
    for key, typ, cr, mr, val in etcd:
        ev.append({"t": t + 10, "kind": "etcd_event", "key": key, "type": typ,
                   "create_revision": cr, "mod_revision": mr, "value": val})
    ev.append({"t": t + 11, "kind": "run_end"})
    return sorted(ev, key=lambda e: e["t"])


def test_checker_passes_a_good_history():
    results = checker.evaluate(synthetic_history())
    failed = [(n, d) for n, ok, d in results if not ok]
    assert not failed, failed


def test_every_check_fails_on_its_doctored_history():
    events = synthetic_history()
    doctored = dict(checker._doctor(events))
    assert set(doctored) == {n for n, _ in checker.CHECKS}, sorted(doctored)
    for name, evs in doctored.items():
        res = {n: (ok, d) for n, ok, d in checker.evaluate(evs)}
        assert not res[name][0], f"doctored {name} still passes: {res[name][1]}"


def test_leader_wait_is_judged_until_the_next_fault():
    """No agreed leader after the heal: late, unless the next fault starts
    within the bound and so cuts the wait short (its own heal is judged)."""
    events = synthetic_history()
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
