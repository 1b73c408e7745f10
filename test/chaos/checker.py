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
                        and the replica being seen ready); sessions of every
                        protocol the fleet spoke (state of the world, delta)
                        were measured
  real_client_first_ok  every real gRPC client's first successful RPC came
                        within 1 s + 3 s process start-up of its start, or,
                        when its replica was not ready for it (not ready at
                        its start, or killed or down within 1 s of it),
                        within 1 s + gRPC's reconnection
                        backoff of the replica being seen ready; only a
                        client stopped before it was due is excused
  converged_after_heal  after every fault healed, every proxy held the
                        generation committed by then within 30 s, and every
                        real client, within 30 s (a client with no
                        successful RPC yet: by its first-ok due time) and
                        until the next fault, reached only the backend of a
                        generation being served (>= the one committed by
                        the heal)
  converged_final       every proxy holds the final generation; every real
                        client's last 5 RPCs reach the final backend
  fencing               no status write of a term after that term's
                        election key was deleted (or before it existed, or
                        under another writer's name), judged on a whole
                        history: the recorded events reach the highest
                        mod_revision the status keys had before the history
                        was read (`etcd_history`'s status_revision)
  leader_after_store    after the store came back (the nemesis' fault_end,
                        once a write succeeds: to etcd, or of a Lease to
                        the API server within its 1 s request timeout), exactly
                        one leader, agreed on by every live replica,
                        within lease + retry
                        period (at its longest jittered draw) + 1 s (one
                        round trip and the poll interval)
  snapshot_never_corrupt  no replica reported a damaged snapshot file
                        (restore_error other than "no snapshot file",
                        holdfast_snapshot_file_damaged_total > 0, a file
                        damaged right after a kill), and it was measured:
                        every start's restore result observed, every
                        replica's final counter read, and a kill landed
                        mid-write leaving the old file whole
  restart_cut_off_serves_persisted  a replica restarted while cut off from
                        the store served its persisted snapshot within
                        --store-grace + 1 s start-up + 1 s (round trip and
                        poll) of its exec, before the store came back, and
                        configured the proxies that connected meanwhile
                        within 1 s
  served_written_configs  every generation any proxy held is one the
                        writer wrote (a garbled snapshot would show otherwise)
  replicas_stopped_cleanly  every replica, stopped with SIGTERM at the end,
                        exited 0 within the grace period
  store_cut_effective   every cut of replicas off the store (etcd:
                        blackhole or reject of their proxies to every
                        member; Kubernetes: a blackhole of their proxy to the
                        API server) took effect: no proxy of a cut-off replica
                        received, during the cut, a generation whose write
                        began after the cut; and some cut had a committed
                        write to withhold from a proxy connected to a
                        cut-off replica (else the check judged nothing)

Which checks apply comes from the run's own run_start: leader_after_store
and fencing are not judged while the run has no leader election
(`leadership: false`), and are listed as not judged. On Kubernetes
(`store: kube`) fencing's evidence is the API server's etcd history of the
Lease and the objects (`kube_event`): every status write must name the
Lease's holder and term as they stood at the write's revision.
"""

import argparse
import copy
import json
import statistics
import sys
from collections import defaultdict

CONFIG_BOUND = 1.0
REAL_STARTUP = 3.0
# A real client makes its first connection attempt within this of its start
# (process start-up, channel set-up): a replica killed or paused before then
# was not there for it.
REAL_CONNECT = 1.0
CONVERGE = 30.0
RTT_AND_POLL = 1.0
# From exec to a replica's admin endpoint answering (process start, reading
# its snapshot file).
REPLICA_START = 1.0
# gRPC's reconnection backoff (initial 1 s, multiplier 1.6, jitter 0.2):
# after `down` seconds of failed attempts the attempts so far took at least
# 0.8 * (1.6^n - 1) / 0.6 s, so the interval in force is at most
# 1.2 * 1.6^n <= 0.9 * down + 1.2 s.
RECONNECT_SLOPE = 0.9
RECONNECT_BASE = 1.2
# A gRPC C++ 1.51 xDS client (Debian's, the chaos runs' real client) whose
# xDS server refused or reset its first connections gets its configuration
# only 15-19 s after the server is back, whatever the server: measured with
# one `serve --config-dir` started 0.3, 1.4, 3 and 6 s after the client,
# behind a FaultProxy that reset connections until then (first RPC past the
# xDS error 14.9, 18.6, 17.2 and 18.9 s after the server was reachable), and
# 18.9 s after 1.4 s of refused connections (`reject` mode), while a client
# whose connections were held open instead (`blackhole`) got it at once. Such a client's first ok is due this long
# after its replica was ready, beyond the backoff model above.
CPP_FAILED_START_RECOVERY = 20.0
STORE_FAULTS = {"store-blackhole-one", "store-blackhole-all", "store-blackhole-leader",
                "store-reject-one", "etcd-member-kill", "etcd-quorum-loss",
                "replica-kill-cut-off", "leader-pause",
                # Kubernetes runs (kube_chaos.py)
                "apiserver-blackhole-one", "apiserver-blackhole-all", "apiserver-slow",
                "apiserver-kill", "apiserver-etcd-kill"}
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
        self.kills = defaultdict(list)
        for e in events:
            if e["kind"] == "obs":
                self.obs[e["replica"]].append(e)
            elif e["kind"] == "replica_killed":
                self.kills[e["replica"]].append(e)
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

    def next_ready_after(self, replica, t):
        """The first time after `t` the replica was seen ready (whatever the
        state last seen before `t`)."""
        for e in self.obs[replica]:
            if e["t"] > t and e.get("up") and e.get("ready") and not e.get("paused"):
                return e["t"]
        return None

    def first_not_ready(self, replica, after, until):
        """The first time in (after, until] the replica was seen not ready,
        or killed (before the monitor's next poll sees it down)."""
        times = [e["t"] for e in self.kills[replica] if after < e["t"] <= until]
        times += [e["t"] for e in self.obs[replica] if after < e["t"] <= until and not (
            e.get("up") and e.get("ready") and not e.get("paused"))]
        return min(times, default=None)

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
                 "end": None, "gen": None, "proto": e.get("proto", "sotw")}
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
    by_proto = defaultdict(list)
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
        by_proto[s["proto"]].append(dt)
        if dt > CONFIG_BOUND:
            bad.append((s, dt))
    if not measured and not bad:
        return False, "no session measured"
    desc = (f"{len(measured)} sessions measured, {exempt} exempt (replica not ready); "
            f"p50 {pct(measured, 50)} p99 {pct(measured, 99)} max {pct(measured, 100)}; "
            + ", ".join(f"{k} {len(v)} (max {pct(v, 100)})" for k, v in sorted(by_proto.items())))
    missing = [p for p in expected_protocols(events) if not by_proto[p]]
    if missing:
        return False, f"no {'/'.join(missing)} session measured; {desc}"
    if bad:
        s, dt = bad[0]
        return False, (f"{len(bad)} late; {desc}; first: proxy {s['p']} on "
                       f"{names[s['target']]} connected at {s['connect']:.3f}, "
                       f"{'never complete' if dt is None else f'complete after {dt:.3f}s'}")
    return True, desc


def expected_protocols(events):
    """The xDS protocols the run's fleet was asked to speak."""
    return sorted({e.get("proto", "sotw") for e in by_kind(events, "fleet_add") if e["n"] > 0})


def pct(values, q):
    if not values:
        return "-"
    v = sorted(values)
    return f"{v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]:.3f}s"


def reconnect_allowance(down):
    """How long after its server came back a gRPC client that has failed to
    reach it for `down` seconds may take to try again."""
    return RECONNECT_SLOPE * down + RECONNECT_BASE if down > 0 else 0.0


def first_config_allowance(down):
    """reconnect_allowance() for a real client that started while its
    replica was down: its connections were refused, so gRPC C++ 1.51's
    recovery (CPP_FAILED_START_RECOVERY) bounds it too."""
    return max(reconnect_allowance(down), CPP_FAILED_START_RECOVERY) if down > 0 else 0.0


def real_ends(events):
    """When each real client was stopped by the runner or exited."""
    ends = {}
    for e in by_kind(events, "real_stopped") + by_kind(events, "real_exit"):
        ends[e["node"]] = min(e["t"], ends.get(e["node"], e["t"]))
    return ends


def first_ok_due(tl, replica, t0, first_ok):
    """When a real client started at `t0` on `replica` owes its first
    successful RPC: REAL_STARTUP + CONFIG_BOUND after its start; when its
    replica was not ready for it (not ready at its start, or killed or seen
    down within REAL_CONNECT of it, before its first ok), CONFIG_BOUND + the
    backoff built up meanwhile after the replica was next seen ready. None
    if the replica never was."""
    ready = tl.next_ready(replica, t0)
    if ready is not None and ready <= t0:
        went_down = tl.first_not_ready(replica, t0, min(first_ok or float("inf"),
                                                        t0 + REAL_CONNECT))
        if went_down is not None:
            ready = tl.next_ready_after(replica, went_down)
    if ready is None:
        return None
    return max(t0 + REAL_STARTUP, ready + first_config_allowance(ready - t0)) + CONFIG_BOUND


def first_oks(events):
    first = {}
    for e in by_kind(events, "real_rpc"):
        if e["line"].startswith("ok ") and e["node"] not in first:
            first[e["node"]] = e["t"]
    return first


def check_real_first_ok(events):
    """Each real client's first successful RPC is due REAL_STARTUP +
    CONFIG_BOUND after its start; when its replica was not ready for it,
    CONFIG_BOUND after the replica was seen ready plus the reconnection
    backoff it built up meanwhile (first_ok_due). A client stopped before
    it was due is the only one excused from having succeeded."""
    tl = Timeline(events)
    names = target_names(events)
    first = first_oks(events)
    ends = real_ends(events)
    starts = by_kind(events, "real_start")
    if not starts:
        return False, "no real client"
    bad, vals, late_ready, excused = [], [], 0, 0
    for e in starts:
        node, t0 = e["node"], e["t"]
        due = first_ok_due(tl, names[e["front"] % len(names)], t0, first.get(node))
        if due is None:
            due = float("inf")
        late_ready += due > t0 + REAL_STARTUP + CONFIG_BOUND
        if node not in first:
            if ends.get(node, float("inf")) < due:
                excused += 1
            else:
                bad.append(f"{node}: no successful RPC (due {due - t0:.2f}s after its start)")
            continue
        vals.append(first[node] - t0)
        if first[node] > due:
            bad.append(f"{node}: first ok {first[node] - t0:.2f}s after its start, "
                       f"due after {due - t0:.2f}s")
    desc = (f"{len(starts)} real clients ({late_ready} whose replica was not ready for them, "
            f"{excused} stopped before due), first ok after max {pct(vals, 100)}")
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


def served_windows(events):
    """(gen, backend, from, until) per generation written: it may be what a
    client is served from the moment its write began until CONFIG_BOUND
    after a later generation was committed (a failed write may still have
    committed, so it counts too)."""
    writes = by_kind(events, "write")
    commits = sorted((e["t"], e["gen"]) for e in writes if e["ok"])
    out = []
    for w in writes:
        nxt = next((t for t, g in commits if g > w["gen"]), None)
        until = nxt + CONFIG_BOUND if nxt is not None else float("inf")
        out.append((w["gen"], w["backend"], w.get("start", w["t"]), until))
    return out


def current(rpc, goal, windows, deadline):
    """True when an ok RPC reached the backend of a generation >= goal that
    may have been served when the RPC picked its backend (in the `deadline`
    before it ended, which was between the previous poll and `t`)."""
    backend = rpc["line"].split()[1]
    lo, hi = rpc.get("since", rpc["t"]) - deadline, rpc["t"]
    return any(g >= goal and b == backend and frm <= hi and until > lo
               for g, b, frm, until in windows)


def real_converged(rpcs, goal, windows, deadline):
    """The time from which every ok RPC in `rpcs` is current (None if the
    last one is not)."""
    since = None
    for r in rpcs:
        if current(r, goal, windows, deadline):
            since = r["t"] if since is None else since
        else:
            since = None
    return since


def check_real_after_heal(events, h, next_start, windows):
    """Real clients running at heal `h`: from some time within CONVERGE
    of it until the next fault starts, every successful RPC reaches the
    backend of the generation being served (>= the one committed by the
    heal). The runner starts the next fault only once they do (or CONVERGE
    has passed). Returns (failures, clients that ended, or were still
    starting when the next fault came, before converging)."""
    H, goal = h["t"], h["committed"]
    ends = real_ends(events)
    tl, names, first = Timeline(events), target_names(events), first_oks(events)
    rpcs = defaultdict(list)
    for e in by_kind(events, "real_rpc"):
        if e["line"].startswith("ok ") and H <= e["t"] < next_start:
            rpcs[e["node"]].append(e)
    bad, cut = [], 0
    for s in by_kind(events, "real_start"):
        node, end = s["node"], ends.get(s["node"], float("inf"))
        if s["t"] > H or end <= H:
            continue
        since = real_converged(rpcs[node], goal, windows, s.get("deadline", 1.0))
        # A client that has not reached any replica yet is still within its
        # start-up (first_ok_due: the backoff of a replica down meanwhile).
        allowed = H + CONVERGE
        starting = first.get(node, float("inf")) > H
        if starting:
            due = first_ok_due(tl, names[s["front"] % len(names)], s["t"], first.get(node))
            allowed = max(allowed, due if due is not None else allowed)
        if since is not None and since <= allowed:
            continue
        if since is None and (end < min(next_start, allowed) or
                              (starting and next_start < allowed)):
            # Stopped by the runner or exited (which converged_final fails),
            # or, still starting, overtaken by the next fault (judged at the
            # heals that follow; its first ok by real_client_first_ok).
            cut += 1
            continue
        bad.append(f"fault {h['id']} ({h['fault']}): real client {node} " + (
            f"reached the generation served only {since - H:.1f}s after healing" if since
            else f"did not reach the backend of the generation served (gen >= {goal})"))
    return bad, cut


def check_converged_after_heal(events):
    gens = gen_events(events)
    started = proxies_started(events)
    windows = served_windows(events)
    heals = by_kind(events, "fault_end")
    if not heals:
        return False, "no fault healed"
    fault_starts = sorted(e["t"] for e in by_kind(events, "fault_start"))
    final = [e["t"] for e in by_kind(events, "final_write")]
    bad, lags, cut = [], [], 0
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
        next_start = min([t for t in fault_starts if t > H] + final + [float("inf")])
        real_bad, real_cut = check_real_after_heal(events, h, next_start, windows)
        bad += real_bad
        cut += real_cut
        lags.append(worst)
    desc = (f"{len(heals)} heals; worst proxy lag after heal {max(lags):.2f}s, "
            f"median {statistics.median(lags):.2f}s; real clients judged by backend "
            f"({cut} ended or still starting at the next fault)")
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
    if run_mode(events)[0] == "kube":
        return check_fencing_kube(events)
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
    whole, reach = etcd_history_whole(events, hist)
    desc += f"; {reach}"
    if bad:
        return False, f"{len(bad)} stale; {desc}; " + "; ".join(bad[:3])
    return whole, desc


def etcd_history_whole(events, hist):
    """(True, how far) when the recorded etcd history reaches, and holds
    the write of, the status keys' highest mod_revision as the runner read
    it before the history (a watch stopped early leaves later status
    writes unjudged)."""
    summary = by_kind(events, "etcd_history")
    need = summary[-1].get("status_revision") if summary else None
    if need is None:
        why = summary[-1].get("status_error", "not recorded") if summary else "no etcd_history"
        return False, f"status keys' last revision unknown ({why})"
    last = max((e["mod_revision"] for e in hist), default=0)
    held = need == 0 or any(e["mod_revision"] == need and e["type"] == "PUT"
                            and e["key"].startswith("/status/") for e in hist)
    reach = f"history to revision {last}, status keys last written at {need}"
    if last < need:
        return False, f"truncated: {reach}"
    if not held:
        return False, f"{reach}, but no status write at {need} recorded"
    return True, reach


def check_fencing_kube(events):
    """Each status write (an object version whose status differs from the
    previous version's) against the Lease at the revision before it."""
    if not by_kind(events, "kube_history"):
        return False, "no Kubernetes history recorded (cannot judge fencing)"
    lease = None            # (holder, term) as of the last Lease version
    statuses = {}           # object key -> digest of its last status
    terms, writes, bad = set(), 0, []
    for e in sorted(by_kind(events, "kube_event"), key=lambda e: e["rev"]):
        if e["what"] == "lease":
            lease = None if e["deleted"] else (e["holder"], e["term"])
            if lease and lease[0]:
                terms.add(lease)
            continue
        if e["deleted"]:
            statuses.pop(e["key"], None)
            continue
        before = statuses.get(e["key"])
        statuses[e["key"]] = e["status"]
        if e["status"] == before or not e.get("writer"):
            continue  # a spec write keeps the status; a new object has none
        writes += 1
        writer = (e["writer"].get("replica"), e["writer"].get("term"))
        if writer != lease:
            bad.append(f"{e['key']}@{e['rev']}: written as {writer[0]} term {writer[1]} "
                       f"while the Lease named {lease}")
    if writes == 0:
        return False, "no status write recorded (cannot judge fencing)"
    desc = f"{writes} status writes under {len(terms)} terms"
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


def fault_notes(events, kind):
    """The fault_note of every fault of `kind`, by fault id (None if absent)."""
    notes = {e["id"]: e for e in by_kind(events, "fault_note")}
    return {f["id"]: notes.get(f["id"]) for f in by_kind(events, "fault_start")
            if f["fault"] == kind}


def snapshot_damage(events):
    """Every sign of a damaged snapshot file: restore errors, the damaged
    counter, a file found damaged right after a kill."""
    bad = []
    for e in by_kind(events, "obs"):
        err = e.get("restore_error") or ""
        if err and "no snapshot file" not in err:
            bad.append(f"{e['replica']} at {e['t']:.1f}: restore_error {err[:300]!r}")
    for e in by_kind(events, "final_metrics"):
        if (e.get("damaged") or 0) > 0:
            bad.append(f"{e['replica']}: holdfast_snapshot_file_damaged_total {e['damaged']}")
    for fid, n in fault_notes(events, "replica-kill").items():
        if n and n.get("file_after_kill", "").startswith("damaged"):
            bad.append(f"fault {fid}: after the kill the file was {n['file_after_kill']}")
    return bad


def snapshot_unmeasured(events):
    """What snapshot_never_corrupt needed and was not recorded."""
    missing = []
    obs = by_kind(events, "obs")
    for s in by_kind(events, "replica_start"):
        if not any(e["replica"] == s["replica"] and e.get("pid") == s["pid"]
                   and "restore_error" in e for e in obs):
            missing.append(f"{s['replica']} pid {s['pid']}: its restore result never observed")
    final = {e["replica"]: e.get("damaged") for e in by_kind(events, "final_metrics")}
    for r in target_names(events):
        if not isinstance(final.get(r), (int, float)):
            missing.append(f"{r}: no final holdfast_snapshot_file_damaged_total")
    kills = fault_notes(events, "replica-kill")
    landed = [fid for fid, n in kills.items() if n and n.get("during_snapshot_write")
              and n.get("file_after_kill") == "whole"]
    if kills and not landed:
        missing.append(f"none of {len(kills)} replica kills landed during a snapshot write "
                       "with the old file left whole")
    return missing, f"{len(landed)}/{len(kills)} kills landed mid-write"


def check_snapshot(events):
    bad = snapshot_damage(events)
    missing, landed = snapshot_unmeasured(events)
    persisted = sum(1 for e in by_kind(events, "obs") if e.get("serving") == "persisted")
    desc = f"{persisted} observations serving a persisted snapshot; {landed}"
    if bad or missing:
        return False, f"{desc}; " + "; ".join((bad + missing)[:3])
    return True, desc


def cut_off_restarts(events):
    """(fault, the replica_start while cut off or None, store_back time or
    None) per replica-kill-cut-off fault."""
    backs = {e["id"]: e["t"] for e in by_kind(events, "store_back")}
    out = []
    for f in by_kind(events, "fault_start"):
        if f["fault"] != "replica-kill-cut-off":
            continue
        back = backs.get(f["id"])
        start = next((s for s in by_kind(events, "replica_start") if s["replica"] == f["target"]
                      and f["t"] < s["t"] < (back or float("inf"))), None)
        out.append((f, start, back))
    return out


def persisted_ready(events, start, back):
    """When the replica started as `start` was first seen ready serving its
    persisted snapshot before the store came back (None if never)."""
    return next((e["t"] for e in by_kind(events, "obs") if e["replica"] == start["replica"]
                 and e.get("pid") == start["pid"] and e["t"] < back and e.get("ready")
                 and e.get("serving") == "persisted"), None)


def judge_cut_off_proxies(events, replica, t0, ready, back):
    """Proxies that connected to the replica restarted at `t0` while it was
    cut off: each complete within CONFIG_BOUND of the later of its
    connection and the replica serving. Returns (judged, failures)."""
    names = target_names(events)
    judged, bad = 0, []
    for s in fleet_sessions(events):
        due = max(s["connect"], ready) + CONFIG_BOUND
        if names[s["target"]] != replica or not t0 <= s["connect"] < back or due > back:
            continue
        if s["complete"] is None and s["end"] is not None and s["end"] < due:
            continue  # its stream ended (the old process's) before it was due
        judged += 1
        if s["complete"] is None or s["complete"] > due:
            bad.append(f"proxy {s['p']} ({s['proto']}) connected at {s['connect']:.2f} "
                       + ("never complete before the store came back" if s["complete"] is None
                          else f"complete {s['complete'] - max(s['connect'], ready):.2f}s "
                               "after it could be"))
    return judged, bad


def check_restart_persisted(events):
    """A replica restarted while cut off from the store serves its persisted
    snapshot within --store-grace + REPLICA_START + RTT_AND_POLL of its
    exec, and the proxies that connect to it meanwhile are configured."""
    run = by_kind(events, "run_start")
    grace = run[0].get("store_grace") if run else None
    if grace is None:
        return False, "no --store-grace recorded"
    bound = grace + REPLICA_START + RTT_AND_POLL
    cases = cut_off_restarts(events)
    if not cases:
        return False, "no replica restarted while cut off"
    bad, vals, judged = [], [], 0
    for f, start, back in cases:
        if start is None or back is None:
            bad.append(f"fault {f['id']}: no restart while cut off recorded")
            continue
        t0 = start.get("exec", start["t"])
        ready = persisted_ready(events, start, back)
        if ready is None:
            bad.append(f"fault {f['id']}: {start['replica']} did not serve its persisted "
                       f"snapshot in the {back - t0:.1f}s before the store came back")
            continue
        vals.append(ready - t0)
        if ready - t0 > bound:
            bad.append(f"fault {f['id']}: {start['replica']} served its persisted snapshot "
                       f"{ready - t0:.2f}s after exec")
        n, late = judge_cut_off_proxies(events, start["replica"], t0, ready, back)
        judged += n
        bad += [f"fault {f['id']}: {x}" for x in late]
        if n == 0:
            bad.append(f"fault {f['id']}: no proxy connected while it served persisted")
    desc = (f"{len(cases)} restarts while cut off; serving persisted after max "
            f"{pct(vals, 100)} (bound {bound:.1f}s); {judged} proxies configured meanwhile")
    return (False, f"{desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


def check_stopped_cleanly(events):
    """Every replica, stopped with SIGTERM at the end, exited 0 in time."""
    codes = {e["replica"]: e.get("code") for e in by_kind(events, "replica_stop")}
    bad = [f"{r}: " + ("never stopped (not running at the end)" if r not in codes
                       else f"exit {codes[r]} on SIGTERM")
           for r in target_names(events) if codes.get(r) != 0]
    bad += [e["error"][:500] for e in by_kind(events, "teardown_problem")]
    desc = f"{len(codes)} replicas stopped with SIGTERM"
    return (False, f"{desc}; " + "; ".join(bad[:3])) if bad else (True, f"{desc}, all exit 0")


def check_served_written(events):
    written = {e["gen"] for e in by_kind(events, "write")}
    seen = {g for v in gen_events(events).values() for _, g in v}
    unknown = sorted(seen - written)
    if not seen:
        return False, "no generation seen by any proxy"
    desc = f"{len(seen)} distinct generations held by proxies, {len(written)} written"
    return (False, f"{desc}; never written: {unknown[:10]}") if unknown else (True, desc)


def store_cuts(events):
    """(id, replicas, from, until) per cut (store_cut .. store_uncut)."""
    ends = {e["id"]: e["t"] for e in by_kind(events, "store_uncut")}
    return [(e["id"], e["replicas"], e["t"], ends.get(e["id"]))
            for e in by_kind(events, "store_cut")]


def check_store_cut_effective(events):
    """A cut-off replica's proxies get nothing written after the cut began
    until it ends; some cut had a committed write to withhold."""
    cuts = store_cuts(events)
    if not cuts:
        return False, "no cut recorded"
    names = target_names(events)
    write_start = {}
    for w in by_kind(events, "write"):
        write_start[w["gen"]] = min(w.get("start", w["t"]), write_start.get(w["gen"], w["t"]))
    commits = [(w.get("start", w["t"]), w["t"]) for w in by_kind(events, "write") if w["ok"]]
    sessions = fleet_sessions(events)
    bad, withheld, unended = [], 0, 0
    for fid, replicas, frm, until in cuts:
        if until is None:
            unended += 1
            bad.append(f"cut {fid}: never ended")
            continue
        # Withheld: committed during the cut while some proxy of a cut-off
        # replica was connected (one that would have got it).
        withheld += any(frm < s and t < until and any(
            names[x["target"]] in replicas and x["connect"] < t
            and (x["end"] is None or x["end"] > t) for x in sessions) for s, t in commits)
        on = {}  # proxy -> the replica it is connected to (a reconnect may move it)
        for e in events:
            if e["kind"] != "fleet" or "target" not in e:
                continue
            on[e["p"]] = names[e["target"]]
            if not (e["ev"] in ("gen", "complete") and frm < e["t"] < until
                    and on[e["p"]] in replicas):
                continue
            g = e.get("gen")
            if g is not None and write_start.get(g, float("-inf")) > frm:
                bad.append(f"cut {fid} of {','.join(replicas)}: proxy {e['p']} got gen {g} "
                           f"{e['t'] - frm:.2f}s into the cut, written "
                           f"{write_start[g] - frm:.2f}s into it")
    desc = (f"{len(cuts)} cuts, {withheld} with a committed write withheld from a "
            f"connected proxy")
    if not withheld:
        bad.append("no write committed during any cut while a proxy of a cut-off replica "
                   "was connected: nothing was judged")
    return (False, f"{desc}; " + "; ".join(bad[:3])) if bad else (True, desc)


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
    ("restart_cut_off_serves_persisted", check_restart_persisted),
    ("served_written_configs", check_served_written),
    ("replicas_stopped_cleanly", check_stopped_cleanly),
    ("store_cut_effective", check_store_cut_effective),
]


def run_mode(events):
    """(store, leadership) as the run recorded them (etcd and leadership
    when it did not: runs before Kubernetes mode)."""
    run = by_kind(events, "run_start")
    r = run[0] if run else {}
    return r.get("store", "etcd"), r.get("leadership", True)


def not_judged(events):
    """{check: why} for the checks that do not apply to this run."""
    _, leadership = run_mode(events)
    out = {}
    if not leadership:
        out["leader_after_store"] = "no leader election in this run"
        out["fencing"] = "no leader election in this run (no status writer)"
    return out


def active_checks(events):
    skip = not_judged(events)
    return [(n, fn) for n, fn in CHECKS if n not in skip]


def evaluate(events):
    out = []
    for name, fn in active_checks(events):
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


def not_judged_rows(events):
    return "".join(f"\n| {n} | not judged | {why} |" for n, why in not_judged(events).items()
                   if n in {c for c, _ in CHECKS})


def results_table(results):
    lines = ["| check | result | detail |", "|---|---|---|"]
    for name, ok, detail in results:
        d = detail.replace("\n", " ").replace("|", "\\|")
        lines.append(f"| {name} | {'PASS' if ok else 'FAIL'} | {d[:600]} |")
    return "\n".join(lines)


# --- self-test: every check can fail -----------------------------------------

def _doctor(events):
    """(check name, what was doctored, doctored events), at least one per
    check; a case that does not apply to this history is left out."""
    out = []
    end_t = max(e["t"] for e in events)

    def add(name, what, evs):
        if evs is not None:
            out.append((name, what, sorted(evs, key=lambda e: e["t"])))

    add("runner_completed", "no run_end", [e for e in events if e["kind"] != "run_end"])
    add("no_replica_exited", "replica a exits",
        events + [{"t": end_t - 1, "kind": "replica_exit", "replica": "a", "pid": 1,
                   "code": 134, "log": "doctored"}])
    _doctor_config(events, add)
    _doctor_real(events, add)
    _doctor_converge(events, add)
    _doctor_store(events, add)
    _doctor_snapshot(events, add)
    _doctor_stops(events, add)
    _doctor_cuts(events, add)
    active = {n for n, _ in active_checks(events)}
    return [c for c in out if c[0] in active]


def _doctor_cuts(events, add):
    name = "store_cut_effective"
    add(name, "no cut recorded", [e for e in events if e["kind"] != "store_cut"])
    # A proxy of a cut-off replica gets a generation written during the cut.
    names = target_names(events)
    sessions = fleet_sessions(events)
    for fid, replicas, frm, until in store_cuts(events):
        if until is None:
            continue
        w = next((w for w in by_kind(events, "write") if w["ok"]
                  and frm < w.get("start", w["t"]) and w["t"] < until), None)
        t = (w["t"] + until) / 2 if w else None
        s = next((s for s in sessions if names[s["target"]] in replicas and s["connect"] < t
                  and (s["end"] is None or s["end"] > t)), None) if w else None
        if s is not None:
            add(name, f"proxy {s['p']} gets gen {w['gen']} during cut {fid}", events + [
                {"t": t, "kind": "fleet", "ev": "gen", "p": s["p"], "gen": w["gen"],
                 "target": s["target"]}])
            break
    # No proxy of a cut-off replica ever connected: no write withheld from one.
    cut_off = {r for _, replicas, _, _ in store_cuts(events) for r in replicas}
    gone = {s["p"] for s in sessions if names[s["target"]] in cut_off}
    add(name, "no proxy of a cut-off replica connected", [
        e for e in events if not (e["kind"] == "fleet" and e.get("p") in gone)])
    add(name, "no write committed during any cut", _replace(
        events, lambda e: e["kind"] == "write" and any(
            frm < e.get("start", e["t"]) and e["t"] < (u or float("inf"))
            for _, _, frm, u in store_cuts(events)),
        lambda e: dict(e, ok=False)))


def _replace(events, match, change):
    """A copy of events with change(e) (a dict, or None to drop) for each e
    that match(e)."""
    out = []
    for e in events:
        if match(e):
            e = change(copy.deepcopy(e))
        if e is not None:
            out.append(e)
    return out


def _doctor_config(events, add):
    # A complete session moved 2.5 s after its connection.
    tl = Timeline(events)
    names = target_names(events)
    s = next((s for s in fleet_sessions(events)
              if s["complete"] and tl.ready(names[s["target"]], s["connect"])), None)
    if s:
        add("proxy_config_1s", "a session complete 2.5 s after connecting", _replace(
            events, lambda e: e["kind"] == "fleet" and e["ev"] == "complete"
            and e["p"] == s["p"] and e["t"] == s["complete"],
            lambda e: dict(e, t=s["connect"] + 2.5)))
    delta = {e["p"] for e in events if e["kind"] == "fleet" and e.get("proto") == "delta"}
    if delta:
        add("proxy_config_1s", "no delta session ever connects", _replace(
            events, lambda e: e["kind"] == "fleet" and e.get("p") in delta, lambda e: None))


def _doctor_real(events, add):
    add("real_client_first_ok", "no successful RPC", _replace(
        events, lambda e: e["kind"] == "real_rpc" and e["line"].startswith("ok"),
        lambda e: None))
    ok_nodes = {e["node"] for e in by_kind(events, "real_rpc") if e["line"].startswith("ok")}
    stopped = [e for e in by_kind(events, "real_stopped") if e["node"] in ok_nodes]
    if stopped:
        node = stopped[0]["node"]
        add("real_client_first_ok", f"{node}, stopped by the runner, never succeeded",
            _replace(events, lambda e: e["kind"] == "real_rpc" and e["node"] == node
                     and e["line"].startswith("ok"), lambda e: None))
    # Its replica not ready when it starts, ready 0.5 s later; its first ok
    # 10 s past what gRPC C++ 1.51's recovery allows (was exempt wholesale).
    s = next((e for e in by_kind(events, "real_start") if e["node"] in ok_nodes), None)
    if s is None:
        return
    replica = target_names(events)[s["front"] % len(target_names(events))]
    late = 0.5 + CPP_FAILED_START_RECOVERY + CONFIG_BOUND + 10.0
    evs = _replace(events, lambda e: e["kind"] == "real_rpc" and e["node"] == s["node"]
                   and e["t"] < s["t"] + late, lambda e: None)
    base = Timeline(events).at(replica, s["t"] + 0.5) or {"up": True, "ready": True}
    evs += [{"t": s["t"] - 0.01, "kind": "obs", "replica": replica, "up": True,
             "ready": False},
            dict(base, t=s["t"] + 0.5, kind="obs", replica=replica, ready=True)]
    add("real_client_first_ok", f"{s['node']} started before its replica was ready, "
        f"first ok {late - 0.5:.0f} s after", evs)


def _doctor_converge(events, add):
    # One proxy never moves past the generation it had before the first heal.
    first_heal = by_kind(events, "fault_end")[0]["t"]
    victim = next(iter(proxies_started(events)))
    add("converged_after_heal", f"proxy {victim} stuck before the first heal", [
        e for e in events if not (e["kind"] == "fleet" and e.get("p") == victim
                                  and e["ev"] in ("gen", "complete") and e["t"] > first_heal - 60)])
    add("converged_after_heal", "a real client reaches the wrong backend after a heal",
        _wrong_backend(events))
    final = by_kind(events, "final_write")[0]["gen"]
    add("converged_final", f"proxy {victim} never holds the final generation", [
        e for e in events if not (e["kind"] == "fleet" and e.get("p") == victim
                                  and e.get("gen") == final)])


def _wrong_backend(events):
    """A real client running at a heal reaches, from the heal until the
    next fault, the backend the generation served at the end does not name."""
    starts = sorted(e["t"] for e in by_kind(events, "fault_start"))
    final = [e["t"] for e in by_kind(events, "final_write")]
    windows = served_windows(events)
    for h in by_kind(events, "fault_end"):
        nxt = min([t for t in starts if t > h["t"]] + final + [float("inf")])
        rpcs = [e for e in by_kind(events, "real_rpc") if h["t"] <= e["t"] < nxt
                and e["line"].startswith("ok ")]
        if not rpcs:
            continue
        node, last = rpcs[-1]["node"], rpcs[-1]
        right = {b for g, b, frm, until in windows if g >= h["committed"]
                 and frm <= last["t"] and until > last.get("since", last["t"]) - 1.0}
        if len(right) != 1:
            continue
        wrong = "beta" if right == {"alpha"} else "alpha"
        return _replace(events, lambda e: e["kind"] == "real_rpc" and e["node"] == node
                        and h["t"] <= e["t"] < nxt and e["line"].startswith("ok "),
                        lambda e: dict(e, line=f"ok {wrong}"))
    return None


def _doctor_store(events, add):
    end_t = max(e["t"] for e in events)
    if run_mode(events)[0] == "kube":
        add("fencing", "a status written under an ended Lease term", _stale_kube_write(events))
    else:
        _doctor_etcd_fencing(events, add)

    # Two replicas claim to lead from the first store heal to the end.
    h = next(h for h in by_kind(events, "fault_end") if h["fault"] in STORE_FAULTS)
    ev = [dict(e, is_leader=e["replica"] != "c", leader="a")
          if e["kind"] == "obs" and e["t"] >= h["t"] else e for e in events]
    for r in REPLICAS:
        ev.append({"t": h["t"], "kind": "obs", "replica": r, "up": True, "ready": True,
                   "is_leader": r != "c", "leader": "a", "term": 1})
    add("leader_after_store", "two leaders after a store heal", ev)
    victim = next(iter(proxies_started(events)))
    add("served_written_configs", "a proxy holds a generation never written",
        events + [{"t": end_t - 1, "kind": "fleet", "ev": "gen", "p": victim, "gen": 987654}])


def _doctor_etcd_fencing(events, add):
    end_t = max(e["t"] for e in events)
    # A status written under a term after that term's key was deleted.
    hist = by_kind(events, "etcd_event")
    ended = next((e for e in hist if e["key"].startswith("/election/")
                  and e["type"] == "DELETE"), None)
    ev = list(events)
    if ended:
        created = next(x for x in hist if x["key"] == ended["key"] and x["type"] == "PUT")
        ev.append({"t": end_t, "kind": "etcd_event", "key": "/status/Upstream/chaos/alpha",
                   "type": "PUT", "create_revision": 4, "mod_revision": ended["mod_revision"] + 1,
                   "value": json.dumps({"writer": created["value"],
                                        "term": created["create_revision"]})})
    add("fencing", "a status written under an ended term", ev)
    # The history's tail cut off: the last status write (and all after it)
    # not recorded, as a watch stopped early would leave it.
    summary = by_kind(events, "etcd_history")
    need = summary[-1].get("status_revision") if summary else None
    if need:
        add("fencing", f"the history truncated before revision {need}", [
            e for e in events if not (e["kind"] == "etcd_event" and e["mod_revision"] >= need)])
    add("fencing", "the status keys' last revision not recorded", _replace(
        events, lambda e: e["kind"] == "etcd_history",
        lambda e: {k: v for k, v in e.items() if k != "status_revision"}))


def _stale_kube_write(events):
    """After the last Lease version, a status written as the holder of the
    Lease term before it (or as a made-up one when there was one term)."""
    leases = [e for e in by_kind(events, "kube_event") if e["what"] == "lease"]
    objects = [e for e in by_kind(events, "kube_event") if e["what"] == "object"]
    if not leases or not objects:
        return events
    last = max(leases, key=lambda e: e["rev"])
    earlier = [e for e in leases if (e["holder"], e["term"]) != (last["holder"], last["term"])]
    old = max(earlier, key=lambda e: e["rev"]) if earlier else dict(last, term=last["term"] - 1)
    end = max(e["rev"] for e in by_kind(events, "kube_event"))
    return events + [dict(objects[-1], t=max(e["t"] for e in events), rev=end + 1,
                          status="doctored", writer={"replica": old["holder"],
                                                     "term": old["term"]})]


def _doctor_snapshot(events, add):
    end_t = max(e["t"] for e in events)
    name = "snapshot_never_corrupt"
    add(name, "a checksum mismatch reported", events + [{
        "t": end_t - 1, "kind": "obs", "replica": "b", "up": True, "ready": True,
        "serving": "persisted", "restore_error": "last-good.snapshot: checksum mismatch"}])
    add(name, "no final metrics", [e for e in events if e["kind"] != "final_metrics"])
    add(name, "the damaged counter renamed (no series)", _replace(
        events, lambda e: e["kind"] == "final_metrics", lambda e: dict(e, damaged=None)))
    add(name, "no restore_error field", _replace(
        events, lambda e: e["kind"] == "obs" and "restore_error" in e,
        lambda e: {k: v for k, v in e.items() if k != "restore_error"}))
    kills = fault_notes(events, "replica-kill")
    add(name, "no kill lands mid-write", _replace(
        events, lambda e: e["kind"] == "fault_note" and e["id"] in kills,
        lambda e: dict(e, during_snapshot_write=False)))
    add(name, "the file damaged after a kill", _replace(
        events, lambda e: e["kind"] == "fault_note" and e["id"] in kills,
        lambda e: dict(e, file_after_kill="damaged: checksum mismatch")))
    add("restart_cut_off_serves_persisted",
        "the restarted replica serves nothing until the store returns", _serves_nothing(events))


def _serves_nothing(events):
    """Each replica restarted while cut off is not ready until its store
    comes back; the proxies that connected meanwhile complete only then."""
    evs = list(events)
    names = target_names(events)
    for f, start, back in cut_off_restarts(events):
        if start is None or back is None:
            continue
        t0, r = start.get("exec", start["t"]), start["replica"]
        waiting = {s["p"] for s in fleet_sessions(events)
                   if names[s["target"]] == r and t0 <= s["connect"] < back}
        evs = _replace(evs, lambda e: e["kind"] == "obs" and e["replica"] == r
                       and t0 <= e["t"] < back and e.get("up"),
                       lambda e: dict(e, ready=False, serving="nothing"))
        evs = _replace(evs, lambda e: e["kind"] == "fleet" and e["ev"] == "complete"
                       and e["p"] in waiting and t0 <= e["t"] < back,
                       lambda e: dict(e, t=back + 0.1))
    return evs


def _doctor_stops(events, add):
    name = "replicas_stopped_cleanly"
    first = next((e for e in events if e["kind"] == "replica_stop"), None)
    if first is None:
        add(name, "(no replica_stop recorded)", events)
        return
    add(name, f"{first['replica']} killed after hanging on SIGTERM", _replace(
        events, lambda e: e is first, lambda e: dict(e, code=-9)))
    add(name, f"{first['replica']} never stopped", [e for e in events if e is not first])
    add(name, "a teardown problem", events + [{
        "t": max(e["t"] for e in events), "kind": "teardown_problem",
        "error": "holdfast-a exited with 1 after SIGTERM"}])


def self_test(events) -> int:
    failures = 0
    base = {n: ok for n, ok, _ in evaluate(events)}
    for name, what, doctored in _doctor(events):
        res = {n: (ok, d) for n, ok, d in evaluate(doctored)}
        caught = not res[name][0]
        if not caught:
            failures += 1
        print(f"{'ok  ' if caught else 'MISS'} doctored {name} ({what}): "
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
    print(results_table(results) + not_judged_rows(events))
    failed = [n for n, ok, _ in results if not ok]
    print()
    print(f"{len(results) - len(failed)}/{len(results)} checks passed"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
