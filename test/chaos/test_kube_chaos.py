"""pytest entry for the Kubernetes chaos run (issue 16, the incident replayed)
and for the checker on Kubernetes histories.

    HOLDFAST_BUILD_DIR=build python3 -m pytest -q test/chaos/test_kube_chaos.py

test_kube_short_profile runs `chaos.py --store kube --profile short` (a real
kube-apiserver on etcd 3.6, three `serve --kubeconfig` replicas, inside a
private network namespace), then the checker on its history, then the
checker's self-test on that history. The checker tests need no deployment:
they judge test_chaos.py's synthetic history, made a Kubernetes run's.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import checker  # noqa: E402
from test_chaos import synthetic_history  # noqa: E402

SEED = int(os.environ.get("HOLDFAST_CHAOS_SEED", "7"))
LEADER_CHECKS = {"fencing", "leader_after_store"}


def kube_history() -> list:
    """The synthetic run as a Kubernetes run without leader election: its
    store fault an API server blackhole for every replica, cut from 2.0 s to
    3.2 s (generation 3 is written meanwhile, and reaches the proxies only
    at 3.3 s), and c cut off from 7 s to 13 s while it is restarted (the
    synthetic run's cuts)."""
    out = []
    for e in synthetic_history():
        e = dict(e)
        if e["kind"] == "run_start":
            e.update(store="kube", leadership=False)
        elif e["kind"] in ("etcd_event", "etcd_history"):
            continue
        elif e["kind"] in ("fault_start", "fault_end") and e["id"] == 1:
            e["fault"] = "apiserver-blackhole-all"
        out.append(e)
    return sorted(out, key=lambda e: e["t"])


def test_checker_passes_a_good_kube_history():
    events = kube_history()
    results = checker.evaluate(events)
    failed = [(n, d) for n, ok, d in results if not ok]
    assert not failed, failed
    judged = {n for n, _, _ in results}
    assert judged == {n for n, _ in checker.CHECKS} - LEADER_CHECKS
    assert set(checker.not_judged(events)) == LEADER_CHECKS


def test_every_kube_check_fails_on_its_doctored_history():
    events = kube_history()
    doctored = checker._doctor(events)
    assert {n for n, _, _ in doctored} == {n for n, _ in checker.active_checks(events)}
    for name, what, evs in doctored:
        res = {n: (ok, d) for n, ok, d in checker.evaluate(evs)}
        assert not res[name][0], f"doctored {name} ({what}) still passes: {res[name][1]}"
    whats = [w for n, w, _ in doctored if n == "store_cut_effective"]
    assert len(whats) == 4, whats


def kube_elected_history() -> list:
    """kube_history() as a run that elects: a on the Lease in term 1 writes
    two statuses, b takes over (term 2) and writes one; a spec write in
    between keeps its status."""
    t = 1000.0
    events = [dict(e, leadership=True) if e["kind"] == "run_start" else e
              for e in kube_history()]

    def ev(rev, **kw):
        return {"t": t + 30 + rev / 100, "kind": "kube_event", "rev": rev, "deleted": False,
                **kw}
    lease = "/coordination.k8s.io/leases/holdfast-system/holdfast-leader"
    obj = "/holdfast.dev/upstreams/chaos/alpha"
    events += [ev(10, key=lease, what="lease", holder="a", term=1),
               ev(11, key=obj, what="object", writer=None, status="s0"),
               ev(12, key=obj, what="object", writer={"replica": "a", "term": 1}, status="s1"),
               ev(13, key=lease, what="lease", holder="a", term=1),
               ev(14, key=obj, what="object", writer={"replica": "a", "term": 1}, status="s1"),
               ev(15, key=lease, what="lease", holder="b", term=2),
               ev(16, key=obj, what="object", writer={"replica": "b", "term": 2}, status="s2"),
               {"t": t + 31, "kind": "kube_history", "events": 7}]
    return sorted(events, key=lambda e: e["t"])


def test_leader_checks_are_judged_once_the_run_elects():
    """A Kubernetes run that elects gets leader_after_store and fencing
    judged, fencing on the API server's etcd history."""
    events = kube_elected_history()
    assert checker.not_judged(events) == {}
    res = {n: (ok, d) for n, ok, d in checker.evaluate(events)}
    assert res["leader_after_store"][0] is True, res["leader_after_store"]
    assert res["fencing"] == (True, "2 status writes under 2 terms"), res["fencing"]


def test_kube_fencing_fails_on_a_stale_or_unrecorded_write():
    events = kube_elected_history()
    doctored = [evs for n, _, evs in checker._doctor(events) if n == "fencing"]
    assert doctored
    for evs in doctored:
        ok, detail = checker.check_fencing(evs)
        assert not ok and "written as a term 1 while the Lease named ('b', 2)" in detail, detail
    # A write before any Lease, and no history at all.
    early = [dict(e, rev=9) if e["kind"] == "kube_event" and e["rev"] == 12 else e
             for e in events]
    assert not checker.check_fencing(early)[0]
    assert not checker.check_fencing(
        [e for e in events if not e["kind"].startswith("kube_")])[0]


def test_kube_short_profile(tmp_path):
    build = Path(os.environ.get("HOLDFAST_BUILD_DIR", HERE.parent.parent / "build"))
    if not (build / "src/app/holdfast").exists():
        pytest.fail(f"no holdfast binary under {build} (set HOLDFAST_BUILD_DIR)",
                    pytrace=False)
    out = tmp_path / "chaos-kube"
    env = dict(os.environ, HOLDFAST_BUILD_DIR=str(build))
    run = subprocess.run([sys.executable, str(HERE / "chaos.py"), "--store", "kube",
                          "--profile", "short", "--seed", str(SEED), "--out", str(out)],
                         capture_output=True, text=True, timeout=900, env=env)
    history = out / "history.jsonl"
    assert history.exists(), f"no history:\n{run.stdout}\n{run.stderr[-3000:]}"
    check = subprocess.run([sys.executable, str(HERE / "checker.py"), str(history)],
                           capture_output=True, text=True, timeout=120)
    print(check.stdout)
    selftest = subprocess.run([sys.executable, str(HERE / "checker.py"), str(history),
                               "--self-test"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"chaos.py exited {run.returncode}:\n{run.stderr[-3000:]}"
    assert check.returncode == 0, f"checks failed (history {history}):\n{check.stdout}"
    assert selftest.returncode == 0, f"checker self-test:\n{selftest.stdout}"
