#!/usr/bin/env python3
"""Judges a chaos run from its history (chaos.py's history.jsonl).

    python3 test/chaos/checker.py DIR/history.jsonl [--markdown]
    python3 test/chaos/checker.py DIR/history.jsonl --self-test

Prints the faults by kind and one row per check, and exits 1 if any check
failed. --self-test doctors the history once per check (a replica exiting,
a proxy configured late, a stale status write, ...) and exits 1 unless
every doctored history fails the check it targets (and the untouched one
passes).

Checks:
  runner_completed      the run reached its end, no runner error
  no_replica_exited     no replica exited on its own
  proxy_config_1s       every simulated proxy session had a complete
                        configuration within 1 s of connecting to a ready
                        replica (measured from the later of the connection
                        and the replica being seen ready)
  real_client_first_ok  every real gRPC client's first successful RPC came
                        within 1 s + 3 s process start-up of its start
  converged_after_heal  after every fault healed, every proxy held the
                        generation committed by then within 30 s, and real
                        clients made a successful RPC within 30 s
  converged_final       every proxy holds the final generation; every real
                        client's last 5 RPCs reach the final backend
  fencing               no status write of a term after that term's
                        election key was deleted (or before it existed, or
                        under another writer's name)
  leader_after_store    after the store came back, exactly one leader, agreed
                        on by every live replica, within lease + retry
                        period (at its longest jittered draw) + 1 s (one
                        round trip and the poll interval)
  snapshot_never_corrupt  no replica reported a damaged snapshot file
                        (restore_error other than "no snapshot file",
                        holdfast_snapshot_file_damaged_total > 0)
  served_written_configs  every generation any proxy held is one the
                        writer wrote (a garbled snapshot would show otherwise)
"""

import argparse
import copy
import json
import statistics
import sys
from collections import defaultdict

CONFIG_BOUND = 1.0
REAL_STARTUP = 3.0
CONVERGE = 30.0
RTT_AND_POLL = 1.0
STORE_FAULTS = {"store-blackhole-one", "store-blackhole-all", "store-blackhole-leader",
                "store-reject-one", "etcd-member-kill", "etcd-quorum-loss",
                "replica-kill-cut-off", "leader-pause"}
REPLICAS = ("a", "b", "c")
SIGNAL_FAULTS = {"leader-pause", "replica-kill", "replica-kill-cut-off"}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_kind(events, kind):
    return [e for e in events if e["kind"] == kind]


class Timeline:
    """Each replica's observed state over time (obs events)."""

    def __init__(self, events):
        self.obs = defaultdict(list)
        for e in events:
            if e["kind"] == "obs":
                self.obs[e["replica"]].append(e)
            elif e["kind"] == "fault_start" and e["fault"] in SIGNAL_FAULTS:
                # Not ready from the moment the nemesis acts, not from the
                # monitor's next poll.
                self.obs[e["target"]].append({"t": e["t"], "kind": "obs", "replica": e["target"],
                                              "up": True, "paused": True, "synthetic": True})
        for v in self.obs.values():
            v.sort(key=lambda e: e["t"])

    def at(self, replica, t):
        state = None
        for e in self.obs[replica]:
            if e["t"] > t:
                break
            state = e
        return state

    def ready(self, replica, t):
        s = self.at(replica, t)
        return bool(s and s.get("up") and s.get("ready") and not s.get("paused"))

    def next_ready(self, replica, t):
        if self.ready(replica, t):
            return t
        for e in self.obs[replica]:
            if e["t"] > t and e.get("up") and e.get("ready") and not e.get("paused"):
                return e["t"]
        return None

    def change_times(self, after):
        return sorted({e["t"] for v in self.obs.values() for e in v if e["t"] >= after})


def check_runner(events):
    errs = [e["error"] for e in by_kind(events, "runner_error")]
    if errs:
        return False, f"runner error: {errs[0][:300]}"
    if not by_kind(events, "run_end"):
        return False, "the run did not reach its end"
    return True, "run completed"


def check_no_exit(events):
    exits = by_kind(events, "replica_exit")
    if exits:
        e = exits[0]
        return False, (f"{len(exits)} exit(s); first: replica {e['replica']} pid {e['pid']} "
                       f"code {e['code']}; log:\n{e.get('log', '')[-1500:]}")
    kills = len(by_kind(events, "replica_killed"))
    return True, f"0 unplanned exits ({kills} SIGKILLs by the nemesis)"


def fleet_sessions(events):
    """Sessions per proxy: dicts with connect, target, complete, end."""
    open_ = {}
    sessions = []
    for e in events:
        if e["kind"] != "fleet":
            continue
        p = e["p"]
        if e["ev"] == "connect":
            s = {"p": p, "target": e["target"], "connect": e["t"], "complete": None,
                 "end": None, "gen": None}
            open_[p] = s
            sessions.append(s)
        elif e["ev"] == "complete" and p in open_:
            open_[p]["complete"] = e["t"]
            open_[p]["gen"] = e.get("gen")
        elif e["ev"] == "end" and p in open_:
            open_[p]["end"] = e["t"]
            del open_[p]
    return sessions


def target_names(events):
    t = by_kind(events, "fleet_targets")
    return t[0]["names"] if t else list(REPLICAS)


def check_config_1s(events):
    tl = Timeline(events)
    names = target_names(events)
    run_end = max(e["t"] for e in events)
    measured, exempt, bad = [], 0, []
    for s in fleet_sessions(events):
        replica = names[s["target"]]
        start = tl.next_ready(replica, s["connect"])
        end = s["end"] if s["end"] is not None else run_end
        if start is None or start >= end:
            exempt += 1  # never connected to a ready replica
            continue
        if s["complete"] is None:
            if end - start > CONFIG_BOUND:
                bad.append((s, None))
            else:
                exempt += 1  # ended within the bound, before completing
            continue
        dt = max(0.0, s["complete"] - start)
        measured.append(dt)
        if dt > CONFIG_BOUND:
            bad.append((s, dt))
    if not measured and not bad:
        return False, "no session measured"
    desc = (f"{len(measured)} sessions measured, {exempt} exempt (replica not ready); "
            f"p50 {pct(measured, 50)} p99 {pct(measured, 99)} max {pct(measured, 100)}")
    if bad:
        s, dt = bad[0]
        return False, (f"{len(bad)} late; {desc}; first: proxy {s['p']} on "
                       f"{names[s['target']]} connected at {s['connect']:.3f}, "
                       f"{'never complete' if dt is None else f'complete after {dt:.3f}s'}")
    return True, desc


def pct(values, q):
    if not values:
        return "-"
    v = sorted(values)
    return f"{v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]:.3f}s"


def check_real_first_ok(events):
    tl = Timeline(events)
    names = target_names(events)
    starts, exempt = {}, 0
    for e in by_kind(events, "real_start"):
        if tl.ready(names[e["front"] % len(names)], e["t"]):
            starts[e["node"]] = e["t"]
        else:
            exempt += 1  # its replica was down: covered by the convergence checks
    first = {}
    for e in by_kind(events, "real_rpc"):
        if e["line"].startswith("ok ") and e["node"] not in first:
            first[e["node"]] = e["t"]
    stopped = {e["node"] for e in by_kind(events, "real_stopped")}
    bad, vals = [], []
    for node, t0 in starts.items():
        if node not in first:
            if node not in stopped:
                bad.append(f"{node}: no successful RPC")
            continue
        dt = first[node] - t0
        vals.append(dt)
        if dt > CONFIG_BOUND + REAL_STARTUP:
            bad.append(f"{node}: first ok after {dt:.2f}s")
    if not starts:
        return False, "no real client"
    desc = (f"{len(starts)} real clients started on a ready replica ({exempt} exempt), "
            f"first ok after max {pct(vals, 100)}")
    return (False, f"{desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


def gen_events(events):
    out = defaultdict(list)
    for e in events:
        if e["kind"] == "fleet" and e["ev"] in ("gen", "complete") and e.get("gen") is not None:
            out[e["p"]].append((e["t"], e["gen"]))
    return out


def proxies_started(events):
    first = {}
    for e in events:
        if e["kind"] == "fleet" and e["ev"] == "connect":
            first.setdefault(e["p"], e["t"])
    return first


def check_converged_after_heal(events):
    gens = gen_events(events)
    started = proxies_started(events)
    ok_rpcs = sorted(e["t"] for e in by_kind(events, "real_rpc") if e["line"].startswith("ok "))
    by_node_ok = defaultdict(list)
    for e in by_kind(events, "real_rpc"):
        if e["line"].startswith("ok "):
            by_node_ok[e["node"]].append(e["t"])
    real_alive = {}
    for e in by_kind(events, "real_start"):
        real_alive[e["node"]] = (e["t"], None)
    for e in by_kind(events, "real_stopped") + by_kind(events, "real_exit"):
        if e["node"] in real_alive:
            real_alive[e["node"]] = (real_alive[e["node"]][0], e["t"])
    heals = by_kind(events, "fault_end")
    if not heals:
        return False, "no fault healed"
    bad, lags = [], []
    for h in heals:
        H, goal = h["t"], h["committed"]
        worst = 0.0
        for p, t0 in started.items():
            if t0 > H:
                continue
            reached = [t for t, g in gens[p] if g >= goal]
            if not reached:
                bad.append(f"fault {h['id']} ({h['fault']}): proxy {p} never held gen {goal}")
                continue
            lag = max(0.0, min(reached) - H)
            worst = max(worst, lag)
            if lag > CONVERGE:
                bad.append(f"fault {h['id']} ({h['fault']}): proxy {p} held gen {goal} "
                           f"{lag:.1f}s after healing")
        for node, (t0, t1) in real_alive.items():
            if t0 > H or (t1 is not None and t1 < H + CONVERGE):
                continue
            if not any(H <= t <= H + CONVERGE for t in by_node_ok[node]):
                bad.append(f"fault {h['id']} ({h['fault']}): real client {node} made no "
                           f"successful RPC within {CONVERGE:.0f}s of healing")
        lags.append(worst)
    desc = (f"{len(heals)} heals; worst proxy lag after heal {max(lags):.2f}s, "
            f"median {statistics.median(lags):.2f}s")
    return (False, f"{len(bad)} failures; {desc}; " + "; ".join(bad[:3])) if bad \
        else (True, desc)


def check_converged_final(events):
    fw = by_kind(events, "final_write")
    if not fw or not fw[0]["ok"]:
        return False, "no final write committed"
    final, backend = fw[0]["gen"], fw[0]["backend"]
    gens = gen_events(events)
    started = proxies_started(events)
    behind = [p for p in started if max((g for _, g in gens[p]), default=-1) != final]
    last = defaultdict(list)
    for e in by_kind(events, "real_rpc"):
        last[e["node"]].append(e["line"])
    stopped = {e["node"] for e in by_kind(events, "real_stopped")}
    real_bad = [f"{n}: {last[n][-5:]}" for n in {e["node"] for e in by_kind(events, "real_start")}
                if n not in stopped and last[n][-5:] != [f"ok {backend}"] * 5]
    desc = f"final gen {final} ({backend}); {len(started)} proxies, {len(last)} real clients"
    if behind or real_bad:
        return False, (f"{desc}; not at final gen: {len(behind)} proxies "
                       f"(e.g. {behind[:5]}); real clients: {real_bad[:2]}")
    return True, desc


def check_fencing(events):
    hist = by_kind(events, "etcd_event")
    terms = {}   # create_revision -> {replica, start, end, key}
    by_key = {}
    statuses = 0
    for e in sorted(hist, key=lambda e: e["mod_revision"]):
        if e["key"].startswith("/election/"):
            if e["type"] == "PUT" and e["create_revision"] == e["mod_revision"]:
                terms[e["create_revision"]] = {"replica": e["value"], "start": e["mod_revision"],
                                               "end": None, "key": e["key"]}
                by_key[e["key"]] = e["create_revision"]
            elif e["type"] == "DELETE" and e["key"] in by_key:
                terms[by_key.pop(e["key"])]["end"] = e["mod_revision"]
    bad = []
    for e in hist:
        if not e["key"].startswith("/status/") or e["type"] != "PUT":
            continue
        statuses += 1
        try:
            v = json.loads(e["value"])
        except ValueError:
            bad.append(f"{e['key']}@{e['mod_revision']}: not JSON")
            continue
        term, writer, rev = v.get("term"), v.get("writer"), e["mod_revision"]
        t = terms.get(term)
        if t is None:
            bad.append(f"{e['key']}@{rev}: term {term} of {writer} has no election key")
        elif t["replica"] != writer:
            bad.append(f"{e['key']}@{rev}: term {term} belongs to {t['replica']}, "
                       f"written as {writer}")
        elif rev < t["start"] or (t["end"] is not None and rev >= t["end"]):
            bad.append(f"{e['key']}@{rev}: written by {writer} under term {term}, which "
                       f"ended at revision {t['end']}")
    if statuses == 0:
        return False, "no status write recorded (cannot judge fencing)"
    ended = sum(1 for t in terms.values() if t["end"] is not None)
    desc = f"{statuses} status writes under {len(terms)} terms ({ended} ended)"
    return (False, f"{len(bad)} stale; {desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


def leader_settled(tl, t):
    """True when at time t exactly one live, unpaused replica says it leads
    and every live, unpaused replica names it."""
    states = {r: tl.at(r, t) for r in tl.obs}
    live = {r: s for r, s in states.items()
            if s and s.get("up") and not s.get("paused") and "is_leader" in s}
    leaders = [r for r, s in live.items() if s.get("is_leader") is True]
    if len(leaders) != 1:
        return False
    return all(s.get("leader") == leaders[0] for s in live.values())


def check_leader_after_store(events):
    run = by_kind(events, "run_start")
    lease = run[0].get("lease", 4.0) if run else 4.0
    retry = run[0].get("retry", 1.0) if run else 1.0
    jitter = run[0].get("retry_jitter", 0.0) if run else 0.0
    bound = lease + retry * (1 + jitter) + RTT_AND_POLL
    tl = Timeline(events)
    bad, vals = [], []
    interrupted = 0
    starts = sorted(e["t"] for e in by_kind(events, "fault_start"))
    heals = [h for h in by_kind(events, "fault_end") if h["fault"] in STORE_FAULTS]
    for h in heals:
        H = h["t"]
        # Judged until the next fault starts: a fault that takes the store
        # (or the leader) away again starts a new wait, judged at its heal.
        window_end = next((t for t in starts if t > H), float("inf"))
        found = None
        for t in [H] + tl.change_times(H):
            if t >= window_end:
                break
            if leader_settled(tl, t):
                found = t
                break
        if found is None and window_end < H + bound:
            interrupted += 1
            continue
        if found is None:
            bad.append(f"fault {h['id']} ({h['fault']}): no single agreed leader afterwards")
            continue
        vals.append(found - H)
        if found - H > bound:
            bad.append(f"fault {h['id']} ({h['fault']} {h.get('target')}): single leader "
                       f"after {found - H:.2f}s")
    if not heals:
        return False, "no store fault healed"
    desc = (f"{len(heals)} store heals ({interrupted} cut short by the next fault within the "
            f"bound); bound {bound:.1f}s; worst {pct(vals, 100)}")
    return (False, f"{len(bad)} late; {desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


def check_snapshot(events):
    bad = []
    persisted = 0
    for e in by_kind(events, "obs"):
        err = e.get("restore_error") or ""
        if err and "no snapshot file" not in err:
            bad.append(f"{e['replica']} at {e['t']:.1f}: restore_error {err[:300]!r}")
        if e.get("serving") == "persisted":
            persisted += 1
    for e in by_kind(events, "final_metrics"):
        if e.get("damaged", 0) > 0:
            bad.append(f"{e['replica']}: holdfast_snapshot_file_damaged_total {e['damaged']}")
    desc = f"{persisted} observations serving a persisted snapshot"
    return (False, f"{desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


def check_served_written(events):
    written = {e["gen"] for e in by_kind(events, "write")}
    seen = {g for v in gen_events(events).values() for _, g in v}
    unknown = sorted(seen - written)
    if not seen:
        return False, "no generation seen by any proxy"
    desc = f"{len(seen)} distinct generations held by proxies, {len(written)} written"
    return (False, f"{desc}; never written: {unknown[:10]}") if unknown else (True, desc)


CHECKS = [
    ("runner_completed", check_runner),
    ("no_replica_exited", check_no_exit),
    ("proxy_config_1s", check_config_1s),
    ("real_client_first_ok", check_real_first_ok),
    ("converged_after_heal", check_converged_after_heal),
    ("converged_final", check_converged_final),
    ("fencing", check_fencing),
    ("leader_after_store", check_leader_after_store),
    ("snapshot_never_corrupt", check_snapshot),
    ("served_written_configs", check_served_written),
]


def evaluate(events):
    out = []
    for name, fn in CHECKS:
        try:
            ok, detail = fn(events)
        except Exception as e:  # noqa: BLE001 - a broken history fails the check
            ok, detail = False, f"checker error: {e!r}"
        out.append((name, ok, detail))
    return out


def fault_table(events):
    starts = {e["id"]: e for e in by_kind(events, "fault_start")}
    notes = {e["id"]: e for e in by_kind(events, "fault_note")}
    rows = defaultdict(list)
    for e in by_kind(events, "fault_end"):
        s = starts.get(e["id"], {})
        rows[e["fault"]].append((s.get("duration", 0.0), notes.get(e["id"], {})))
    lines = ["| fault | count | duration min / median / max (s) | notes |",
             "|---|---|---|---|"]
    for kind in sorted(rows):
        d = [x for x, _ in rows[kind]]
        caught = sum(1 for _, n in rows[kind] if n.get("during_snapshot_write"))
        note = f"{caught} killed while writing the snapshot" if kind == "replica-kill" else ""
        lines.append(f"| {kind} | {len(d)} | {min(d):.1f} / {statistics.median(d):.1f} / "
                     f"{max(d):.1f} | {note} |")
    total = sum(len(v) for v in rows.values())
    lines.append(f"| **total** | {total} | | |")
    return "\n".join(lines)


def results_table(results):
    lines = ["| check | result | detail |", "|---|---|---|"]
    for name, ok, detail in results:
        d = detail.replace("\n", " ").replace("|", "\\|")
        lines.append(f"| {name} | {'PASS' if ok else 'FAIL'} | {d[:600]} |")
    return "\n".join(lines)


# --- self-test: every check can fail -----------------------------------------

def _doctor(events):
    """(check name, doctored events) pairs, one per check."""
    out = []
    end_t = max(e["t"] for e in events)

    def add(name, evs):
        out.append((name, sorted(evs, key=lambda e: e["t"])))

    add("runner_completed", [e for e in events if e["kind"] != "run_end"])
    add("no_replica_exited", events + [{"t": end_t - 1, "kind": "replica_exit", "replica": "a",
                                        "pid": 1, "code": 134, "log": "doctored"}])
    # A complete session moved 2 s later.
    ev = copy.deepcopy(events)
    tl = Timeline(events)
    names = target_names(events)
    for s in fleet_sessions(events):
        if s["complete"] and tl.ready(names[s["target"]], s["connect"]):
            for e in ev:
                if e["kind"] == "fleet" and e["ev"] == "complete" and e["p"] == s["p"] \
                        and e["t"] == s["complete"]:
                    e["t"] = s["connect"] + 2.5
            break
    add("proxy_config_1s", ev)
    add("real_client_first_ok", [e for e in events if not (e["kind"] == "real_rpc"
                                                         and e["line"].startswith("ok"))])
    # One proxy never moves past the generation it had before the first heal.
    first_heal = by_kind(events, "fault_end")[0]["t"]
    victim = next(iter(proxies_started(events)))
    add("converged_after_heal", [e for e in events if not (
        e["kind"] == "fleet" and e.get("p") == victim and e["ev"] in ("gen", "complete")
        and e["t"] > first_heal - 60)])
    final = by_kind(events, "final_write")[0]["gen"]
    add("converged_final", [e for e in events if not (
        e["kind"] == "fleet" and e.get("p") == victim and e.get("gen") == final)])
    # A status written under a term after that term's key was deleted.
    hist = by_kind(events, "etcd_event")
    ended = None
    for e in hist:
        if e["key"].startswith("/election/") and e["type"] == "DELETE":
            ended = e
            break
    ev = list(events)
    if ended:
        created = next(x for x in hist if x["key"] == ended["key"] and x["type"] == "PUT")
        ev.append({"t": end_t, "kind": "etcd_event", "key": "/status/Upstream/chaos/alpha",
                   "type": "PUT", "create_revision": 4, "mod_revision": ended["mod_revision"] + 1,
                   "value": json.dumps({"writer": created["value"],
                                        "term": created["create_revision"]})})
    add("fencing", ev)
    # Two replicas claim to lead from the first store heal to the end.
    h = next(h for h in by_kind(events, "fault_end") if h["fault"] in STORE_FAULTS)
    ev = [dict(e, is_leader=e["replica"] != "c", leader="a")
          if e["kind"] == "obs" and e["t"] >= h["t"] else e for e in events]
    for r in REPLICAS:
        ev.append({"t": h["t"], "kind": "obs", "replica": r, "up": True, "ready": True,
                   "is_leader": r != "c", "leader": "a", "term": 1})
    add("leader_after_store", ev)
    add("snapshot_never_corrupt", events + [{
        "t": end_t - 1, "kind": "obs", "replica": "b", "up": True, "ready": True,
        "serving": "persisted", "restore_error": "last-good.snapshot: checksum mismatch"}])
    add("served_written_configs", events + [{"t": end_t - 1, "kind": "fleet", "ev": "gen",
                                             "p": victim, "gen": 987654}])
    return out


def self_test(events) -> int:
    failures = 0
    base = {n: ok for n, ok, _ in evaluate(events)}
    for name, doctored in _doctor(events):
        res = {n: (ok, d) for n, ok, d in evaluate(doctored)}
        caught = not res[name][0]
        if not caught:
            failures += 1
        print(f"{'ok  ' if caught else 'MISS'} doctored {name}: "
              f"{'fails' if caught else 'still passes'} ({res[name][1][:160]})")
    print(f"undoctored: {sum(base.values())}/{len(base)} checks pass")
    return 1 if failures else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("history")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    events = sorted(load(args.history), key=lambda e: e["t"])
    if args.self_test:
        return self_test(events)
    print(fault_table(events))
    print()
    results = evaluate(events)
    print(results_table(results))
    failed = [n for n, ok, _ in results if not ok]
    print()
    print(f"{len(results) - len(failed)}/{len(results)} checks passed"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
